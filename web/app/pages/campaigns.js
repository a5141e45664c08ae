// Campaigns of the chosen website: draft one (message and audience), preview the audience, schedule it,
// send it now, cancel it; the list shows each one's state and figures.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {customerName} from "../customers.js";
import {errorBox, field, h, replace, time} from "../dom.js";
import {richText} from "../rich-text.js";

const words = (text) => text.split(/[\s,]+/).filter(Boolean);
const yesNo = (id) => h("select", {id}, h("option", {value: ""}, "Either"), h("option", {value: "true"}, "Yes"),
  h("option", {value: "false"}, "No"));

class ParleyCampaigns extends Page {
  show() {
    if (!this.websiteId) return replace(this, h("h1", null, "Campaigns"), this.noWebsite());
    const name = h("input", {id: "campaign-name", required: true, maxlength: "200"});
    const content = h("textarea", {id: "campaign-content", rows: "4", required: true});
    const language = h("input", {id: "audience-language", placeholder: "en, fr"});
    const domain = h("input", {id: "audience-domain", placeholder: "example.com"});
    const identified = yesNo("audience-identified");
    const seen = h("input", {id: "audience-seen", type: "number", min: "1", placeholder: "any time"});
    const hasConversation = yesNo("audience-conversation");
    this.notice = h("div", {"aria-live": "polite"});
    this.list = h("div");
    const form = h("form", {class: "card", onsubmit: async (event) => {
      event.preventDefault();
      const audience = {};
      if (words(language.value).length) audience.language = words(language.value);
      if (words(domain.value).length) audience.emailDomain = words(domain.value);
      if (identified.value) audience.identified = identified.value === "true";
      if (seen.value) audience.seenWithinDays = Number(seen.value);
      if (hasConversation.value) audience.hasConversation = hasConversation.value === "true";
      try {
        await api("POST", "/api/campaigns", {websiteId: this.websiteId, name: name.value, content: content.value, audience});
        form.reset();
        replace(this.notice, h("p", {class: "status-ok"}, "Draft saved."));
        this.load();
      } catch (error) {
        replace(this.notice, errorBox(error));
      }
    }},
      h("h2", null, "Draft a campaign"), field("Name", name), field("Message", content),
      h("fieldset", {class: "checks"}, h("legend", null, "Audience (every filter given must hold)"),
        field("Languages", language), field("E-mail domains", domain), field("Identified", identified),
        field("Seen within days", seen), field("Has a conversation", hasConversation)),
      h("button", {type: "submit"}, "Save draft"));
    replace(this, h("h1", null, "Campaigns"), form, this.notice, h("h2", null, "Campaigns"), this.list);
    this.load();
  }

  async load() {
    const page = await get("/api/campaigns", {websiteId: this.websiteId, pagination: "cursor"}).catch((error) => error);
    if (page instanceof Error) return replace(this.list, errorBox(page));
    replace(this.list, page.items.length ? h("div", {class: "stack"}, page.items.map((c) => this.card(c)))
      : h("p", {class: "empty"}, "No campaigns yet."));
  }

  card(campaign) {
    const status = h("div", {"aria-live": "polite"});
    const when = h("input", {type: "datetime-local", id: `at-${campaign._id}`});
    const path = `/api/campaigns/${campaign._id}`;
    const run = async (work) => {
      try {
        await work();
        this.load();
      } catch (error) {
        replace(status, errorBox(error));
      }
    };
    const open = campaign.status === "draft" || campaign.status === "scheduled";
    return h("section", {class: "card", "data-id": campaign._id},
      h("h3", null, campaign.name, " ", h("span", {class: "badge"}, campaign.status)),
      richText(campaign, {class: "content"}),
      h("p", {class: "notice"}, campaign.scheduledAt && ["Scheduled for ", time(campaign.scheduledAt), " · "],
        `${campaign.stats.recipients} recipients, ${campaign.stats.sent} sent, ${campaign.stats.replied} replied`),
      h("div", {class: "row-actions"},
        h("button", {type: "button", class: "secondary", onclick: async () => {
          try {
            const preview = await get(`${path}/preview`);
            replace(status, h("p", null, `${preview.recipients} visitors would receive it`,
              preview.sample.length ? `, such as ${preview.sample.map((c) => customerName(c, c._id)).join(", ")}` : "", "."),
              this.asSeen(campaign));
          } catch (error) {
            replace(status, errorBox(error));
          }
        }}, "Preview audience"),
        open && h("form", {class: "toolbar", onsubmit: (e) => {
          e.preventDefault();
          run(() => api("POST", `${path}/schedule`, {at: new Date(when.value).toISOString()}));
        }}, field("Send at", when), h("button", {type: "submit", class: "secondary"}, "Schedule")),
        open && h("button", {type: "button", onclick: () => {
          if (confirm(`Send "${campaign.name}" now?`)) run(() => api("POST", `${path}/send`));
        }}, "Send now"),
        (campaign.status === "scheduled" || campaign.status === "sending") && h("button", {type: "button", class: "danger",
          onclick: () => run(() => api("POST", `${path}/cancel`))}, "Cancel"),
        campaign.status === "draft" && h("button", {type: "button", class: "danger", onclick: () => {
          if (confirm(`Delete the draft "${campaign.name}"?`)) run(() => api("DELETE", path));
        }}, "Delete")),
      status);
  }

  /** The message as a visitor's chat shows it: a reply from the team. */
  asSeen(campaign) {
    return h("figure", {class: "campaign-look"}, h("figcaption", {class: "notice"}, "As visitors will see it:"),
      h("div", {class: "message operator"}, h("article", null,
        h("div", {class: "meta"}, h("span", {class: "who"}, "Team")), richText(campaign, {class: "content"}))));
  }
}

customElements.define("parley-campaigns", ParleyCampaigns);
