// Two-factor sign-in on the signed-in operator's profile: enrol with the QR code the service draws (an SVG,
// shown as an image: never parsed into the page) or the key typed by hand, confirm with a code, see the ten
// recovery codes once; turn it off with a code. An operator whose organization requires it and who has none
// sees this alone (main.js's `enrolOnly`) until they confirm.

import {api} from "../api.js";
import {copyButton, errorBox, field, h, replace} from "../dom.js";

const grouped = (secret) => secret.match(/.{1,4}/g).join(" ");

function codeInput(id) {
  return h("input", {id, name: "code", autocomplete: "one-time-code", inputmode: "numeric", spellcheck: "false",
                     required: true, maxlength: "64"});
}

/** The section, for `status` (`GET /api/operators/me/totp`: {enrolled, required}). */
export function twoFactorSection(app, status) {
  const section = new TwoFactor(app, status);
  section.show();
  return section.section;
}

class TwoFactor {
  constructor(app, status) {
    this.app = app;
    this.status = status;
    this.section = h("section", {class: "card stack", "aria-labelledby": "two-factor-title"});
  }

  show(message) {
    const title = h("h2", {id: "two-factor-title", tabindex: "-1"}, "Two-factor sign-in");
    if (!this.status.enrolled) {
      replace(this.section, title,
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
        this.show();
        this.section.querySelector("#two-factor-title").focus();
      } catch (error) {
        replace(status, errorBox(error));
        code.focus();
      }
    }}, field("Code from your app, or a recovery code", code),
      h("button", {type: "submit", class: "danger"}, "Turn off two-factor sign-in"), status);
    replace(this.section, title, h("p", {class: "status-ok"}, "On: sign-in asks for a code from your app."),
      message, form);
  }

  async enrol() {
    let enrolment;
    try {
      enrolment = await api("POST", "/api/operators/me/totp");
    } catch (error) {
      this.show(errorBox(error));
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
    replace(this.section, h("h2", {id: "two-factor-title", tabindex: "-1"}, "Turn on two-factor sign-in"),
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
      this.show();
      this.section.querySelector("#two-factor-title").focus();
    }}, "Done");
    const heading = h("h2", {id: "two-factor-title", tabindex: "-1"}, "Two-factor sign-in is on");
    replace(this.section, heading,
      h("div", {class: "secret", role: "status"},
        h("p", null, h("strong", null, "Your recovery codes."),
          " Each signs you in once in place of a code, should you lose your phone. Keep them somewhere safe: ",
          "they will not be shown again."),
        h("ol", {class: "recovery-codes"}, codes.map((code) => h("li", null, h("code", null, code)))),
        copyButton(codes.join("\n"), "Copy the codes")),
      done);
    heading.focus();
  }
}
