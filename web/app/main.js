// The dashboard's entry and shell: sign-in, the navigation, the website picker and the one realtime
// connection every page listens to. Pages are web components (page.js), loaded when first visited; routing
// is by path under /app/ (the server answers index.html for every one of them). Nothing imports this file.

import {get, realtime, session, signIn, signOut, whenSignedOut} from "./api.js";
import {errorBox, field, h, replace} from "./dom.js";

const PAGES = {
  inbox: ["Inbox", "./pages/inbox.js", "parley-inbox"],
  documents: ["Help documents", "./pages/documents.js", "parley-documents"],
  webhooks: ["Webhooks", "./pages/webhooks.js", "parley-webhooks"],
  keys: ["API keys", "./pages/keys.js", "parley-keys"],
  websites: ["Websites", "./pages/websites.js", "parley-websites"],
  campaigns: ["Campaigns", "./pages/campaigns.js", "parley-campaigns"],
  reports: ["Reports", "./pages/reports.js", "parley-reports"],
  profile: ["Profile", "./pages/profile.js", "parley-profile"],
};
// What an operator who must enrol in two-factor sign-in (the organization requires it) may open until then.
const ENROLLING = {profile: PAGES.profile};

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
    // shown once the server says the operator has two-factor sign-in on
    const code = h("input", {name: "totp", autocomplete: "one-time-code", inputmode: "numeric", spellcheck: "false"});
    const codeField = field("Two-factor code", code, "From your authenticator app, or one of your recovery codes.");
    codeField.hidden = true;
    const status = h("div", {"aria-live": "polite"}, notice && h("p", {class: "notice"}, notice));
    const form = h("form", {class: "signin card", onsubmit: async (event) => {
      event.preventDefault();
      form.querySelector("button").disabled = true;
      try {
        await signIn(email.value.trim(), password.value, codeField.hidden ? undefined : code.value.trim());
        password.value = "";
        history.replaceState(null, "", "/app/inbox");
        await this.start();
      } catch (error) {
        form.querySelector("button").disabled = false;
        if (error.is?.("two-factor-required")) {
          const asked = codeField.hidden;
          codeField.hidden = false;
          code.required = true;
          code.value = "";
          replace(status, asked ? h("p", {class: "notice"}, "Enter the code from your authenticator app.")
                                : errorBox("Wrong code, or a code already used. Try the current one."));
          code.focus();
          return;
        }
        replace(status, errorBox(error.status === 401 ? "Unknown e-mail address or wrong password." : error));
        password.focus();
      }
    }},
      h("h1", null, "Sign in to Parley"),
      field("E-mail", email), field("Password", password), codeField,
      h("button", {type: "submit"}, "Sign in"), status);
    replace(this, h("main", {class: "signin-page", id: "main"}, form));
    email.focus();
  }

  async start() {
    const [me, twoFactor] = await Promise.all([get("/api/operators/me"), get("/api/operators/me/totp")]);
    // the organization requires two-factor sign-in and this operator has none: their profile alone, to enrol
    this.pages = twoFactor.required && !twoFactor.enrolled ? ENROLLING : PAGES;
    if (this.pages === ENROLLING) {
      this.me = me;
      this.websites = [];
      this.operators = [];
      this.renderShell();
      history.replaceState(null, "", "/app/profile");
      this.route();
      return;
    }
    const [websites, operators] = await Promise.all([get("/api/websites"), get("/api/operators")]);
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
    this.nav = h("nav", {"aria-label": "Main"}, h("ul", null, Object.entries(this.pages).map(([key, [label]]) =>
      h("li", null, h("a", {href: `/app/${key}`, "data-page": key}, label)))));
    this.outlet = h("main", {id: "main", tabindex: "-1"});
    replace(this,
      h("a", {class: "skip", href: "#main", onclick: (e) => { e.preventDefault(); this.outlet.focus(); }}, "Skip to content"),
      h("header", {class: "top"},
        h("a", {class: "brand", href: "/app/inbox"}, "Parley"),
        h("label", {class: "picker"}, h("span", {class: "visually-hidden"}, "Website"), this.picker),
        this.liveState,
        h("a", {class: "me", href: "/app/profile"}, this.me.email),
        h("button", {type: "button", class: "secondary", id: "sign-out", onclick: async () => {
          await signOut().catch(() => {});
          this.showSignIn("You are signed out.");
        }}, "Sign out")),
      this.nav, this.outlet);
  }

  async route() {
    if (!this.me) return;
    const [, , key = "inbox", ...rest] = location.pathname.split("/");
    const page = this.pages[key] ?? Object.values(this.pages)[0];
    for (const link of this.nav.querySelectorAll("a")) {
      if (link.dataset.page === key) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    document.title = `${page[0]} · Parley`;
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
