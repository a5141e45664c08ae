// API keys: create one (name, scopes, pinned website, rate) and see its secret once; list; revoke.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, secretOnce, time} from "../dom.js";

// every scope the service knows (commands/principal.py ALL_SCOPES; tests/unit/test_web_modules.py compares them)
const SCOPES = ["conversations:read", "customers:read", "customers:write", "documents:read", "events:read",
                "messages:read", "messages:write", "websites:read"];

class ParleyKeys extends Page {
  show() {
    const name = h("input", {id: "key-name", maxlength: "100", placeholder: "Zapier, CRM sync…"});
    const scopes = h("fieldset", {class: "checks"}, h("legend", null, "Scopes"),
      SCOPES.map((scope) => h("label", null, h("input", {type: "checkbox", name: "scope", value: scope}), " ", scope)));
    const website = h("select", {id: "key-website"}, h("option", {value: ""}, "Every website"),
      this.app.websites.map((w) => h("option", {value: w._id}, w.websiteName)));
    const rate = h("input", {id: "key-rate", type: "number", min: "1", placeholder: "default"});
    this.created = h("div", {"aria-live": "polite"});
    this.table = h("div");
    const form = h("form", {class: "card stack", onsubmit: async (event) => {
      event.preventDefault();
      const body = {name: name.value.trim() || null,
                    scopes: [...scopes.querySelectorAll("input:checked")].map((input) => input.value)};
      if (website.value) body.websiteId = website.value;
      if (rate.value) body.ratePerMinute = Number(rate.value);
      try {
        const key = await api("POST", "/api/apikeys", body);
        form.reset();
        replace(this.created, secretOnce(`The secret of ${key.name ?? "the new key"}:`, key.secret));
        this.load();
      } catch (error) {
        replace(this.created, errorBox(error));
      }
    }},
      h("h2", null, "Create a key"),
      field("Name", name), scopes,
      h("div", {class: "grid2"}, field("Pinned to", website), field("Requests per minute", rate)),
      h("button", {type: "submit"}, "Create key"));
    replace(this, h("h1", null, "API keys"),
      h("p", null, "Keys let your own servers call the REST API with HTTP Basic authentication (the secret as the user name)."),
      form, this.created, h("h2", null, "Keys"), this.table);
    this.load();
  }

  async load() {
    const keys = await get("/api/apikeys", {sortField: "createdAt", sortDirection: "DESC"});
    const websites = new Map(this.app.websites.map((w) => [w._id, w.websiteName]));
    replace(this.table, keys.length ? h("table", null,
      h("thead", null, h("tr", null, ["Name", "Scopes", "Website", "Rate", "Created"].map((t) => h("th", {scope: "col"}, t)),
        h("th", {scope: "col"}, h("span", {class: "visually-hidden"}, "Actions")))),
      h("tbody", null, keys.map((key) => h("tr", {"data-id": key._id},
        h("td", null, key.name ?? "—"), h("td", null, key.scopes.join(", ")),
        h("td", null, key.websiteId ? websites.get(key.websiteId) ?? key.websiteId : "Every website"),
        h("td", null, key.ratePerMinute ? `${key.ratePerMinute}/min` : "default"), h("td", null, time(key.createdAt)),
        h("td", null, key.revoked ? h("span", {class: "status-bad"}, "Revoked")
          : h("button", {type: "button", class: "danger", onclick: async () => {
            if (!confirm(`Revoke ${key.name ?? "this key"}? Requests with it will be refused at once.`)) return;
            await api("DELETE", `/api/apikeys/${key._id}`);
            this.load();
          }}, "Revoke"))))))
      : h("p", {class: "empty"}, "No keys yet."));
  }
}

customElements.define("parley-keys", ParleyKeys);
