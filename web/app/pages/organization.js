// The organization's own settings (owners): single sign-on with an OpenID Connect provider (the client
// secret is write-only: the page never receives it, and a save with the field empty keeps the stored one),
// and whether every operator needs two-factor sign-in.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace} from "../dom.js";

class ParleyOrganization extends Page {
  async show() {
    replace(this, h("h1", null, "Organization"), h("p", {class: "empty"}, "Loading…"));
    try {
      const [current, session, twoFactor] = await Promise.all([
        get("/api/organization/sso").catch((error) => { if (error.status === 404) return null; throw error; }),
        get("/api/operators/sessions/current"), get("/api/operators/me/totp")]);
      this.organizationId = session.organizationId;
      this.twoFactorRequired = twoFactor.required;
      this.render(current);
    } catch (error) {
      replace(this, h("h1", null, "Organization"), errorBox(error));
    }
  }

  render(current) {
    const issuer = h("input", {id: "sso-issuer", type: "url", required: true, value: current?.issuer ?? "",
                               placeholder: "https://login.example.com"});
    const clientId = h("input", {id: "sso-client-id", required: true, value: current?.clientId ?? "",
                                 autocomplete: "off"});
    const clientSecret = h("input", {id: "sso-client-secret", type: "password", autocomplete: "new-password",
                                     required: !current?.clientSecretSet,
                                     placeholder: current?.clientSecretSet ? "stored (leave empty to keep it)" : ""});
    const domains = h("input", {id: "sso-domains", value: (current?.allowedDomains ?? []).join(", "),
                                placeholder: "example.com, example.org"});
    const role = h("select", {id: "sso-role"}, ["agent", "admin"].map((name) => h("option", {value: name}, name)));
    role.value = current?.defaultRole ?? "agent";
    const label = h("input", {id: "sso-label", required: true, maxlength: "60",
                              value: current?.buttonLabel ?? "Single sign-on"});
    const enabled = h("input", {id: "sso-enabled", type: "checkbox", checked: current?.enabled ?? true});
    const status = h("div", {"aria-live": "polite"});
    const callback = `${location.origin}/api/sso/callback`;
    const form = h("form", {class: "card stack", id: "sso-form", onsubmit: async (event) => {
      event.preventDefault();
      const body = {issuer: issuer.value.trim(), clientId: clientId.value.trim(),
                    allowedDomains: domains.value.split(/[\s,]+/).filter(Boolean), defaultRole: role.value,
                    buttonLabel: label.value.trim(), enabled: enabled.checked};
      if (clientSecret.value) body.clientSecret = clientSecret.value;
      try {
        const saved = await api("PUT", "/api/organization/sso", body);
        this.render(saved);
        replace(this.querySelector("#sso-status"), h("p", {class: "status-ok", role: "status"}, "Saved."));
      } catch (error) {
        replace(status, errorBox(error));
      }
    }},
      h("h2", null, "Single sign-on (OpenID Connect)"),
      h("p", null, "Register Parley as a client at your identity provider with the redirect URI ",
        h("code", null, callback), ", then name the provider here. Operators whose verified e-mail address is in an ",
        "allowed domain sign in with it; a new one gets the default role."),
      field("Issuer", issuer, "The provider's issuer URL: its discovery document is checked when you save."),
      h("div", {class: "grid2"}, field("Client id", clientId), field("Client secret", clientSecret)),
      field("Allowed e-mail domains", domains, "Comma-separated."),
      h("div", {class: "grid2"}, field("Role of new operators", role), field("Button label", label,
        "Shown as “Sign in with …”.")),
      h("label", null, enabled, " Enabled"),
      h("p", null, "Sign-in link for your team: ",
        h("code", {id: "sso-link"}, `${location.origin}/app/signin?org=${this.organizationId}`)),
      h("button", {type: "submit"}, "Save"), status);
    replace(this, h("h1", null, "Organization"), form, h("div", {id: "sso-status", "aria-live": "polite"}),
      this.securityForm());
  }

  securityForm() {
    const require = h("input", {type: "checkbox", id: "require-two-factor", checked: this.twoFactorRequired});
    const status = h("div", {"aria-live": "polite"});
    return h("form", {class: "card stack", id: "security-form", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const saved = await api("PUT", "/api/organization/security", {requireTwoFactor: require.checked});
        this.twoFactorRequired = saved.requireTwoFactor;
        replace(status, h("p", {class: "status-ok", role: "status"}, saved.requireTwoFactor
          ? "Saved: every operator needs two-factor sign-in; those without it are asked to turn it on."
          : "Saved: two-factor sign-in is up to each operator."));
      } catch (error) {
        require.checked = this.twoFactorRequired;
        replace(status, errorBox(error));
      }
    }},
      h("h2", null, "Two-factor sign-in"),
      h("label", null, require, " Require two-factor sign-in for every operator of this organization"),
      h("p", {class: "notice"}, "Turn it on for yourself first, on your profile."),
      h("button", {type: "submit"}, "Apply to the organization"), status);
  }
}

customElements.define("parley-organization", ParleyOrganization);
