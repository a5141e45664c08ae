// The dashboard's entry and shell: sign-in, the navigation, the website picker and the one realtime
// connection every page listens to. Pages are web components (page.js), loaded when first visited; routing
// is by path under /app/ (the server answers index.html for every one of them). Nothing imports this file.

import {get, realtime, session, signIn, signOut, whenSignedOut} from "./api.js";
import {errorBox, field, h, replace} from "./dom.js";

// label, module, element, and the least role that may use the page (none: every operator)
const PAGES = {
  inbox: ["Inbox", "./pages/inbox.js", "parley-inbox"],
  documents: ["Help documents", "./pages/documents.js", "parley-documents"],
  webhooks: ["Webhooks", "./pages/webhooks.js", "parley-webhooks", "admin"],
  keys: ["API keys", "./pages/keys.js", "parley-keys", "admin"],
  websites: ["Websites", "./pages/websites.js", "parley-websites", "admin"],
  campaigns: ["Campaigns", "./pages/campaigns.js", "parley-campaigns", "admin"],
  reports: ["Reports", "./pages/reports.js", "parley-reports"],
  audit: ["Audit log", "./pages/audit.js", "parley-audit", "admin"],
};
// owner ≥ admin ≥ agent, as the service ranks them (commands/principal.py)
const RANK = {agent: 0, admin: 1, owner: 2};

class ParleyApp extends HTMLElement {
  connectedCallback() {
    this.bus = new EventTarget(); // realtime events, by name, for whichever page listens
    whenSignedOut(() => this.showSignIn("Your session ended; sign in again."));
    addEventListener("popstate", () => this.route());
    this.addEventListener("click", (event) => {
      const link = event.target.closest("a[href^='/app/']");
      if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
      event.preventDefault();
      this.navigate(link.getAttribute("href"));
    });
    if (session.token) this.start();
    else this.showSignIn();
  }

  navigate(path, {replace: replacing = false} = {}) {
    if (path !== location.pathname + location.search) history[replacing ? "replaceState" : "pushState"](null, "", path);
    this.route();
  }

  showSignIn(notice) {
    this.stopRealtime?.();
    this.stopRealtime = null;
    this.me = null;
    if (location.pathname !== "/app/signin") history.replaceState(null, "", "/app/signin");
    const email = h("input", {type: "email", name: "email", autocomplete: "username", required: true});
    const password = h("input", {type: "password", name: "password", autocomplete: "current-password", required: true});
    const status = h("div", {"aria-live": "polite"}, notice && h("p", {class: "notice"}, notice));
    const form = h("form", {class: "signin card", onsubmit: async (event) => {
      event.preventDefault();
      form.querySelector("button").disabled = true;
      try {
        await signIn(email.value.trim(), password.value);
        password.value = "";
        history.replaceState(null, "", "/app/inbox");
        await this.start();
      } catch (error) {
        replace(status, errorBox(error.status === 401 ? "Unknown e-mail address or wrong password." : error));
        form.querySelector("button").disabled = false;
        password.focus();
      }
    }},
      h("h1", null, "Sign in to Parley"),
      field("E-mail", email), field("Password", password),
      h("button", {type: "submit"}, "Sign in"), status);
    replace(this, h("main", {class: "signin-page", id: "main"}, form));
    email.focus();
  }

  async start() {
    const [me, websites, operators] = await Promise.all([
      get("/api/operators/me"), get("/api/websites"), get("/api/operators")]);
    this.me = me;
    this.websites = websites;
    this.operators = operators;
    if (!websites.some((w) => w._id === session.website)) session.website = websites[0]?._id ?? "";
    this.renderShell();
    this.stopRealtime = realtime(
      (name, data) => this.bus.dispatchEvent(new CustomEvent(name, {detail: data})),
      (state) => this.liveState.replaceChildren(state === "open" ? "Live" : "Reconnecting…"));
    if (location.pathname === "/app/" || location.pathname === "/app" || location.pathname === "/app/signin") {
      history.replaceState(null, "", "/app/inbox");
    }
    this.route();
  }

  /** Whether the signed-in operator's role is `wanted` or above it. */
  hasRole(wanted) { return (RANK[this.me?.role] ?? -1) >= RANK[wanted]; }

  get website() { return this.websites.find((w) => w._id === session.website) ?? null; }

  async reloadWebsites() {
    this.websites = await get("/api/websites");
    if (!this.website) session.website = this.websites[0]?._id ?? ""; // the workspace's first website
    this.fillPicker();
  }

  fillPicker() {
    replace(this.picker, this.websites.map((w) => h("option", {value: w._id}, w.websiteName)));
    this.picker.value = session.website;
  }

  renderShell() {
    this.picker = h("select", {id: "website-picker", onchange: () => {
      session.website = this.picker.value;
      this.route();
    }});
    this.fillPicker();
    this.liveState = h("span", {class: "live", "aria-live": "polite"});
    const usable = Object.entries(PAGES).filter(([, [, , , role]]) => !role || this.hasRole(role));
    this.nav = h("nav", {"aria-label": "Main"}, h("ul", null, usable.map(([key, [label]]) =>
      h("li", null, h("a", {href: `/app/${key}`, "data-page": key}, label)))));
    this.outlet = h("main", {id: "main", tabindex: "-1"});
    replace(this,
      h("a", {class: "skip", href: "#main", onclick: (e) => { e.preventDefault(); this.outlet.focus(); }}, "Skip to content"),
      h("header", {class: "top"},
        h("a", {class: "brand", href: "/app/inbox"}, "Parley"),
        h("label", {class: "picker"}, h("span", {class: "visually-hidden"}, "Website"), this.picker),
        this.liveState,
        h("span", {class: "me", title: `${this.me.email} (${this.me.role})`}, this.me.displayName ?? this.me.email),
        h("button", {type: "button", class: "secondary", id: "sign-out", onclick: async () => {
          await signOut().catch(() => {});
          this.showSignIn("You are signed out.");
        }}, "Sign out")),
      this.nav, this.outlet);
  }

  async route() {
    if (!this.me) return;
    const [, , key = "inbox", ...rest] = location.pathname.split("/");
    const page = PAGES[key] ?? PAGES.inbox;
    for (const link of this.nav.querySelectorAll("a")) {
      if (link.dataset.page === key) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    document.title = `${page[0]} · Parley`;
    if (page[3] && !this.hasRole(page[3])) { // opened by its address: say so rather than fail its requests
      replace(this.outlet, h("section", {class: "card role-refused"}, h("h1", null, page[0]),
        h("p", null, `Your role (${this.me.role}) cannot use ${page[0]}: ask an admin or an owner of the organization.`)));
      return;
    }
    await import(page[1]);
    let element = this.outlet.firstElementChild;
    if (element?.localName !== page[2]) {
      element = document.createElement(page[2]);
      element.app = this;
      replace(this.outlet, element);
    }
    element.show(rest, new URLSearchParams(location.search));
  }
}

customElements.define("parley-app", ParleyApp);
