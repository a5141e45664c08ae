// The inbox: the website's conversations by tab (with every tab's count), scope and page, kept live from
// the realtime stream; the open conversation beside it (one column at a phone's width). Rows are for
// triage: the latest message's first line (a note's marked), the visitor, the assignee's avatar, the
// labels, the priority and how long the visitor has waited; a team's or a label's view narrows the tabs.
// "As of" shows the inbox, and the conversation opened from it, as they were at a past time: read only,
// and not live.

import {get} from "../api.js";
import {Page} from "../page.js";
import {customer, customerName} from "../customers.js";
import {errorBox, h, replace, time, tinted} from "../dom.js";
import {InboxActions} from "../inbox-actions.js";
import "./conversation.js";

const TABS = [["mine", "Mine"], ["unassigned", "Unassigned"], ["unread", "Unread"], ["unresolved", "Unresolved"],
              ["all", "All"], ["resolved", "Resolved"], ["snoozed", "Snoozed"], ["mentions", "Mentions"],
              ["spam", "Spam"]];
const PRIORITY_LABELS = {low: "Low", medium: "Medium", high: "High", urgent: "Urgent"};
const SCOPES = [["all", "Any time"], ["last-hour", "Last hour"], ["today", "Today"], ["last-week", "Last week"],
                ["online", "Online now"]];
const PAGE_SIZE = 20;
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

/** A time as a datetime-local field's value, in the browser's time zone, to the second. */
function localValue(iso) {
  const at = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:`
    + `${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

class ParleyInbox extends Page {
  connectedCallback() {
    this.className = "inbox";
    this.tabs = h("div", {role: "tablist", "aria-label": "Conversations", class: "tabs"});
    this.scope = h("select", {id: "scope", onchange: () => this.go({scope: this.scope.value, skip: 0})},
      SCOPES.map(([value, label]) => h("option", {value}, label)));
    this.asOf = h("input", {type: "datetime-local", id: "as-of", step: "1", onchange: () => {
      if (this.asOf.value) this.go({asOf: new Date(this.asOf.value).toISOString(), skip: 0});
    }});
    this.now = h("button", {type: "button", class: "secondary", id: "as-of-now", hidden: true,
      onclick: () => this.go({asOf: null, skip: 0})}, "Back to now");
    this.past = h("p", {class: "past-notice", role: "status"});
    this.list = h("ul", {class: "conversations", "aria-label": "Conversations", "aria-busy": "true"});
    this.views = h("nav", {class: "views", "aria-label": "Teams and labels"});
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
        h("div", {class: "filters as-of"}, h("label", {for: "as-of"}, "As of"), this.asOf, this.now),
        this.views, this.past, this.actions.bar, this.actions.notice, this.status, this.list, this.pager),
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
            skip: Number(this.query.get("skip")) || 0, team: this.query.get("team") || "",
            label: this.query.get("label") || "", asOf: this.query.get("asOf") || null};
  }

  href(changes = {}, conversationId = this.openId) {
    const merged = {...this.params, ...changes};
    const query = new URLSearchParams();
    if (merged.tab !== "all") query.set("tab", merged.tab);
    if (merged.scope !== "all") query.set("scope", merged.scope);
    if (merged.skip) query.set("skip", merged.skip);
    if (merged.asOf) query.set("asOf", merged.asOf);
    if (merged.team) query.set("team", merged.team);
    if (merged.label) query.set("label", merged.label);
    const search = query.toString();
    return `/app/inbox${conversationId ? "/" + conversationId : ""}${search ? "?" + search : ""}`;
  }

  go(changes) { this.app.navigate(this.href(changes)); }

  /** Which list is shown: the website's, with its tab, scope, page, view and time; not the conversation beside it. */
  get listKey() { return `${this.websiteId} ${this.href({}, null)}`; }

  show([conversationId], query) {
    this.query = query;
    this.openId = conversationId || null;
    this.classList.toggle("has-conversation", Boolean(this.openId));
    this.scope.value = this.params.scope;
    this.showPast(this.params.asOf);
    // another conversation of the same list: the list as read (the realtime stream keeps it current), redrawn
    // for its links and its current row, rather than read again beside the conversation's own reads
    const listed = this.page?.key === this.listKey;
    if (listed) this.render(this.page);
    return Promise.all([listed || this.refresh(),
                        this.conversation.open(this.openId, this.href({}, null), this.params.asOf)]);
  }

  /** Marks the page as showing the past (read only, not live), or as live. */
  showPast(asOf) {
    this.classList.toggle("past", Boolean(asOf));
    this.asOf.value = asOf ? localValue(asOf) : "";
    this.now.hidden = !asOf;
    replace(this.past, asOf && [h("strong", null, "Read only: "),
      `the inbox as it was at ${new Date(asOf).toLocaleString()}. Changes since are not shown.`]);
  }

  scheduleRefresh() {
    if (this.params.asOf) return; // the past does not change
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 100);
  }

  async refresh() {
    if (!this.websiteId) {
      replace(this.list, this.noWebsite());
      return;
    }
    const {tab, scope, skip, team, label, asOf} = this.params;
    const asked = this.listKey;
    this.labelsRead ??= this.loadLabelColors(); // once, beside the first page
    let page;
    try {
      page = await get("/api/conversations", {inboxFilter: tab, conversationFilter: scope, websiteId: this.websiteId,
                                              timezone: ZONE, limit: PAGE_SIZE, skip,
                                              ...(team ? {teamId: team} : {}), ...(label ? {labels: label} : {}),
                                              ...(asOf ? {asOf} : {})});
      await this.labelsRead;
    } catch (error) {
      replace(this.status, errorBox(error));
      return;
    }
    if (asked !== this.listKey) return; // the operator moved on meanwhile
    this.page = {...page, key: asked};
    this.render(this.page);
  }

  /** The list's page as read (`refresh`): its tabs with their counts, views, rows and pager. */
  render(page) {
    const {tab, skip} = this.params;
    replace(this.status);
    this.renderTabs(page.counts, tab);
    this.renderViews(page.teamCounts, page.labelCounts);
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

  /** Every team's and label's view, with its open conversations; the current one marked. */
  renderViews(teams = [], labels = []) {
    const {team, label} = this.params;
    const link = (changes, text, count, current) => h("a", {
      href: this.href({team: "", label: "", skip: 0, ...changes}), class: current ? "view current" : "view",
      "aria-current": current ? "true" : null}, text, " ", h("span", {class: "count"}, count));
    replace(this.views,
      (team || label) && h("a", {href: this.href({team: "", label: "", skip: 0}), class: "view"}, "Every conversation"),
      teams.map((t) => link({team: t._id}, t.name, t.count, t._id === team)),
      labels.map((l) => link({label: l.name}, [tinted(h("span", {class: "label-dot"}), this.colorOf(l.name)), l.name],
                             l.count, l.name === label)));
  }

  colorOf(name) { return this.labelColors?.get(name) ?? "#6b7280"; }

  async loadLabelColors() {
    const labels = await get("/api/labels").catch(() => []);
    this.labelColors = new Map(labels.map((l) => [l.name, l.color]));
  }

  /** A conversation's row; its visitor's name fills in when read (the list is usable before). */
  item(conversation) {
    const who = h("span", {class: "who"}, customerName(null, conversation.customerId));
    customer(conversation.customerId).then((found) => { who.textContent = customerName(found, conversation.customerId); });
    const last = conversation.lastMessage;
    const firstLine = last ? last.preview.split("\n")[0] : "";
    const badges = [
      conversation.unread && h("span", {class: "badge unread"}, "Unread"),
      conversation.priority !== "none" && h("span", {class: `badge priority ${conversation.priority}`},
        PRIORITY_LABELS[conversation.priority]),
      conversation.labels.map((name) => tinted(h("span", {class: "badge label"}, name), this.colorOf(name))),
      conversation.snoozed && h("span", {class: "badge snoozed"}, "Snoozed"),
      conversation.resolved && h("span", {class: "badge resolved"}, "Resolved"),
      conversation.spam && h("span", {class: "badge spam"}, "Spam"),
      conversation.operatorOnly && h("span", {class: "badge internal"}, "Operators only"),
    ];
    const assignee = conversation.assigneeId && this.app.operators.find((o) => o._id === conversation.assigneeId);
    const current = conversation._id === this.openId;
    return h("li", {class: current ? "current" : null, "data-id": conversation._id},
      this.actions.checkbox(conversation._id, who),
      h("a", {href: this.href({}, conversation._id), "aria-current": current ? "true" : null},
        who,
        h("span", {class: "when"},
          conversation.waitingSince ? h("span", {class: "waiting", title: "Waiting for a reply since"},
            "waiting ", waited(conversation.waitingSince)) : time(conversation.lastEditTime)),
        h("span", {class: "preview"}, last?.internal ? h("strong", null, "Note: ") : null,
          last?.from === "operator" && !last.internal ? "You: " : null, firstLine || "No message yet"),
        conversation.assigneeId ? h("img", {class: "assignee", src: `/api/operators/${conversation.assigneeId}/avatar`,
          width: 20, height: 20, alt: `Assigned to ${assignee?.displayName ?? assignee?.email ?? "an operator"}`,
          title: `Assigned to ${assignee?.displayName ?? assignee?.email ?? "an operator"}`})
          : h("span", {class: "assignee none"}, "Unassigned"),
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

/** How long ago `iso` was, shortly: "4 min", "2 h", "3 d". */
function waited(iso) {
  const minutes = Math.max(0, Math.round((Date.now() - new Date(iso)) / 60000));
  const text = minutes < 60 ? `${minutes} min` : minutes < 1440 ? `${Math.round(minutes / 60)} h` : `${Math.round(minutes / 1440)} d`;
  return h("time", {datetime: iso, title: new Date(iso).toLocaleString()}, text);
}

customElements.define("parley-inbox", ParleyInbox);
