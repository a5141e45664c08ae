// Search across the organization's conversations (GET /api/search): the header's search box leads here,
// /app/search?q=…; each result links to its conversation, its snippet shown with the matched words marked.
// Arrow keys move between the results; the page fetches the next page on "More results". Filters: the
// website, resolved or not, and the conversations assigned to you.

import {get} from "../api.js";
import {Page} from "../page.js";
import {customerName} from "../customers.js";
import {errorBox, field, h, replace, time} from "../dom.js";

const ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": "\"", "&#x27;": "'", "&#39;": "'"};

/**
 * The API's snippet (HTML-escaped text with the matches in <mark>) as nodes, without parsing it as HTML:
 * the text between the marks is unescaped into text nodes, each match into a <mark> of text.
 */
export function snippetNodes(snippet) {
  const text = (part) => part.replace(/&(amp|lt|gt|quot|#x27|#39);/g, (entity) => ENTITIES[entity]);
  return snippet.split(/(<mark>.*?<\/mark>)/).filter(Boolean).map((part) =>
    part.startsWith("<mark>") ? h("mark", null, text(part.slice(6, -7))) : text(part));
}

class ParleySearch extends Page {
  connectedCallback() {
    this.className = "search-page";
    this.heading = h("h1", null, "Search");
    this.status = h("div", {"aria-live": "polite", class: "list-status"});
    this.results = h("ol", {class: "search-results", "aria-label": "Results"});
    this.more = h("button", {type: "button", class: "secondary", hidden: true, onclick: () => this.load()},
      "More results");
    this.results.addEventListener("keydown", (event) => this.step(event));
    const refilter = () => this.refilter();
    this.website = h("select", {id: "search-website", onchange: refilter}, h("option", {value: ""}, "Any website"),
      this.app.websites.map((w) => h("option", {value: w._id}, w.websiteName)));
    this.resolved = h("select", {id: "search-resolved", onchange: refilter}, h("option", {value: ""}, "Any status"),
      h("option", {value: "false"}, "Unresolved"), h("option", {value: "true"}, "Resolved"));
    this.mine = h("input", {type: "checkbox", id: "search-mine", onchange: refilter});
    const filters = h("div", {class: "toolbar", role: "group", "aria-label": "Filters"},
      field("Website", this.website), field("Status", this.resolved),
      h("label", {class: "mode"}, this.mine, " Assigned to me"));
    replace(this, this.heading, filters, this.status, this.results, this.more);
  }

  /** The filters as the address's query, so a search can be shared and gone back to. */
  refilter() {
    const query = new URLSearchParams({q: this.q});
    if (this.website.value) query.set("websiteId", this.website.value);
    if (this.resolved.value) query.set("resolved", this.resolved.value);
    if (this.mine.checked) query.set("mine", "1");
    this.app.navigate(`/app/search?${query}`);
  }

  show(_rest, query) {
    this.q = (query.get("q") || "").trim();
    this.generation = (this.generation ?? 0) + 1; // a load for an earlier search is dropped when it answers
    delete this.dataset.ready;
    this.website.value = query.get("websiteId") || "";
    this.resolved.value = query.get("resolved") || "";
    this.mine.checked = query.get("mine") === "1";
    this.filters = {...(this.website.value ? {websiteId: this.website.value} : {}),
                    ...(this.resolved.value ? {resolved: this.resolved.value} : {}),
                    ...(this.mine.checked ? {assigneeId: this.app.me._id} : {})};
    this.cursor = null;
    replace(this.results);
    this.more.hidden = true;
    replace(this.heading, this.q ? `Search: ${this.q}` : "Search");
    if (!this.q) {
      replace(this.status, h("p", {class: "empty"}, "Type words, an e-mail address or a phone number in the search box."));
      return;
    }
    this.load();
  }

  async load() {
    const asked = this.q, generation = this.generation;
    this.results.setAttribute("aria-busy", "true");
    let page;
    try {
      page = await get("/api/search", {q: asked, limit: 20, ...this.filters, ...(this.cursor ? {cursor: this.cursor} : {})});
    } catch (error) {
      replace(this.status, errorBox(error));
      return;
    } finally {
      this.results.removeAttribute("aria-busy");
    }
    if (generation !== this.generation) return; // another search or filter was chosen meanwhile
    const first = !this.cursor;
    this.cursor = page.nextCursor;
    this.results.append(...page.items.map((item) => this.resultView(item)));
    this.more.hidden = !this.cursor;
    const count = this.results.children.length;
    replace(this.status, h("p", {class: "notice"},
      count ? `${count}${this.cursor ? "+" : ""} result${count === 1 ? "" : "s"}` : `Nothing found for “${asked}”.`));
    if (first) this.dataset.ready = "";
  }

  resultView(item) {
    const who = customerName(item.customer, item.customer._id);
    return h("li", {"data-conversation": item.conversationId, "data-message": item.messageId ?? ""},
      h("a", {href: `/app/inbox/${item.conversationId}`},
        h("span", {class: "who"}, who, item.customer.email && item.customer.nickname ? ` · ${item.customer.email}` : ""),
        time(item.creationTime),
        h("span", {class: "snippet"}, item.messageId ? null : [h("span", {class: "badge"}, "Customer"), " "],
          snippetNodes(item.snippet))));
  }

  /** ArrowDown/ArrowUp move between the results' links (Home/End to the first and the last). */
  step(event) {
    const links = [...this.results.querySelectorAll("a")];
    const at = links.indexOf(document.activeElement);
    const next = {ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: links.length - 1}[event.key];
    if (next === undefined || at < 0) return;
    event.preventDefault();
    links[Math.max(0, Math.min(links.length - 1, next))].focus();
  }
}

customElements.define("parley-search", ParleySearch);
