// The inbox: the website's conversations by tab (with every tab's count), scope and page, kept live from
// the realtime stream; the open conversation beside it (one column at a phone's width).

import {get} from "../api.js";
import {Page} from "../page.js";
import {customer, customerName} from "../customers.js";
import {errorBox, h, replace, time} from "../dom.js";
import {InboxActions} from "../inbox-actions.js";
import "./conversation.js";

const TABS = [["all", "All"], ["unread", "Unread"], ["unresolved", "Unresolved"], ["resolved", "Resolved"],
              ["mentions", "Mentions"], ["spam", "Spam"]];
const SCOPES = [["all", "Any time"], ["last-hour", "Last hour"], ["today", "Today"], ["last-week", "Last week"],
                ["online", "Online now"]];
const PAGE_SIZE = 20;
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

class ParleyInbox extends Page {
  connectedCallback() {
    this.className = "inbox";
    this.tabs = h("div", {role: "tablist", "aria-label": "Conversations", class: "tabs"});
    this.scope = h("select", {id: "scope", onchange: () => this.go({scope: this.scope.value, skip: 0})},
      SCOPES.map(([value, label]) => h("option", {value}, label)));
    this.list = h("ul", {class: "conversations", "aria-label": "Conversations", "aria-busy": "true"});
    this.pager = h("nav", {class: "pager", "aria-label": "Pages"});
    this.status = h("div", {"aria-live": "polite", class: "list-status"});
    this.conversation = document.createElement("parley-conversation");
    this.conversation.app = this.app;
    this.actions = new InboxActions(this);
    this.actions.attach();
    replace(this,
      h("h1", {class: "visually-hidden"}, "Inbox"),
      h("section", {class: "list-pane", "aria-label": "Inbox"},
        this.tabs,
        h("div", {class: "filters"}, h("label", {for: "scope"}, "Show"), this.scope),
        this.actions.bar, this.actions.notice, this.status, this.list, this.pager),
      this.conversation);
    const refresh = () => this.scheduleRefresh();
    this.addEventListener("conversation-read", refresh);
    for (const name of ["conversation.created", "conversation.updated", "message.created", "MESSAGE_UPDATED_EVENT"]) {
      this.listen(name, refresh);
    }
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    this.actions.detach();
  }

  get params() {
    return {tab: this.query.get("tab") || "all", scope: this.query.get("scope") || "all",
            skip: Number(this.query.get("skip")) || 0};
  }

  href(changes = {}, conversationId = this.openId) {
    const merged = {...this.params, ...changes};
    const query = new URLSearchParams();
    if (merged.tab !== "all") query.set("tab", merged.tab);
    if (merged.scope !== "all") query.set("scope", merged.scope);
    if (merged.skip) query.set("skip", merged.skip);
    const search = query.toString();
    return `/app/inbox${conversationId ? "/" + conversationId : ""}${search ? "?" + search : ""}`;
  }

  go(changes) { this.app.navigate(this.href(changes)); }

  show([conversationId], query) {
    this.query = query;
    this.openId = conversationId || null;
    this.classList.toggle("has-conversation", Boolean(this.openId));
    this.scope.value = this.params.scope;
    this.refresh();
    this.conversation.open(this.openId, this.href({}, null));
  }

  scheduleRefresh() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 100);
  }

  async refresh() {
    if (!this.websiteId) {
      replace(this.list, this.noWebsite());
      return;
    }
    const {tab, scope, skip} = this.params;
    const asked = this.href();
    let page;
    try {
      page = await get("/api/conversations", {inboxFilter: tab, conversationFilter: scope, websiteId: this.websiteId,
                                              timezone: ZONE, limit: PAGE_SIZE, skip});
    } catch (error) {
      replace(this.status, errorBox(error));
      return;
    }
    if (asked !== this.href()) return; // the operator moved on meanwhile
    replace(this.status);
    this.renderTabs(page.counts, tab);
    replace(this.list, page.conversations.length ? page.conversations.map((c) => this.item(c))
      : h("li", {class: "empty"}, "No conversations here."));
    this.list.setAttribute("aria-busy", "false");
    this.actions.restore();
    this.renderPager(skip, page.filteredTotal);
    this.dataset.ready = "true";
  }

  renderTabs(counts, current) {
    replace(this.tabs, TABS.map(([key, label]) => h("a", {
      role: "tab", href: this.href({tab: key, skip: 0}), "aria-selected": String(key === current),
      "data-tab": key, class: key === current ? "tab current" : "tab"},
      label, " ", h("span", {class: "count", "data-count": key}, counts[key]))));
  }

  /** A conversation's row; its visitor's name fills in when read (the list is usable before). */
  item(conversation) {
    const who = h("span", {class: "who"}, customerName(null, conversation.customerId));
    customer(conversation.customerId).then((found) => { who.textContent = customerName(found, conversation.customerId); });
    const badges = [
      conversation.unread && h("span", {class: "badge unread"}, "Unread"),
      conversation.resolved && h("span", {class: "badge resolved"}, "Resolved"),
      conversation.spam && h("span", {class: "badge spam"}, "Spam"),
      conversation.operatorOnly && h("span", {class: "badge internal"}, "Operators only"),
    ];
    const current = conversation._id === this.openId;
    return h("li", {class: current ? "current" : null, "data-id": conversation._id},
      this.actions.checkbox(conversation._id, who),
      h("a", {href: this.href({}, conversation._id), "aria-current": current ? "true" : null},
        who,
        h("span", {class: "when"}, time(conversation.lastEditTime)),
        h("span", {class: "badges"}, badges)));
  }

  renderPager(skip, total) {
    const last = Math.max(0, Math.ceil(total / PAGE_SIZE) - 1);
    const index = Math.floor(skip / PAGE_SIZE);
    replace(this.pager,
      index > 0 && h("a", {href: this.href({skip: skip - PAGE_SIZE}), rel: "prev"}, "Newer"),
      h("span", null, `Page ${index + 1} of ${last + 1}`),
      index < last && h("a", {href: this.href({skip: skip + PAGE_SIZE}), rel: "next"}, "Older"));
  }
}

customElements.define("parley-inbox", ParleyInbox);
