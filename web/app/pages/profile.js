// The signed-in operator's own profile: the display name, the avatar (its own module), the password (the
// current one required; the other sessions end), two-factor sign-in (its own module), and the sessions, each
// with its browser and last use, each revocable.

import {api, get, signOut} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, time} from "../dom.js";
import {avatarSection} from "./profile-avatar.js";
import {twoFactorSection} from "./profile-two-factor.js";

class ParleyProfile extends Page {
  async show() {
    const twoFactor = twoFactorSection(this.app, await get("/api/operators/me/totp"));
    const me = this.app.me;
    const name = h("input", {id: "profile-name", maxlength: "100", value: me.displayName ?? "", autocomplete: "name"});
    const nameStatus = h("div", {"aria-live": "polite"});
    const nameForm = h("form", {class: "card stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        this.app.me = await api("PATCH", "/api/operators/me", {displayName: name.value.trim() || null});
        replace(nameStatus, h("p", {class: "notice"}, "Saved."));
      } catch (error) {
        replace(nameStatus, errorBox(error));
      }
    }}, h("h2", null, "Name"), field("Display name", name, "What visitors and your team see."),
      h("button", {type: "submit"}, "Save"), nameStatus);

    const current = h("input", {id: "current-password", type: "password", autocomplete: "current-password", required: true});
    const next = h("input", {id: "new-password", type: "password", autocomplete: "new-password", required: true, minlength: "10"});
    const passwordStatus = h("div", {"aria-live": "polite"});
    const passwordForm = h("form", {class: "card stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        await api("PUT", "/api/operators/me/password", {currentPassword: current.value, newPassword: next.value});
        passwordForm.reset();
        replace(passwordStatus, h("p", {class: "notice"}, "Password changed: your other sessions are signed out."));
        this.load();
      } catch (error) {
        replace(passwordStatus, errorBox(error));
      }
    }}, h("h2", null, "Password"), field("Current password", current),
      field("New password", next, "At least 10 characters."), h("button", {type: "submit"}, "Change password"),
      passwordStatus);

    this.sessions = h("div");
    const enrolOnly = this.app.enrolOnly;
    replace(this, h("h1", null, "Profile"), h("p", null, `${me.email} · ${me.role}`),
      enrolOnly && h("p", {class: "notice", role: "status"},
        "Your organization requires two-factor sign-in: turn it on to use the dashboard."),
      enrolOnly && twoFactor, nameForm, avatarSection(this.app), passwordForm, !enrolOnly && twoFactor,
      h("h2", null, "Sessions"), this.sessions);
    this.load();
    this.dataset.ready = "";
  }

  async load() {
    const sessions = await get("/api/operators/me/sessions");
    replace(this.sessions, h("table", null,
      h("thead", null, h("tr", null, ["Browser or client", "Signed in", "Last used", ""].map((t) => h("th", {scope: "col"}, t)))),
      h("tbody", null, sessions.map((s) => h("tr", {"data-id": s._id},
        h("td", null, s.userAgent ?? "unknown", s.current ? h("strong", null, " (this session)") : ""),
        h("td", null, s.createdAt ? time(s.createdAt) : "—"), h("td", null, s.lastUsedAt ? time(s.lastUsedAt) : "—"),
        h("td", null, h("button", {type: "button", class: "danger", onclick: async () => {
          if (s.current) {
            await signOut().catch(() => {});
            location.assign("/app/signin");
            return;
          }
          await api("DELETE", `/api/operators/me/sessions/${s._id}`);
          this.load();
        }}, s.current ? "Sign out" : "End session")))))));
  }
}

customElements.define("parley-profile", ParleyProfile);
