// Teams and labels (admins and owners): create, rename, set a team's members, recolour, delete. Every
// operator sees them in the inbox's views and a conversation's controls.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, tinted} from "../dom.js";

class ParleyWorkflow extends Page {
  show() {
    this.status = h("div", {"aria-live": "polite"});
    this.teams = h("div");
    this.labels = h("div");
    const teamName = h("input", {id: "team-name", maxlength: "80", required: true, placeholder: "Billing"});
    const labelName = h("input", {id: "label-name", maxlength: "50", required: true, placeholder: "refund"});
    const labelColor = h("input", {id: "label-color", type: "color", value: "#b45309"});
    const submit = (call) => async (event) => {
      event.preventDefault();
      try {
        await call();
        event.target.reset();
        replace(this.status);
        this.load();
      } catch (error) {
        replace(this.status, errorBox(error));
      }
    };
    replace(this, h("h1", null, "Teams and labels"),
      h("p", null, "Teams group operators a conversation can be assigned to; labels sort conversations. Each inbox "
                   + "has a view per team and per label, with its count."),
      this.status,
      h("section", {class: "card stack", "aria-labelledby": "teams-heading"},
        h("h2", {id: "teams-heading"}, "Teams"),
        h("form", {id: "team-form", class: "inline", onsubmit: submit(() => api("POST", "/api/teams",
          {name: teamName.value.trim(), memberIds: []}))}, field("New team", teamName), h("button", {type: "submit"}, "Add team")),
        this.teams),
      h("section", {class: "card stack", "aria-labelledby": "labels-heading"},
        h("h2", {id: "labels-heading"}, "Labels"),
        h("form", {id: "label-form", class: "inline", onsubmit: submit(() => api("POST", "/api/labels",
          {name: labelName.value.trim(), color: labelColor.value}))},
          field("New label", labelName), field("Colour", labelColor), h("button", {type: "submit"}, "Add label")),
        this.labels));
    this.load();
  }

  async act(call) {
    try {
      await call();
      replace(this.status);
    } catch (error) {
      replace(this.status, errorBox(error));
    }
    this.load();
  }

  async load() {
    const [teams, labels] = await Promise.all([get("/api/teams"), get("/api/labels")]);
    const operators = this.app.operators.filter((o) => o.status === "active");
    replace(this.teams, teams.length ? h("ul", {class: "plain"}, teams.map((team) => {
      const name = h("input", {value: team.name, "aria-label": `Name of ${team.name}`, maxlength: "80"});
      const members = h("fieldset", {class: "checks"}, h("legend", null, `Members of ${team.name}`),
        operators.map((o) => h("label", null, h("input", {type: "checkbox", value: o._id,
          checked: team.memberIds.includes(o._id)}), " ", o.displayName ?? o.email)));
      return h("li", {class: "team", "data-id": team._id, "data-name": team.name}, name, members,
        h("button", {type: "button", onclick: () => this.act(() => api("PUT", `/api/teams/${team._id}`, {
          name: name.value.trim(),
          memberIds: [...members.querySelectorAll("input:checked")].map((input) => input.value)}))}, "Save"),
        h("button", {type: "button", class: "danger", onclick: () => {
          if (confirm(`Delete the team ${team.name}? Its conversations keep their assignee.`)) {
            this.act(() => api("DELETE", `/api/teams/${team._id}`));
          }
        }}, "Delete"));
    })) : h("p", {class: "empty"}, "No teams yet."));
    replace(this.labels, labels.length ? h("ul", {class: "plain"}, labels.map((label) => {
      const name = h("input", {value: label.name, "aria-label": `Name of ${label.name}`, maxlength: "50"});
      const color = h("input", {type: "color", value: label.color, "aria-label": `Colour of ${label.name}`});
      return h("li", {class: "label", "data-id": label._id, "data-name": label.name}, tinted(h("span", {class: "label-dot"}), label.color),
        name, color,
        h("button", {type: "button", onclick: () => this.act(() => api("PUT", `/api/labels/${label._id}`,
          {name: name.value.trim(), color: color.value}))}, "Save"),
        h("button", {type: "button", class: "danger", onclick: () => {
          if (confirm(`Delete the label ${label.name}? It comes off every conversation.`)) {
            this.act(() => api("DELETE", `/api/labels/${label._id}`));
          }
        }}, "Delete"));
    })) : h("p", {class: "empty"}, "No labels yet."));
  }
}

customElements.define("parley-workflow", ParleyWorkflow);
