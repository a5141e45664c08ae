// The dashboard's entry and shell: sign-in, the navigation, the website picker and the one realtime
// connection every page listens to. Pages are web components (page.js), loaded when first visited; routing
// is by path under /app/ (the server answers index.html for every one of them). Nothing imports this file.

import {get, realtime, session, signIn, signOut, whenSignedOut} from "./api.js";
import {availabilityControl} from "./availability.js";
import {errorBox, field, h, replace} from "./dom.js";
import {NotificationCentre} from "./notifications.js";
import {inviteForm, keep, resetForm, setupForm} from "./welcome.js";

// label, module, element, and the least role that may use the page (none: every operator)
const PAGES = {
  inbox: ["Inbox", "./pages/inbox.js", "parley-inbox"],
  documents: ["Help documents", "./pages/documents.js", "parley-documents"],
  cannedresponses: ["Canned responses", "./pages/cannedresponses.js", "parley-cannedresponses"],
  webhooks: ["Webhooks", "./pages/webhooks.js", "parley-webhooks", "admin"],
  keys: ["API keys", "./pages/keys.js", "parley-keys", "admin"],
  websites: ["Websites", "./pages/websites.js", "parley-websites", "admin"],
  campaigns: ["Campaigns", "./pages/campaigns.js", "parley-campaigns", "admin"],
  reports: ["Reports", "./pages/reports.js", "parley-reports"],
  audit: ["Audit log", "./pages/audit.js", "parley-audit", "admin"],
  organization: ["Organization", "./pages/organization.js", "parley-organization", "owner"],
  operators: ["Operators", "./pages/operators.js", "parley-operators", "admin"],
  workflow: ["Teams and labels", "./pages/workflow.js", "parley-workflow", "admin"],
};
// every operator's own, opened from its name in the header rather than the navigation; the one page of an
// operator who must enrol in two-factor sign-in (the organization requires it) until they have
const PROFILE = ["Profile", "./pages/profile.js", "parley-profile"];
// the results of the header's search box, opened from it rather than the navigation
const SEARCH = ["Search", "./pages/search.js", "parley-search"];
// every operator's notifications and their channels, opened from the notification centre (notifications.js)
const NOTIFICATIONS = ["Notifications", "./pages/notifications.js", "parley-notifications"];
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
    const link = location.hash.match(/^#\/(invite|reset)\/([^/]+)$/); // an invitation's or a reset's link
    const landed = singleSignOnLanding();
    if (link) this.showLink(link[1], decodeURIComponent(link[2]));
    else if (session.token) this.start();
    else this.showSignIn(landed.error && new Error(`Single sign-on failed: ${landed.error}.`));
  }

  /** The page of an invitation or a password reset link; then the dashboard, or sign-in. */
  showLink(kind, token) {
    this.stopRealtime?.();
    this.availability?.stop();
    this.availability = null;
    this.me = null;
    const done = (signedIn, notice) => {
      history.replaceState(null, "", signedIn ? "/app/inbox" : "/app/signin");
      if (!signedIn) return this.showSignIn(notice);
      keep(signedIn);
      return this.start();
    };
    document.title = `${kind === "invite" ? "Invitation" : "New password"} · Parley`;
    const shown = (kind === "invite" ? inviteForm : resetForm)(token, done);
    replace(this, h("main", {class: "signin-page", id: "main"}, shown));
    shown.querySelector("input").focus();
  }

  navigate(path, {replace: replacing = false} = {}) {
    if (path !== location.pathname + location.search) history[replacing ? "replaceState" : "pushState"](null, "", path);
    this.route();
  }

  showSignIn(notice) {
    this.stopRealtime?.();
    this.stopRealtime = null;
    this.availability?.stop();
    this.availability = null;
    this.me = null;
    if (location.pathname !== "/app/signin") history.replaceState(null, "", "/app/signin");
    const email = h("input", {type: "email", name: "email", autocomplete: "username", required: true});
    const password = h("input", {type: "password", name: "password", autocomplete: "current-password", required: true});
    // shown once the server says the operator has two-factor sign-in on
    const code = h("input", {name: "totp", autocomplete: "one-time-code", inputmode: "numeric", spellcheck: "false"});
    const codeField = field("Two-factor code", code, "From your authenticator app, or one of your recovery codes.");
    codeField.hidden = true;
    const status = h("div", {"aria-live": "polite"},
      notice instanceof Error ? errorBox(notice) : notice && h("p", {class: "notice"}, notice));
    const sso = h("div", {class: "sso", "aria-live": "polite"});
    // a sign-in link naming the organization: /app/signin?org=<organization id>
    const organization = new URLSearchParams(location.search).get("org");
    let asked = "";
    const offerSingleSignOn = async (params) => { // "Sign in with …" when the organization has SSO enabled
      const key = new URLSearchParams(params).toString();
      if (key === asked) return;
      asked = key;
      const found = await get("/api/sso/discover", params).catch(() => null);
      if (key !== asked) return; // a later address was typed meanwhile
      replace(sso, found && h("a", {class: "button", href: found.startUrl, id: "sso-sign-in"},
        `Sign in with ${found.buttonLabel}`));
    };
    email.addEventListener("input", () => {
      const domain = email.value.includes("@") ? email.value.split("@").pop().trim() : "";
      if (domain.includes(".")) offerSingleSignOn({email: email.value.trim()});
      else if (!organization) replace(sso);
    });
    if (organization) offerSingleSignOn({organizationId: organization});
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
      h("button", {type: "submit"}, "Sign in"), sso, status);
    replace(this, h("main", {class: "signin-page", id: "main"}, form));
    email.focus();
    this.offerSetup();
  }

  /** A fresh install (no operator yet) offers to create its first owner instead of signing in. */
  async offerSetup() {
    const state = await get("/api/setup").catch(() => null);
    if (!state?.available || this.me) return;
    const shown = setupForm(state, (token) => {
      keep(token);
      history.replaceState(null, "", "/app/inbox");
      return this.start();
    });
    replace(this, h("main", {class: "signin-page", id: "main"}, shown));
    shown.querySelector("input").focus();
  }

  async start() {
    // all four at once: an operator who must enrol first is refused the lists (403), and does not use them
    const lists = Promise.all([get("/api/websites"), get("/api/operators")]);
    lists.catch(() => {});
    const [me, twoFactor] = await Promise.all([get("/api/operators/me"), get("/api/operators/me/totp")]);
    // the organization requires two-factor sign-in and this operator has none: their profile alone, to enrol
    this.enrolOnly = twoFactor.required && !twoFactor.enrolled;
    if (this.enrolOnly) {
      this.me = me;
      this.websites = [];
      this.operators = [];
      this.renderShell();
      history.replaceState(null, "", "/app/profile");
      this.route();
      return;
    }
    const [websites, operators] = await lists;
    this.me = me;
    this.websites = websites;
    this.operators = operators;
    if (!websites.some((w) => w._id === session.website)) session.website = websites[0]?._id ?? "";
    this.renderShell();
    let shown = false, live = false; // the first page is on screen; the stream has opened
    this.stopRealtime = realtime(
      (name, data) => this.bus.dispatchEvent(new CustomEvent(name, {detail: data})),
      (state) => {
        this.liveState.replaceChildren(state === "open" ? "Live" : "Reconnecting…");
        live ||= state === "open";
        // what came while away: notification frames are not replayed (the first read waits for the page)
        if (state === "open" && shown) this.centre.refresh();
      });
    if (location.pathname === "/app/" || location.pathname === "/app" || location.pathname === "/app/signin") {
      history.replaceState(null, "", "/app/inbox");
    }
    // what the first page does not need comes after it, rather than queued with its reads at the server
    await this.route().catch(() => {});
    shown = true;
    this.availability.start(me._id).catch(() => {});
    if (live) this.centre.refresh(); // else once the stream opens
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
    this.centre = this.enrolOnly ? null : new NotificationCentre(this);
    this.availability?.stop();
    this.availability = this.enrolOnly ? null : availabilityControl(this.bus);
    const usable = this.enrolOnly ? [["profile", PROFILE]]
      : Object.entries(PAGES).filter(([, [, , , role]]) => !role || this.hasRole(role));
    this.nav = h("nav", {"aria-label": "Main"}, h("ul", null, usable.map(([key, [label]]) =>
      h("li", null, h("a", {href: `/app/${key}`, "data-page": key}, label)))));
    this.outlet = h("main", {id: "main", tabindex: "-1"});
    replace(this,
      h("a", {class: "skip", href: "#main", onclick: (e) => { e.preventDefault(); this.outlet.focus(); }}, "Skip to content"),
      h("header", {class: "top"},
        h("a", {class: "brand", href: "/app/inbox"}, "Parley"),
        h("label", {class: "picker"}, h("span", {class: "visually-hidden"}, "Website"), this.picker),
        this.enrolOnly ? null : this.searchForm(),
        this.liveState,
        this.centre?.element,
        this.availability,
        h("a", {class: "me", href: "/app/profile", title: `${this.me.email} (${this.me.role}): your profile`},
          this.me.displayName ?? this.me.email),
        h("button", {type: "button", class: "secondary", id: "sign-out", onclick: async () => {
          await signOut().catch(() => {});
          this.showSignIn("You are signed out.");
        }}, "Sign out")),
      this.nav, this.outlet);
  }

  /** The one search box: across the organization's conversations, messages, notes and customers. */
  searchForm() {
    this.searchBox = h("input", {type: "search", id: "search-box", name: "q", autocomplete: "off",
      placeholder: "Search conversations", "aria-label": "Search conversations", onkeydown: (event) => {
        if (event.key !== "ArrowDown") return; // down from the box to the first result
        const first = this.outlet.querySelector(".search-results a");
        if (first) { event.preventDefault(); first.focus(); }
      }});
    return h("form", {role: "search", "aria-label": "Conversations", class: "search-form", onsubmit: (event) => {
      event.preventDefault();
      const q = this.searchBox.value.trim();
      if (q) this.navigate(`/app/search?${new URLSearchParams({q})}`);
    }}, this.searchBox);
  }

  async route() {
    if (!this.me) return;
    const [, , key = "inbox", ...rest] = location.pathname.split("/");
    const page = key === "profile" || this.enrolOnly ? PROFILE : key === "search" ? SEARCH
      : key === "notifications" ? NOTIFICATIONS : PAGES[key] ?? PAGES.inbox;
    if (key === "search" && this.searchBox) this.searchBox.value = new URLSearchParams(location.search).get("q") ?? "";
    for (const link of this.nav.querySelectorAll("a")) {
      if (link.dataset.page === key) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    this.pageTitle = `${page[0]} · Parley`;
    if (this.centre) this.centre.applyTitle();
    else document.title = this.pageTitle;
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
    await element.show(rest, new URLSearchParams(location.search));
  }
}

/**
 * Where single sign-on lands (readapi/routes/sso.py): `/app/#sso-token=<token>` or `#sso-error=<why>`. The
 * fragment never reaches a server; the token is stored like a password sign-in's and the fragment is
 * stripped from the address (and so from the history) at once. Answers {error} when it failed.
 */
function singleSignOnLanding() {
  const found = new URLSearchParams(location.hash.slice(1));
  if (!found.has("sso-token") && !found.has("sso-error")) return {};
  history.replaceState(null, "", location.pathname + location.search);
  if (found.get("sso-token")) session.token = found.get("sso-token");
  return {error: found.get("sso-error")};
}

customElements.define("parley-app", ParleyApp);
