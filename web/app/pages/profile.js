// The signed-in operator's own profile: the display name, the password (the current one required; the other
// sessions end), two-factor sign-in, and the sessions, each with its browser and last use, each revocable.
// Two-factor sign-in: enrol with the QR code the service draws (an SVG, shown as an image: never parsed into
// the page) or the key typed by hand, confirm with a code, see the ten recovery codes once; turn it off with
// a code.

import {api, get, signOut} from "../api.js";
import {Page} from "../page.js";
import {copyButton, errorBox, field, h, replace, time} from "../dom.js";

const grouped = (secret) => secret.match(/.{1,4}/g).join(" ");

function codeInput(id) {
  return h("input", {id, name: "code", autocomplete: "one-time-code", inputmode: "numeric", spellcheck: "false",
                     required: true, maxlength: "64"});
}

class ParleyProfile extends Page {
  async show() {
    this.status = await get("/api/operators/me/totp");
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
    this.twoFactor = h("section", {class: "card stack", "aria-labelledby": "two-factor-title"});
    replace(this, h("h1", null, "Profile"), h("p", null, `${me.email} · ${me.role}`),
      this.app.enrolOnly && h("p", {class: "notice", role: "status"},
        "Your organization requires two-factor sign-in: turn it on to use the dashboard."),
      this.app.enrolOnly && this.twoFactor, nameForm, passwordForm, !this.app.enrolOnly && this.twoFactor,
      h("h2", null, "Sessions"), this.sessions);
    this.showTwoFactor();
    this.load();
    this.dataset.ready = "";
  }

  showTwoFactor(message) {
    const title = h("h2", {id: "two-factor-title", tabindex: "-1"}, "Two-factor sign-in");
    if (!this.status.enrolled) {
      replace(this.twoFactor, title,
        h("p", null, "Sign-in will also ask for a code from an authenticator app on your phone."),
        message, h("button", {type: "button", id: "totp-start", onclick: () => this.enrol()}, "Turn on two-factor sign-in"));
      return;
    }
    const code = codeInput("totp-off-code");
    const status = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        this.status = await api("DELETE", "/api/operators/me/totp", {code: code.value.trim()});
        this.showTwoFactor();
        this.querySelector("#two-factor-title").focus();
      } catch (error) {
        replace(status, errorBox(error));
        code.focus();
      }
    }}, field("Code from your app, or a recovery code", code),
      h("button", {type: "submit", class: "danger"}, "Turn off two-factor sign-in"), status);
    replace(this.twoFactor, title, h("p", {class: "status-ok"}, "On: sign-in asks for a code from your app."),
      message, form);
  }

  async enrol() {
    let enrolment;
    try {
      enrolment = await api("POST", "/api/operators/me/totp");
    } catch (error) {
      this.showTwoFactor(errorBox(error));
      return;
    }
    const qr = h("img", {class: "qr", alt: "QR code holding your two-factor key", width: "200", height: "200",
                         src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(enrolment.qrSvg)}`});
    const code = codeInput("totp-code");
    const status = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const {recoveryCodes} = await api("POST", "/api/operators/me/totp/confirm", {code: code.value.trim()});
        this.status = {...this.status, enrolled: true};
        this.showRecoveryCodes(recoveryCodes);
      } catch (error) {
        replace(status, errorBox(error));
        code.focus();
      }
    }}, field("Code shown by the app", code, "Six digits; a new one every 30 seconds."),
      h("button", {type: "submit", id: "totp-confirm"}, "Confirm"), status);
    replace(this.twoFactor, h("h2", {id: "two-factor-title", tabindex: "-1"}, "Turn on two-factor sign-in"),
      h("ol", {class: "steps"},
        h("li", null, "Scan this QR code with an authenticator app (1Password, Google Authenticator, Aegis…):",
          h("div", null, qr)),
        h("li", null, "Or type this key into the app: ",
          h("code", {class: "secret-value", id: "totp-secret", tabindex: "0"}, grouped(enrolment.secret)), " ",
          copyButton(enrolment.secret, "Copy key")),
        h("li", null, "Type the code the app shows:")),
      form);
    code.focus();
  }

  showRecoveryCodes(codes) {
    const done = h("button", {type: "button", id: "totp-done", onclick: async () => {
      if (this.app.enrolOnly) {  // the dashboard was limited to enrolling: it opens in full now
        history.replaceState(null, "", "/app/inbox");
        await this.app.start();
        return;
      }
      this.showTwoFactor();
      this.querySelector("#two-factor-title").focus();
    }}, "Done");
    const heading = h("h2", {id: "two-factor-title", tabindex: "-1"}, "Two-factor sign-in is on");
    replace(this.twoFactor, heading,
      h("div", {class: "secret", role: "status"},
        h("p", null, h("strong", null, "Your recovery codes."),
          " Each signs you in once in place of a code, should you lose your phone. Keep them somewhere safe: ",
          "they will not be shown again."),
        h("ol", {class: "recovery-codes"}, codes.map((code) => h("li", null, h("code", null, code)))),
        copyButton(codes.join("\n"), "Copy the codes")),
      done);
    heading.focus();
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
