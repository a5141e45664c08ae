// The audit log: who changed which setting or record, when, from where; filtered by actor, kind of change
// and period, newest first, a page at a time; downloaded as CSV or NDJSON with the same filters.

import {get, saveDownload} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, time} from "../dom.js";

// The kinds of subject the log names actions by (`webhook.created` ...): the action filter's choices.
const KINDS = ["organization", "website", "agent", "webhook", "apikey", "operator", "session", "customer",
               "document", "campaign", "sso"];
const ACTORS = {operator: "Operator", apikey: "API key", mcp: "MCP client", cli: "CLI", customer: "Visitor",
                system: "Parley"};

const shown = (value) => value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value);

function changesList(changes) {
  const names = Object.keys(changes);
  if (!names.length) return "—";
  return h("ul", {class: "changes"}, names.map((name) => h("li", null,
    h("code", null, name), ": ", shown(changes[name].before), " → ", shown(changes[name].after))));
}

function actorCell(actor) {
  if (!actor.kind) return h("span", {class: "muted", title: "recorded before the log kept who made changes"}, "Unknown");
  return [ACTORS[actor.kind] ?? actor.kind, actor.displayName || actor.id ? ": " : "",
          actor.displayName ?? actor.id ?? ""];
}

class ParleyAudit extends Page {
  show() {
    this.actor = h("select", {id: "audit-actor"}, h("option", {value: ""}, "Anyone"),
      this.app.operators.map((o) => h("option", {value: o._id}, o.email)));
    this.action = h("select", {id: "audit-action"}, h("option", {value: ""}, "Every change"),
      KINDS.map((kind) => h("option", {value: `${kind}.*`}, kind)));
    this.since = h("input", {id: "audit-since", type: "date"});
    this.until = h("input", {id: "audit-until", type: "date"});
    this.status = h("div", {"aria-live": "polite"});
    this.rows = h("tbody");
    this.more = h("button", {type: "button", class: "secondary", hidden: true, onclick: () => this.load(this.cursor)},
      "Load more");
    const filters = h("form", {class: "toolbar", "aria-label": "Filters", onsubmit: (event) => {
      event.preventDefault();
      this.load();
    }},
      field("Who", this.actor), field("Kind", this.action), field("From", this.since), field("Until", this.until),
      h("button", {type: "submit"}, "Show"),
      h("button", {type: "button", class: "secondary", onclick: () => this.save("text/csv", "audit.csv")}, "Download CSV"),
      h("button", {type: "button", class: "secondary", onclick: () => this.save("application/x-ndjson", "audit.ndjson")},
        "Download NDJSON"));
    replace(this, h("h1", null, "Audit log"),
      h("p", null, "Changes to settings and records: who made them, when and from which address. Secrets show as ***."),
      filters, this.status,
      h("table", {id: "audit-table"},
        h("caption", {class: "visually-hidden"}, "Changes, newest first"),
        h("thead", null, h("tr", null, ["When", "Who", "Action", "Subject", "Changes", "Address"].map(
          (title) => h("th", {scope: "col"}, title)))),
        this.rows),
      this.more);
    this.load();
  }

  filters() {
    const params = {};
    if (this.actor.value) params.actorId = this.actor.value;
    if (this.action.value) params.action = this.action.value;
    // the period's days are the operator's own: local midnight to the midnight after the last day
    if (this.since.value) params.since = new Date(`${this.since.value}T00:00`).toISOString();
    if (this.until.value) params.until = new Date(new Date(`${this.until.value}T00:00`).getTime() + 86400000).toISOString();
    return params;
  }

  async load(cursor) {
    try {
      const page = await get("/api/audit", {...this.filters(), ...(cursor ? {cursor} : {})});
      if (!cursor) this.rows.replaceChildren();
      this.rows.append(...page.items.map((entry) => h("tr", {"data-id": entry._id},
        h("td", null, time(entry.at)), h("td", null, actorCell(entry.actor)), h("td", null, h("code", null, entry.action)),
        h("td", null, entry.subject.kind, " ", h("code", {class: "muted"}, entry.subject.id)),
        h("td", null, changesList(entry.changes)), h("td", null, entry.address ?? "—"))));
      this.cursor = page.nextCursor;
      this.more.hidden = !page.nextCursor;
      replace(this.status, this.rows.children.length ? null : h("p", {class: "empty"}, "No changes match."));
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }

  async save(type, name) {
    try {
      await saveDownload("/api/audit", this.filters(), type, name);
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }
}

customElements.define("parley-audit", ParleyAudit);
