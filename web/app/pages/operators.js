// The organization's operators (admins and owners): invite by e-mail and role (the link is shown to copy),
// change a role, disable or enable, remove, revoke an invitation, make a password reset link to hand over.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {copyButton, errorBox, field, h, replace, time} from "../dom.js";

const ROLES = ["agent", "admin", "owner"];

/** A link shown once, to copy and hand over. */
function linkToCopy(label, link) {
  return h("div", {class: "secret", role: "status"},
    h("p", null, h("strong", null, label), ` Copy it and hand it over; it works once, until ${new Date(link.expiresAt).toLocaleString()}.`),
    h("code", {class: "secret-value", tabindex: "0"}, link.url), " ", copyButton(link.url, "Copy link"));
}

class ParleyOperators extends Page {
  connectedCallback() {
    this.listen("operator.availability", () => this.table && this.load());
  }

  show() {
    const email = h("input", {id: "invite-email", type: "email", required: true, autocomplete: "off"});
    // only an owner makes owners (the service refuses an admin's owner invitation)
    const role = h("select", {id: "invite-role"},
      ROLES.filter((r) => r !== "owner" || this.app.hasRole("owner")).map((r) => h("option", {value: r}, r)));
    this.result = h("div", {"aria-live": "polite"});
    this.table = h("div");
    const form = h("form", {class: "card stack", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const link = await api("POST", "/api/operators/invitations", {email: email.value.trim(), role: role.value});
        replace(this.result, linkToCopy(`The invitation for ${email.value.trim()}:`, link));
        form.reset();
        this.load();
      } catch (error) {
        replace(this.result, errorBox(error));
      }
    }},
      h("h2", null, "Invite an operator"),
      h("div", {class: "grid2"}, field("E-mail", email), field("Role", role)),
      h("button", {type: "submit"}, "Invite"));
    replace(this, h("h1", null, "Operators"),
      h("p", null, "Agents answer conversations and manage customers and help documents; admins also manage the " +
        "websites, keys, webhooks, campaigns and the team; owners everything, the owner role included."),
      form, this.result, h("h2", null, "Team"), this.table);
    this.load();
  }

  /** Runs a change and shows the list again, or the service's refusal. */
  async act(change) {
    try {
      const answer = await change();
      this.load();
      return answer;
    } catch (error) {
      replace(this.result, errorBox(error));
      return null;
    }
  }

  actions(operator) {
    const self = operator._id === this.app.me._id;
    if (operator.status === "invited") {
      return h("button", {type: "button", class: "danger", onclick: () => {
        if (confirm(`Revoke the invitation of ${operator.email}?`)) {
          this.act(() => api("DELETE", `/api/operators/invitations/${operator._id}`));
        }
      }}, "Revoke invitation");
    }
    const role = h("select", {"aria-label": `Role of ${operator.email}`, disabled: self,
                              onchange: () => this.act(() => api("PATCH", `/api/operators/${operator._id}`, {role: role.value}))},
      ROLES.map((r) => h("option", {value: r, selected: r === operator.role}, r)));
    const disabled = operator.status === "disabled";
    return [role, " ",
      !self && h("button", {type: "button", class: "secondary", onclick: () =>
        this.act(() => api("PATCH", `/api/operators/${operator._id}`, {status: disabled ? "active" : "disabled"}))},
      disabled ? "Enable" : "Disable"), " ",
      !self && h("button", {type: "button", class: "secondary", onclick: async () => {
        const link = await this.act(() => api("POST", `/api/operators/${operator._id}/password-reset`));
        if (link) replace(this.result, linkToCopy(`A password reset link for ${operator.email}:`, link));
      }}, "Reset link"), " ",
      !self && h("button", {type: "button", class: "danger", onclick: () => {
        if (confirm(`Remove ${operator.email} from the organization? What they did stays.`)) {
          this.act(() => api("DELETE", `/api/operators/${operator._id}`));
        }
      }}, "Remove")];
  }

  async load() {
    const operators = await get("/api/operators");
    replace(this.table, h("table", null,
      h("thead", null, h("tr", null, ["Name", "E-mail", "Role", "Status", "Availability", "Since", "Actions"].map((t) => h("th", {scope: "col"}, t)))),
      h("tbody", null, operators.map((o) => h("tr", {"data-id": o._id},
        h("td", null, o.displayName ?? "—"), h("td", null, o.email), h("td", null, o.role),
        h("td", null, h("span", {class: o.status === "active" ? "" : "status-bad"}, o.status)),
        h("td", null, h("span", {class: "availability", "data-status": o.availability},
          h("span", {class: "availability-dot", "aria-hidden": "true"}), o.availability)),
        h("td", null, time(o.createdAt)), h("td", null, this.actions(o)))))));
  }
}

customElements.define("parley-operators", ParleyOperators);
