// Canned responses: the organization's (admins write them) and your personal ones, each with a shortcut the
// composer's "/" menu finds it by. {{visitor.name}} and {{operator.name}} are filled in when inserted.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace} from "../dom.js";

class ParleyCannedResponses extends Page {
  connectedCallback() {
    this.listen("cannedresponse.changed", () => this.list && this.load()); // a change made elsewhere
  }

  show() {
    const admin = this.app.hasRole("admin");
    this.editing = null; // the response the form changes, or null for a new one
    this.shortcut = h("input", {id: "canned-shortcut", required: true, maxlength: "33", pattern: "/?[A-Za-z0-9][A-Za-z0-9_\\-]*",
      placeholder: "refund", spellcheck: "false", autocomplete: "off"});
    this.content = h("textarea", {id: "canned-content", required: true, rows: "4", maxlength: "5000",
      placeholder: "Hello {{visitor.name}}, your refund is on its way. {{operator.name}}"});
    this.personal = h("input", {type: "checkbox", id: "canned-personal", checked: !admin, disabled: !admin});
    this.status = h("div", {"aria-live": "polite"});
    this.submit = h("button", {type: "submit"}, "Save response");
    this.cancel = h("button", {type: "button", class: "secondary", hidden: true, onclick: () => this.edit(null)},
      "Cancel");
    this.formTitle = h("h2", null, "New response");
    this.form = h("form", {class: "card stack", id: "canned-form", onsubmit: (event) => { event.preventDefault(); this.save(); }},
      this.formTitle,
      field("Shortcut", this.shortcut, "Type / and the shortcut in a reply to insert it: letters, digits, - and _."),
      field("Text", this.content, "{{visitor.name}} and {{operator.name}} are filled in when you insert it."),
      h("label", {class: "mode"}, this.personal, " Personal: only you see and use it",
        admin ? "" : " (the organization's are an admin's to write)"),
      h("div", {class: "row-actions"}, this.submit, this.cancel));
    this.list = h("div");
    replace(this, h("h1", null, "Canned responses"), this.form, this.status, h("h2", null, "Responses"), this.list);
    this.load();
  }

  async load() {
    let responses;
    try {
      responses = await get("/api/cannedresponses");
    } catch (error) {
      replace(this.list, errorBox(error));
      return;
    }
    const admin = this.app.hasRole("admin");
    replace(this.list, responses.length ? h("table", {class: "canned-list"},
      h("thead", null, h("tr", null, ["Shortcut", "Text", "Whose"].map((t) => h("th", {scope: "col"}, t)),
        h("th", {scope: "col"}, h("span", {class: "visually-hidden"}, "Actions")))),
      h("tbody", null, responses.map((response) => h("tr", {"data-id": response._id},
        h("td", {class: "shortcut"}, `/${response.shortcut}`), h("td", {class: "content"}, response.content),
        h("td", null, response.personal ? "Yours" : "Organization"),
        h("td", null, (response.personal || admin) && h("div", {class: "row-actions"},
          h("button", {type: "button", class: "secondary", "aria-label": `Edit /${response.shortcut}`,
            onclick: () => this.edit(response)}, "Edit"),
          h("button", {type: "button", class: "danger", "aria-label": `Delete /${response.shortcut}`,
            onclick: () => this.remove(response)}, "Delete")))))))
      : h("p", {class: "empty"}, "No canned responses yet."));
    this.dataset.ready = "";
  }

  edit(response) {
    this.editing = response;
    this.shortcut.value = response?.shortcut ?? "";
    this.content.value = response?.content ?? "";
    if (response) this.personal.checked = response.personal;
    replace(this.formTitle, response ? `Edit /${response.shortcut}` : "New response");
    this.cancel.hidden = !response;
    this.shortcut.focus();
  }

  async save() {
    const body = {shortcut: this.shortcut.value.trim(), content: this.content.value, personal: this.personal.checked};
    try {
      if (this.editing) await api("PUT", `/api/cannedresponses/${this.editing._id}`, body);
      else await api("POST", "/api/cannedresponses", body);
    } catch (error) {
      replace(this.status, errorBox(error));
      (error.field === "content" ? this.content : this.shortcut).focus();
      return;
    }
    replace(this.status, h("p", {class: "notice"}, `Saved /${body.shortcut.replace(/^\//, "").toLowerCase()}.`));
    this.edit(null);
    this.load();
  }

  async remove(response) {
    if (!confirm(`Delete /${response.shortcut}?`)) return;
    try {
      await api("DELETE", `/api/cannedresponses/${response._id}`);
    } catch (error) {
      replace(this.status, errorBox(error));
      return;
    }
    replace(this.status, h("p", {class: "notice"}, `Deleted /${response.shortcut}.`));
    this.load();
  }
}

customElements.define("parley-cannedresponses", ParleyCannedResponses);
