// The inbox's keyboard and bulk actions, apart from the rows themselves (pages/inbox.js draws them):
// j/k move the cursor over the rows, Enter opens the row under it, `e` resolves, `a` assigns to me, `l` labels,
// `x` selects, `/` goes to the search box, `?` shows the shortcuts; a checkbox on each row selects it, and the
// bar above the list applies resolve, assign to me, label or mark spam to every selected conversation.
// Every action is PATCH /api/conversations/{id}; the list refreshes from the realtime stream.

import {api, get} from "./api.js";
import {errorBox, h, replace} from "./dom.js";

export const SHORTCUTS = [
  ["j", "Next conversation"], ["k", "Previous conversation"], ["Enter", "Open the conversation"],
  ["e", "Resolve"], ["a", "Assign to me"], ["l", "Label"], ["x", "Select or unselect"],
  ["/", "Search"], ["?", "Show these shortcuts"], ["Escape", "Close a dialog"],
];

/** A modal dialog (the native one: focus kept inside, Escape closes, focus back where it was). */
function dialog(title, ...content) {
  const id = "d" + Math.random().toString(36).slice(2);
  const shown = h("dialog", {class: "card shortcuts-dialog", "aria-labelledby": id},
    h("h2", {id}, title), ...content,
    h("form", {method: "dialog"}, h("button", {type: "submit", class: "secondary"}, "Close")));
  shown.addEventListener("close", () => shown.remove());
  document.body.append(shown);
  shown.showModal();
  return shown;
}

export function showShortcuts() {
  return dialog("Keyboard shortcuts",
    h("table", null, h("thead", null, h("tr", null, h("th", {scope: "col"}, "Key"), h("th", {scope: "col"}, "Action"))),
      h("tbody", null, SHORTCUTS.map(([key, action]) => h("tr", null, h("td", null, h("kbd", null, key)), h("td", null, action))))));
}

/** Asks for one of the organization's labels; resolves with its name, or null when closed without one. */
async function pickLabel() {
  const labels = await get("/api/labels").catch(() => []);
  return new Promise((resolve) => {
    const select = h("select", {id: "label-pick"}, labels.map((label) => h("option", {value: label.name}, label.name)));
    let picked = null;
    const shown = dialog("Label",
      labels.length ? h("form", {method: "dialog", onsubmit: () => { picked = select.value; }},
        h("label", {for: "label-pick"}, "Label to add"), " ", select, " ",
        h("button", {type: "submit"}, "Add label"))
        : h("p", null, "No labels yet."));
    shown.addEventListener("close", () => resolve(picked));
  });
}

// where a key is typed text, not a shortcut (a row's checkbox is not)
const editing = (target) => target.closest?.("input:not([type=checkbox]), textarea, select, [contenteditable], dialog");

export class InboxActions {
  /** `inbox`: the parley-inbox element (its `list`, `app`, `conversation` and `scheduleRefresh`). */
  constructor(inbox) {
    this.inbox = inbox;
    this.selected = new Set();
    this.cursorId = null;
    this.count = h("span", {class: "bulk-count", role: "status"});
    this.notice = h("div", {"aria-live": "polite"}); // a refused action says why, selection or not
    const action = (label, run) => h("button", {type: "button", class: "secondary", onclick: () => this.bulk(run)}, label);
    this.bar = h("div", {class: "bulk-bar", role: "toolbar", "aria-label": "Selected conversations", hidden: true},
      this.count,
      action("Resolve", () => ({resolved: true})), action("Assign to me", () => ({assigneeId: this.me})),
      action("Label…", async () => { const name = await pickLabel(); return name && {addLabels: [name]}; }),
      action("Mark spam", () => ({spam: true})),
      h("button", {type: "button", class: "secondary", onclick: () => this.clear()}, "Clear selection"));
    this.onKey = (event) => this.key(event);
  }

  get me() { return this.inbox.app.me._id; }

  attach() { document.addEventListener("keydown", this.onKey); }

  detach() { document.removeEventListener("keydown", this.onKey); }

  /** The row's selection checkbox, named after the row's visitor (`who`, an element whose text fills in). */
  checkbox(conversationId, who) {
    const box = h("input", {type: "checkbox", class: "select", checked: this.selected.has(conversationId),
                            onchange: () => this.toggle(conversationId, box.checked)});
    const name = () => box.setAttribute("aria-label", `Select the conversation with ${who.textContent}`);
    name();
    new MutationObserver(name).observe(who, {childList: true, characterData: true, subtree: true});
    return box;
  }

  rows() { return [...this.inbox.list.querySelectorAll("li[data-id]")]; }

  /** After the list is drawn again: the cursor and the selection stay on the conversations still shown. */
  restore() {
    const ids = new Set(this.rows().map((row) => row.dataset.id));
    for (const id of [...this.selected]) if (!ids.has(id)) this.selected.delete(id);
    if (!ids.has(this.cursorId)) this.cursorId = null;
    this.mark(false);
    this.showBar();
  }

  toggle(conversationId, on) {
    if (on) this.selected.add(conversationId);
    else this.selected.delete(conversationId);
    const box = this.inbox.list.querySelector(`li[data-id="${conversationId}"] input.select`);
    if (box) box.checked = on;
    this.showBar();
  }

  clear() {
    for (const id of [...this.selected]) this.toggle(id, false);
  }

  showBar() {
    this.bar.hidden = this.selected.size === 0;
    this.count.textContent = `${this.selected.size} selected`;
  }

  /** Shows the cursor on its row (and moves the focus there when `focus`). */
  mark(focus) {
    for (const row of this.rows()) {
      const here = row.dataset.id === this.cursorId;
      row.classList.toggle("cursor", here);
      if (here && focus) row.querySelector("a").focus();
    }
  }

  move(step) {
    const rows = this.rows();
    if (!rows.length) return;
    const at = rows.findIndex((row) => row.dataset.id === this.cursorId);
    const next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
    this.cursorId = rows[next].dataset.id;
    this.mark(true);
  }

  /** The conversation a single-key action is for: the row under the cursor, else the open one. */
  target() { return this.cursorId ?? this.inbox.openId; }

  async change(ids, body) {
    const failed = [];
    await Promise.all(ids.map((id) => api("PATCH", `/api/conversations/${id}`, body).catch((error) => failed.push(error))));
    replace(this.notice, failed.length ? errorBox(failed[0]) : null);
    this.inbox.scheduleRefresh();
    return failed.length === 0;
  }

  async bulk(body) {
    const ids = [...this.selected];
    const asked = await body();
    if (ids.length && asked && await this.change(ids, asked)) this.clear();
  }

  async key(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || !this.inbox.isConnected) return;
    if (editing(event.target) || document.querySelector("dialog[open]")) return;
    if (event.key === "Enter" && event.target.closest?.("a, button")) return; // the focused link opens itself
    const one = this.target();
    const actions = {
      j: () => this.move(1), k: () => this.move(-1), "?": () => showShortcuts(),
      "/": () => document.querySelector("input[type=search], [data-search]")?.focus(),
      Enter: () => this.cursorId && this.inbox.app.navigate(this.inbox.href({}, this.cursorId)),
      x: () => this.cursorId && this.toggle(this.cursorId, !this.selected.has(this.cursorId)),
      e: () => one && this.change([one], {resolved: true}),
      a: () => one && this.change([one], {assigneeId: this.me}),
      l: async () => { const name = one && await pickLabel(); if (name) this.change([one], {addLabels: [name]}); },
    };
    const run = actions[event.key];
    if (!run) return;
    event.preventDefault();
    await run();
  }
}
