// Profile: the operator's own account. Two-factor sign-in: enrol with the QR code the service draws (an SVG,
// shown as an image: never parsed into the page) or the key typed by hand, confirm with a code, see the ten
// recovery codes once; turn it off with a code. And the organization's requirement of it.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {copyButton, errorBox, field, h, replace} from "../dom.js";

const grouped = (secret) => secret.match(/.{1,4}/g).join(" ");

function codeInput(id) {
  return h("input", {id, name: "code", autocomplete: "one-time-code", inputmode: "numeric", spellcheck: "false",
                     required: true, maxlength: "64"});
}

class ParleyProfile extends Page {
  async show() {
    this.status = await get("/api/operators/me/totp");
    this.render();
    this.dataset.ready = "";
  }

  get enrolling() { return this.status.required && !this.status.enrolled; }

  render() {
    this.twoFactor = h("section", {class: "card stack", "aria-labelledby": "two-factor-title"});
    replace(this, h("h1", null, "Profile"),
      h("p", null, "Signed in as ", h("strong", null, this.app.me.email), "."),
      this.enrolling && h("p", {class: "notice", role: "status"},
        "Your organization requires two-factor sign-in: turn it on to use the dashboard."),
      this.twoFactor,
      !this.enrolling && this.organizationCard());
    this.showTwoFactor();
  }

  showTwoFactor(message) {
    const title = h("h2", {id: "two-factor-title", tabindex: "-1"}, "Two-factor sign-in");
    if (!this.status.enrolled) {
      replace(this.twoFactor, title,
        h("p", null, "Sign-in will also ask for a code from an authenticator app on your phone."),
        message, h("button", {type: "button", id: "totp-start", onclick: () => this.start()}, "Turn on two-factor sign-in"));
      return;
    }
    const code = codeInput("totp-off-code");
    const status = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        this.status = await api("DELETE", "/api/operators/me/totp", {code: code.value.trim()});
        this.render();
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

  async start() {
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
      if (!this.app.pages.inbox) {  // the dashboard was limited to enrolling: it opens in full now
        history.replaceState(null, "", "/app/inbox");
        await this.app.start();
        return;
      }
      this.render();
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

  organizationCard() {
    const require = h("input", {type: "checkbox", id: "require-two-factor", checked: this.status.required});
    const status = h("div", {"aria-live": "polite"});
    return h("form", {class: "card stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const saved = await api("PUT", "/api/organization/security", {requireTwoFactor: require.checked});
        this.status = {...this.status, required: saved.requireTwoFactor};
        replace(status, h("p", {class: "notice"}, saved.requireTwoFactor
          ? "Every operator now needs two-factor sign-in; those without it are asked to turn it on."
          : "Two-factor sign-in is up to each operator."));
      } catch (error) {
        require.checked = this.status.required;
        replace(status, errorBox(error));
      }
    }},
      h("h2", null, "Organization"),
      h("label", null, require, " Require two-factor sign-in for every operator of this organization"),
      h("button", {type: "submit", class: "secondary"}, "Save"), status);
  }
}

customElements.define("parley-profile", ParleyProfile);
