// Webhook subscriptions of the chosen website: create (the signing secret shown once), edit, enable or
// disable, delete; and each one's delivery log, with retry and recover.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, secretOnce, time} from "../dom.js";

const EVENTS = ["message.created", "conversation.created", "customer.created"];

function eventChecks(chosen = []) {
  return h("fieldset", {class: "checks"}, h("legend", null, "Events (none: all)"),
    EVENTS.map((name) => h("label", null,
      h("input", {type: "checkbox", value: name, checked: chosen.includes(name)}), " ", name)));
}
const checked = (fieldset) => [...fieldset.querySelectorAll("input:checked")].map((input) => input.value);

class ParleyWebhooks extends Page {
  show() {
    if (!this.websiteId) return replace(this, h("h1", null, "Webhooks"), this.noWebsite());
    const url = h("input", {id: "hook-url", type: "url", required: true, placeholder: "https://example.com/parley"});
    const events = eventChecks();
    this.notice = h("div", {"aria-live": "polite"});
    this.list = h("div", {class: "stack"});
    const form = h("form", {class: "card", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const created = await api("POST", "/api/webhooksubscriptions",
                                  {websiteId: this.websiteId, url: url.value, events: checked(events)});
        form.reset();
        replace(this.notice, secretOnce("The signing secret:", created.secret));
        this.load();
      } catch (error) {
        replace(this.notice, errorBox(error));
      }
    }}, h("h2", null, "New subscription"), field("URL", url), events, h("button", {type: "submit"}, "Subscribe"));
    replace(this, h("h1", null, "Webhooks"), form, this.notice, this.list);
    this.load();
  }

  async load() {
    const subscriptions = await get("/api/webhooksubscriptions", {websiteId: this.websiteId});
    replace(this.list, subscriptions.length ? subscriptions.map((s) => this.card(s))
      : h("p", {class: "empty"}, "No subscriptions."));
  }

  card(subscription) {
    const status = h("div", {"aria-live": "polite"});
    const log = h("div");
    const url = h("input", {type: "url", required: true, value: subscription.url, id: `url-${subscription._id}`});
    const events = eventChecks(subscription.events);
    const run = async (work) => {
      try {
        await work();
        this.load();
      } catch (error) {
        replace(status, errorBox(error));
      }
    };
    return h("section", {class: "card", "data-id": subscription._id},
      h("h2", null, subscription.url),
      h("p", null, subscription.active ? h("span", {class: "status-ok"}, "Active")
        : h("span", {class: "status-bad"}, "Disabled", subscription.disabledReason ? `: ${subscription.disabledReason}` : ""),
        ` · ${subscription.consecutiveFailures} ${subscription.consecutiveFailures === 1 ? "failure" : "failures"} in a row`),
      h("form", {onsubmit: (e) => {
        e.preventDefault();
        run(() => api("PUT", `/api/webhooksubscriptions/${subscription._id}`, {url: url.value, events: checked(events)}));
      }}, field("URL", url), events, h("button", {type: "submit", class: "secondary"}, "Save")),
      h("div", {class: "row-actions"},
        h("button", {type: "button", class: "secondary", onclick: () => run(() => api("PUT",
          `/api/webhooksubscriptions/${subscription._id}`, {active: !subscription.active}))},
          subscription.active ? "Disable" : "Enable"),
        h("button", {type: "button", class: "secondary", onclick: () => this.deliveries(subscription, log)}, "Delivery log"),
        h("button", {type: "button", class: "danger", onclick: () => {
          if (confirm(`Delete the subscription to ${subscription.url}?`)) {
            run(() => api("DELETE", `/api/webhooksubscriptions/${subscription._id}`));
          }
        }}, "Delete")),
      status, log);
  }

  async deliveries(subscription, log, cursor = null) {
    const path = `/api/webhooksubscriptions/${subscription._id}`;
    const page = await get(`${path}/deliveries`, cursor ? {cursor} : undefined);
    const since = h("input", {type: "datetime-local", id: `since-${subscription._id}`});
    const done = h("div", {"aria-live": "polite"});
    replace(log, h("h3", null, "Deliveries"),
      page.items.length ? h("table", {class: "deliveries"},
        h("thead", null, h("tr", null, ["Event", "Status", "Attempts", "Last answer", "Created"].map((t) => h("th", {scope: "col"}, t)),
          h("th", {scope: "col"}, h("span", {class: "visually-hidden"}, "Actions")))),
        h("tbody", null, page.items.map((delivery) => {
          const last = delivery.attempts.at(-1);
          return h("tr", {"data-id": delivery._id},
            h("td", null, delivery.event), h("td", {class: "delivery-status"}, delivery.status),
            h("td", null, String(delivery.attempts.length)),
            h("td", null, last ? `${last.responseStatus ?? last.error ?? "—"} in ${last.latencyMs} ms` : "—"),
            h("td", null, time(delivery.createdAt)),
            h("td", null, subscription.active && delivery.status !== "pending" && h("button", {type: "button", class: "secondary",
              onclick: async () => {
                await api("POST", `${path}/deliveries/${delivery._id}/retry`).catch((e) => replace(done, errorBox(e)));
                this.deliveries(subscription, log, cursor);
              }}, "Retry")));
        })))
        : h("p", {class: "empty"}, "No deliveries yet."),
      page.nextCursor && h("button", {type: "button", class: "link",
        onclick: () => this.deliveries(subscription, log, page.nextCursor)}, "Older deliveries"),
      h("form", {class: "toolbar", onsubmit: async (e) => {
        e.preventDefault();
        try {
          const answer = await api("POST", `${path}/recover`, {since: new Date(since.value).toISOString()});
          replace(done, h("p", {class: "status-ok"}, `Redelivering ${answer.redelivering} failed deliveries.`));
        } catch (error) {
          replace(done, errorBox(error));
        }
      }}, field("Failed since", since), h("button", {type: "submit", class: "secondary"}, "Recover")),
      done);
  }
}

customElements.define("parley-webhooks", ParleyWebhooks);
