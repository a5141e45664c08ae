// One conversation: the transcript (notes, operator-only conversations and the AI agent's replies marked,
// the agent's answer streaming in as it comes, quotes, ratings, reactions), the composer (reply or
// internal note, with @mentions of the team and canned responses by "/shortcut"), resolve/reopen, spam, pausing the agent, the read receipt
// sent once the operator sees the visitor's latest message, the operator's typing shown to the visitor,
// and the visitor's profile. The team's workflow: assignee ("Assign to me"), team, labels, priority and
// snooze, each change sent with the version the operator saw (If-Match): a change someone else made
// meanwhile is shown, never overwritten. Opened with `asOf`, it shows the conversation as it was
// then: read only.

import {api, get, versioned} from "../api.js";
import {Page} from "../page.js";
import {customer, customerName} from "../customers.js";
import {errorBox, h, replace, time, tinted} from "../dom.js";
import {AttachmentPicker, attachmentsView} from "../attachments.js";
import {richText} from "../rich-text.js";
import {emojiPicker} from "../../core/emoji-picker.js";

const REACTIONS = ["👍", "❤️", "😂", "🎉", "😮", "😢"];
const RATINGS = {happy: "😊 Happy", neutral: "😐 Neutral", unhappy: "☹️ Unhappy"};
const MENTION = /(^|\s)@([^\s@]*)$/;
const CANNED = /(^|\s)\/([\w-]*)$/; // "/" and a shortcut's start, at the start of a word
const MENU_SIZE = 8;
const TYPING_EVERY_MS = 3000;  // the widget hides "typing…" 6 s after the last one
const PRIORITIES = [["none", "No priority"], ["low", "Low"], ["medium", "Medium"], ["high", "High"], ["urgent", "Urgent"]];
const HOUR = 3600 * 1000;
const SNOOZES = [["", "Not snoozed"], ["1h", "For 1 hour"], ["4h", "For 4 hours"], ["tomorrow", "Until tomorrow 9:00"],
                 ["week", "For a week"], ["visitor", "Until the visitor writes"]];

/** The end of a snooze choice, as an ISO time (null: until the visitor writes). */
function snoozeEnd(choice) {
  if (choice === "visitor") return null;
  if (choice === "tomorrow") {
    const at = new Date();
    at.setDate(at.getDate() + 1);
    at.setHours(9, 0, 0, 0);
    return at.toISOString();
  }
  return new Date(Date.now() + {"1h": HOUR, "4h": 4 * HOUR, week: 7 * 24 * HOUR}[choice]).toISOString();
}

class ParleyConversation extends Page {
  connectedCallback() {
    this.setAttribute("aria-label", "Conversation");
    this.setAttribute("role", "region");
    this.listen("message.created", (detail) => {
      if (!this.ready || detail.conversationId !== this.conversationId || this.messages.has(detail._id)) return;
      this.messages.set(detail._id, detail);
      this.show(this.messageView(detail));
      this.markRead();
    });
    // the agent's answer as it is written: live frames, replaced by the stored message once it exists
    this.listen("message.delta", (detail) => {
      if (!this.ready || detail.conversationId !== this.conversationId || this.messages.has(detail.messageId)) return;
      let streaming = this.transcript.querySelector(`[data-id="${detail.messageId}"] .content`);
      if (!streaming) {
        this.show(this.messageView({_id: detail.messageId, author: "agent", from: "operator", content: "",
                                    creationTime: new Date().toISOString(), reactions: []}));
        streaming = this.transcript.querySelector(`[data-id="${detail.messageId}"] .content`);
      }
      streaming.append(detail.delta);
    });
    this.listen("agent.typing", (detail) => {
      if (this.ready && detail.conversationId === this.conversationId) this.typing.hidden = !detail.typing;
    });
    // the visitor's typing fades by itself too: the widget repeats `true` every 3 s while they type
    this.listen("visitor.typing", (detail) => {
      if (!this.ready || detail.conversationId !== this.conversationId) return;
      clearTimeout(this.visitorTypingTimer);
      this.visitorTyping.hidden = !detail.typing;
      if (detail.typing) this.visitorTypingTimer = setTimeout(() => { this.visitorTyping.hidden = true; }, 6000);
    });
    this.listen("MESSAGE_UPDATED_EVENT", (detail) => {
      const message = this.messages.get(detail.messageId);
      if (!this.ready || detail.conversationId !== this.conversationId || !message) return;
      for (const key of ["rating", "ratingTime", "operatorRating", "operatorRatingTime", "reactions", "content",
                         "contentHtml", "editedAt", "deleted"]) {
        if (key in detail) message[key] = detail[key];
      }
      this.transcript.querySelector(`[data-id="${message._id}"]`)?.replaceWith(this.messageView(message));
    });
    this.listen("cannedresponse.changed", () => { this.cannedResponses = null; }); // read again when "/" is typed
    this.listen("conversation.updated", (detail) => {
      if (!this.ready || detail.conversationId !== this.conversationId) return;
      const workflow = ["assigneeId", "teamId", "labelsAdded", "labelsRemoved", "priority", "snoozed"];
      if (workflow.some((key) => key in detail)) {
        this.reload(); // someone changed it: the record, with its new version, from the API
        return;
      }
      for (const key of ["resolved", "spam", "agentPaused"]) if (detail[key] != null) this.record[key] = detail[key];
      this.renderHeader();
    });
  }

  async open(conversationId, backHref, asOf = null) {
    if (!conversationId) {
      this.conversationId = null;
      this.ready = false;
      delete this.dataset.ready;
      replace(this, h("p", {class: "empty"}, "Choose a conversation."));
      return;
    }
    if (conversationId === this.conversationId && asOf === this.asOf) return;
    this.ready = false;
    delete this.dataset.ready;
    this.conversationId = conversationId;
    this.asOf = asOf;
    const past = asOf ? {asOf} : {};
    this.backHref = backHref;
    this.messages = new Map();
    this.replyTo = null;
    this.cannedResponses = null; // read when the "/" menu first opens
    replace(this, h("p", {class: "empty", "aria-busy": "true"}, "Loading…"));
    let record, messages, visitor, agent;
    // the website's agent asked beside the rest: the conversation is nearly always the chosen website's
    const guessed = this.app.website?._id;
    const guessedAgent = this.agentOf(guessed);
    guessedAgent.catch(() => {});
    try {
      let read;
      const conversationPath = `/api/conversations/${conversationId}${asOf ? `?${new URLSearchParams(past)}` : ""}`;
      [read, messages, this.teams, this.labels] = await Promise.all([
        versioned("GET", conversationPath),
        get("/api/messages", {conversationId, limit: 0, ...past}), get("/api/teams"), get("/api/labels")]);
      record = read.body;
      this.etag = read.etag;
      [visitor, agent] = await Promise.all([customer(record.customerId),
        record.websiteId === guessed ? guessedAgent : this.agentOf(record.websiteId)]);
    } catch (error) {
      replace(this, errorBox(error));
      return;
    }
    if (conversationId !== this.conversationId || asOf !== this.asOf) return;
    this.record = record;
    this.visitor = visitor;
    this.hasAgent = Boolean(agent?.enabled);
    for (const message of messages) this.messages.set(message._id, message);
    this.render();
    this.dataset.ready = conversationId; // its messages on screen (and its composer, unless in the past)
    if (asOf) return; // the past: neither live nor read by opening it
    this.ready = true;
    this.markRead();
  }

  /** The website's AI agent, or null when it has none (the API answers 404). */
  async agentOf(websiteId) {
    const website = this.app.websites.find((w) => w._id === websiteId);
    if (!website) return null;
    try {
      return await get(`/api/websites/${encodeURIComponent(website.websiteName)}/agent`);
    } catch (error) {
      if (error.status === 404) return null;
      throw error;
    }
  }

  render() {
    this.header = h("header", {class: "conversation-header"});
    // the log is a wrapper: an `ol` with role=log would no longer be a list, and its items would sit outside one
    this.transcript = h("ol", {class: "messages"}, [...this.messages.values()].map((m) => this.messageView(m)));
    this.composer = this.asOf ? h("p", {class: "past-notice", role: "status"}, h("strong", null, "Read only: "),
      `as it was at ${new Date(this.asOf).toLocaleString()}.`) : this.composerView();
    this.typing = h("p", {class: "typing", hidden: true, role: "status"}, "The AI agent is writing…");
    this.visitorTyping = h("p", {class: "typing visitor-typing", hidden: true, role: "status"}, "The visitor is typing…");
    replace(this, h("div", {class: "conversation-main"}, this.header,
      h("div", {class: "transcript", role: "log", "aria-label": "Messages"}, this.transcript), this.typing,
      this.visitorTyping, this.composer),
      this.profileView());
    this.renderHeader();
    this.transcript.lastElementChild?.scrollIntoView({block: "nearest"});
  }

  /** The record and its version again (another operator changed it). */
  async reload() {
    const asked = this.conversationId;
    const read = await versioned("GET", `/api/conversations/${asked}`).catch(() => null);
    if (!read || asked !== this.conversationId) return;
    this.record = read.body;
    this.etag = read.etag;
    this.renderHeader();
  }

  renderHeader() {
    const {resolved, spam, operatorOnly, agentPaused} = this.record;
    replace(this.header,
      h("a", {class: "back", href: this.backHref}, "← Inbox"),
      h("h2", null, customerName(this.visitor, this.record.customerId)),
      operatorOnly && h("span", {class: "badge internal"}, "Operators only: the visitor never sees it"),
      this.asOf ? h("span", {class: "badge"}, resolved ? "Resolved then" : "Open then") : h("div", {class: "actions"},
        h("button", {type: "button", id: "resolve", onclick: () => this.setFlags({resolved: !resolved})},
          resolved ? "Reopen" : "Resolve"),
        h("button", {type: "button", id: "spam", class: "secondary", onclick: () => {
          if (spam || confirm("Mark this conversation as spam? It leaves the inbox's tabs for Spam, "
                              + "where \"Not spam\" brings it back.")) this.setFlags({spam: !spam});
        }}, spam ? "Not spam" : "Mark as spam"),
        this.hasAgent && h("button", {type: "button", id: "agent", class: "secondary",
          onclick: () => this.setFlags({agentPaused: !agentPaused})}, agentPaused ? "Resume AI agent" : "Pause AI agent")),
      this.workflowView(),
      this.flagError ?? null);
  }

  /** Assignee, team, labels, priority and snooze: each a control that changes it at once. */
  workflowView() {
    const record = this.record;
    const me = this.app.me._id;
    const operators = this.app.operators.filter((o) => o.status === "active");
    const select = (id, label, value, options, change) => {
      const control = h("select", {id, onchange: () => change(control.value)},
        options.map(([key, text]) => h("option", {value: key}, text)));
      control.value = value;
      return h("label", {class: "workflow-field"}, h("span", null, label), control);
    };
    const snoozeValue = record.snoozed ? (record.snoozedUntil ? "until" : "visitor") : "";
    const snoozeOptions = record.snoozedUntil ? [["until", `Until ${new Date(record.snoozedUntil).toLocaleString()}`],
                                                 ...SNOOZES] : SNOOZES;
    return h("div", {class: "workflow", role: "group", "aria-label": "Assignment, labels, priority and snooze"},
      select("assignee", "Assignee", record.assigneeId ?? "",
        [["", "Unassigned"], ...operators.map((o) => [o._id, o.displayName ?? o.email])],
        (value) => this.setFlags({assigneeId: value || null}, true)),
      record.assigneeId !== me && h("button", {type: "button", id: "assign-to-me", class: "secondary",
        onclick: () => this.setFlags({assigneeId: me}, true)}, "Assign to me"),
      select("team", "Team", record.teamId ?? "", [["", "No team"], ...this.teams.map((t) => [t._id, t.name])],
        (value) => this.setFlags({teamId: value || null}, true)),
      select("priority", "Priority", record.priority, PRIORITIES, (value) => this.setFlags({priority: value}, true)),
      select("snooze", "Snooze", snoozeValue, snoozeOptions, (value) => {
        if (value === "until") return;
        this.setFlags(value === "visitor" ? {snoozed: true} : value ? {snoozedUntil: snoozeEnd(value)} : {snoozed: false},
                      true);
      }),
      this.labels.length ? h("fieldset", {class: "labels"}, h("legend", null, "Labels"),
        this.labels.map((l) => {
          const box = h("input", {type: "checkbox", value: l.name, checked: record.labels.includes(l.name),
            onchange: () => this.setFlags(box.checked ? {addLabels: [l.name]} : {removeLabels: [l.name]})});
          return h("label", {class: "label-choice"}, box, tinted(h("span", {class: "label-dot"}), l.color), l.name);
        })) : null);
  }

  /**
   * A change; `guarded` ones (who owns it, its priority, its snooze) only on the version shown: if someone
   * changed the conversation since, it is shown instead. Resolving and labels apply whatever changed.
   * The operator's own changes go one after the other, each on the version the previous one left.
   */
  setFlags(flags, guarded = false) {
    this.changing = (this.changing ?? Promise.resolve()).then(() => this.change(flags, guarded));
    return this.changing;
  }

  async change(flags, guarded) {
    try {
      const done = await versioned("PATCH", `/api/conversations/${this.conversationId}`, flags,
                                   guarded ? this.etag : undefined);
      this.record = done.body;
      this.etag = done.etag;
      this.flagError = null;
    } catch (error) {
      this.flagError = errorBox(error.status === 412
        ? "Someone else changed this conversation meanwhile: here it is as it is now. Nothing of yours was applied."
        : error);
      if (error.status === 412) await this.reload();
    }
    this.renderHeader();
  }

  /** The read receipt: the visitor's latest message, once the operator has it on screen. */
  async markRead() {
    // sent even when a colleague's receipt marked it read: it also records how far this operator has read
    const latest = [...this.messages.values()].filter((m) => m.from === "customer" && !m.internal).at(-1);
    if (!latest || this.readUpTo === latest._id || document.visibilityState === "hidden") return;
    this.readUpTo = latest._id;
    try {
      await api("POST", `/api/messages/${latest._id}/read`);
      latest.read = true;
      // a receipt is not pushed on the realtime stream: the inbox is told here, to update its Unread tab
      this.dispatchEvent(new CustomEvent("conversation-read", {bubbles: true}));
    } catch {
      this.readUpTo = null;
    }
  }

  /** Adds a message's element, in place of its streaming one if the agent was writing it. */
  show(element) {
    const existing = this.transcript.querySelector(`[data-id="${element.dataset.id}"]`);
    if (existing) existing.replaceWith(element);
    else this.transcript.append(element);
    element.scrollIntoView({block: "nearest"});
  }

  messageView(message) {
    const quoted = message.replyToMessageId && this.messages.get(message.replyToMessageId);
    const agent = message.author === "agent";
    // the operator who wrote a reply or a note (an API key's message names nobody: the team)
    const operator = message.operator;
    const author = operator && (operator.displayName || "Team");
    const who = message.internal ? (author ? `Internal note by ${author}` : "Internal note") : message.from === "customer"
      ? customerName(this.visitor, this.record.customerId) : agent ? "AI agent" : author || "Team";
    const kind = message.internal ? "note" : agent ? "operator agent" : message.from;
    return h("li", {class: `message ${kind}`, "data-id": message._id},
      h("article", {"aria-label": `${who}, ${new Date(message.creationTime).toLocaleString()}`},
        h("div", {class: "meta"},
          operator && h("img", {class: "avatar", src: operator.avatarUrl, alt: "", width: 20, height: 20}),
          h("span", {class: "who"}, who), " ", time(message.creationTime),
          message.from === "customer" && !message.internal && message.read && h("span", {class: "seen"}, " · Seen"),
          message.editedAt && !message.deleted && h("span", {class: "edited"}, " · Edited")),
        quoted && h("blockquote", {class: "quote"}, quoted.content.slice(0, 200)),
        message.deleted ? h("p", {class: "content removed"}, "Message removed") : [
          // an empty text is still shown, but for a message of files only: the agent's answer streams into it
          (message.content || !message.attachments?.length) && richText(message, {class: "content"}),
          attachmentsView(message.attachments)],
        message.incomplete && h("p", {class: "notice"}, "The agent's answer was cut short."),
        message.rating && h("p", {class: "rating"}, "Visitor rated ", RATINGS[message.rating] ?? message.rating),
        message.operatorRating && h("p", {class: "rating"}, "Team rated ",
          RATINGS[message.operatorRating] ?? message.operatorRating),
        this.reactionsView(message),
        !this.asOf && !message.deleted && h("div", {class: "message-actions"},
          h("button", {type: "button", class: "link", onclick: () => this.quote(message)}, "Quote"),
          this.reactionPicker(message), this.changeActions(message))));
  }

  /** Edit and Delete on the signed-in operator's own messages (an admin's: any); the server holds the
   * edit window and answers 403 outside it. */
  changeActions(message) {
    const own = message.operator?.operatorId === this.app.me._id;
    if (!own && !this.app.hasRole("admin")) return null;
    return [h("button", {type: "button", class: "link", onclick: () => this.editMessage(message)}, "Edit"),
            h("button", {type: "button", class: "link", onclick: () => this.deleteMessage(message)}, "Delete")];
  }

  editMessage(message) {
    const view = this.transcript.querySelector(`[data-id="${message._id}"]`);
    const box = h("textarea", {class: "edit-box", rows: "3", "aria-label": "Edit message", value: message.content});
    const status = h("p", {class: "notice", role: "status"});
    const done = (changed) => view?.replaceWith(this.messageView(changed ?? message));
    const save = async () => {
      try {
        done(this.remember(await api("PATCH", `/api/messages/${message._id}`, {content: box.value.trim()})));
      } catch (error) { replace(status, error.message); }
    };
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") done();
      else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); save(); }
    });
    view?.querySelector(".content")?.replaceWith(h("div", {class: "editing"}, box,
      h("button", {type: "button", onclick: save}, "Save"),
      h("button", {type: "button", class: "secondary", onclick: () => done()}, "Cancel"), status));
    box.focus();
  }

  async deleteMessage(message) {
    if (!window.confirm("Delete this message for everyone? The visitor will see \u201cMessage removed\u201d.")) return;
    try {
      const deleted = this.remember(await api("DELETE", `/api/messages/${message._id}`));
      this.transcript.querySelector(`[data-id="${message._id}"]`)?.replaceWith(this.messageView(deleted));
    } catch (error) { window.alert(error.message); }
  }

  remember(message) {
    this.messages.set(message._id, message);
    return message;
  }

  reactionsView(message) {
    const byEmoji = new Map();
    for (const reaction of message.reactions ?? []) {
      const entry = byEmoji.get(reaction.emoji) ?? {count: 0, mine: false, visitor: false};
      entry.count += 1;
      entry.mine ||= reaction.from === "operator" && reaction.personId === this.app.me._id;
      entry.visitor ||= reaction.from === "customer";
      byEmoji.set(reaction.emoji, entry);
    }
    if (!byEmoji.size) return null;
    return h("ul", {class: "reactions", "aria-label": "Reactions"}, [...byEmoji].map(([emoji, entry]) =>
      h("li", null, h("button", {type: "button", class: "reaction", "aria-pressed": String(entry.mine),
        title: entry.visitor ? "Includes the visitor's reaction" : null,
        onclick: () => this.react(message, entry.mine ? null : emoji)}, emoji, " ", String(entry.count)))));
  }

  reactionPicker(message) {
    const menu = h("div", {class: "reaction-menu", hidden: true, role: "group", "aria-label": "Pick a reaction"},
      REACTIONS.map((emoji) => h("button", {type: "button", "aria-label": `React ${emoji}`,
        onclick: () => this.react(message, emoji)}, emoji)));
    const toggle = h("button", {type: "button", class: "link", "aria-expanded": "false", onclick: () => {
      menu.hidden = !menu.hidden;
      toggle.setAttribute("aria-expanded", String(!menu.hidden));
      if (!menu.hidden) menu.querySelector("button").focus();
    }}, "React");
    menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { menu.hidden = true; toggle.setAttribute("aria-expanded", "false"); toggle.focus(); }
    });
    return h("span", {class: "react"}, toggle, menu);
  }

  async react(message, emoji) {
    try {
      const updated = await api("POST", `/api/messages/${message._id}/reaction/operator`, {emoji});
      this.messages.set(updated._id, updated);
      this.transcript.querySelector(`[data-id="${updated._id}"]`)?.replaceWith(this.messageView(updated));
    } catch (error) {
      this.composerStatus.replaceChildren(errorBox(error));
    }
  }

  quote(message) {
    this.replyTo = message;
    replace(this.quoting, h("span", null, "Quoting: ", message.content.slice(0, 80)),
      h("button", {type: "button", class: "link", onclick: () => { this.replyTo = null; replace(this.quoting); }},
        "Cancel quote"));
    this.textarea.focus();
  }

  composerView() {
    this.textarea = h("textarea", {id: "composer-text", rows: "3", "aria-label": "Message",
      placeholder: "Write a reply… (Enter sends, Shift+Enter adds a line, @ mentions a teammate, / inserts a canned response)",
      "aria-autocomplete": "list", "aria-controls": "mentions"});
    this.suggestions = h("ul", {id: "mentions", role: "listbox", class: "mentions", hidden: true,
      "aria-label": "Mention a teammate"});
    this.quoting = h("div", {class: "quoting", "aria-live": "polite"});
    this.composerStatus = h("div", {"aria-live": "polite"});
    const mode = (value, label, checked) => h("label", {class: "mode"},
      h("input", {type: "radio", name: "mode", value, checked, onchange: () => this.modeChanged()}), label);
    const picker = emojiPicker(this.textarea, "composer");
    const form = h("form", {class: "composer", onsubmit: (event) => { event.preventDefault(); this.send(form); }},
      h("fieldset", {class: "modes"}, h("legend", {class: "visually-hidden"}, "Send as"),
        mode("reply", "Reply to the visitor", true), mode("note", "Internal note", false)),
      this.quoting, this.textarea, this.suggestions, picker.panel);
    this.picker = new AttachmentPicker(form, this.textarea, this.composerStatus);
    form.append(this.picker.list, h("div", {class: "composer-actions"}, this.picker.input, this.picker.button,
      picker.button, h("button", {type: "submit", id: "send"}, "Send")), this.composerStatus);
    this.textarea.addEventListener("input", () => { this.suggest(); this.typed(); });
    this.textarea.addEventListener("blur", () => this.stopTyping());
    this.textarea.addEventListener("keydown", (event) => this.composerKey(event, form));
    return form;
  }

  modeChanged() {
    const note = this.composer.querySelector("input[value=note]").checked;
    this.composer.classList.toggle("note", note);
    this.textarea.placeholder = note ? "Write an internal note… the visitor never sees it" : "Write a reply…";
  }

  /** The menu under the caret: teammates after "@", canned responses after "/" (a listbox the textarea controls). */
  async suggest() {
    const before = this.textarea.value.slice(0, this.textarea.selectionStart);
    const mention = MENTION.exec(before);
    const canned = !mention && CANNED.exec(before);
    let options = [];
    if (mention) {
      const typed = mention[2].toLowerCase();
      options = this.app.operators.filter((o) => o.email.startsWith(typed)).slice(0, MENU_SIZE).map((operator) => ({
        attributes: {"data-email": operator.email}, label: operator.email, pick: () => this.mention(operator.email)}));
    } else if (canned) {
      const typed = canned[2].toLowerCase();
      this.cannedResponses ??= get("/api/cannedresponses").catch(() => []);
      const responses = await this.cannedResponses;
      if (this.textarea.value.slice(0, this.textarea.selectionStart) !== before) return; // typed on meanwhile
      options = responses.filter((r) => r.shortcut.startsWith(typed)).slice(0, MENU_SIZE).map((response) => ({
        attributes: {"data-canned": response._id},
        label: [h("span", {class: "canned-shortcut"}, `/${response.shortcut}`),
                h("span", {class: "canned-preview"}, response.content.split("\n")[0].slice(0, 80))],
        pick: () => this.insertCanned(response)}));
    }
    this.menu = options;
    this.active = 0;
    this.suggestions.hidden = !options.length;
    this.suggestions.setAttribute("aria-label", canned ? "Insert a canned response" : "Mention a teammate");
    replace(this.suggestions, options.map((option, index) => h("li", {role: "option", id: `suggestion-${index}`,
      "aria-selected": String(index === 0), ...option.attributes,
      onmousedown: (event) => { event.preventDefault(); option.pick(); }}, option.label)));
    if (options.length) this.textarea.setAttribute("aria-activedescendant", "suggestion-0");
    else this.textarea.removeAttribute("aria-activedescendant");
  }

  closeMenu() {
    this.suggestions.hidden = true;
    this.textarea.removeAttribute("aria-activedescendant");
  }

  /** The text before the caret with `pattern`'s match replaced by `text`; the caret after it. */
  insertAtCaret(pattern, text) {
    const caret = this.textarea.selectionStart;
    const before = this.textarea.value.slice(0, caret).replace(pattern, (_, space) => `${space}${text}`);
    this.textarea.value = before + this.textarea.value.slice(caret);
    this.textarea.setSelectionRange(before.length, before.length);
    this.closeMenu();
    this.textarea.focus();
  }

  mention(email) {
    this.insertAtCaret(MENTION, `@${email} `);
  }

  /** The response's text, its placeholders filled: the visitor's name (or e-mail address), and yours. */
  insertCanned(response) {
    const visitor = this.visitor?.nickname || this.visitor?.email || "there";
    const operator = this.app.me.displayName || this.app.me.email;
    this.insertAtCaret(CANNED, response.content.replaceAll("{{visitor.name}}", visitor)
      .replaceAll("{{operator.name}}", operator));
    this.typed();
  }

  composerKey(event, form) {
    const options = [...this.suggestions.children];
    if (!this.suggestions.hidden && options.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        this.active = (this.active + (event.key === "ArrowDown" ? 1 : options.length - 1)) % options.length;
        options.forEach((option, index) => option.setAttribute("aria-selected", String(index === this.active)));
        this.textarea.setAttribute("aria-activedescendant", options[this.active].id);
        options[this.active].scrollIntoView({block: "nearest"});
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        this.menu[this.active].pick();
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeMenu();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  }

  /** The visitor sees "typing…": told at most every 3 s while the operator writes a reply (not a note). */
  typed() {
    const note = this.composer.querySelector("input[value=note]").checked;
    if (note || !this.textarea.value.trim() || Date.now() - (this.typingSince ?? 0) < TYPING_EVERY_MS) return;
    this.typingSince = Date.now();
    this.sendTyping(true);
  }

  stopTyping() {
    if (!this.typingSince) return;
    this.typingSince = 0;
    this.sendTyping(false);
  }

  sendTyping(typing) {
    // ephemeral: a lost one only means the indicator shows a little late or fades by itself
    api("POST", `/api/conversations/${this.conversationId}/typing`, {typing}).catch(() => {});
  }

  async send(form) {
    const content = this.textarea.value.trim();
    const attachmentIds = this.picker.ids();
    if ((!content && !attachmentIds.length) || this.picker.busy) return;
    this.stopTyping();
    const internal = form.querySelector("input[value=note]").checked;
    const button = form.querySelector("#send");
    button.disabled = true;
    try {
      const message = await api("POST", "/api/messages", {conversationId: this.conversationId, content,
        from: "operator", internal, attachmentIds,
        ...(this.replyTo ? {replyToMessageId: this.replyTo._id} : {})});
      this.textarea.value = "";
      this.picker.clear();
      this.replyTo = null;
      replace(this.quoting);
      replace(this.composerStatus);
      if (!this.messages.has(message._id)) {
        this.messages.set(message._id, message);
        this.show(this.messageView(message));
      }
    } catch (error) {
      replace(this.composerStatus, errorBox(error));
    } finally {
      button.disabled = false;
      this.textarea.focus();
    }
  }

  profileView() {
    const visitor = this.visitor ?? {};
    const rows = [["E-mail", visitor.email], ["E-mail (unverified: typed by the visitor)", visitor.unverifiedEmail],
                  ["Name", visitor.nickname], ["Phone", visitor.phone],
                  ["Language", visitor.language], ["User id", visitor.userId],
                  ["First seen", visitor.createdAt && new Date(visitor.createdAt).toLocaleString()],
                  ["Conversation started", new Date(this.record.createdAt).toLocaleString()]];
    const metadata = Object.entries(this.record.metadata ?? {});
    const history = h("div", {"aria-live": "polite"});
    return h("aside", {class: "profile", "aria-label": "Visitor"},
      h("h3", null, "Visitor"),
      h("dl", null, rows.filter(([, value]) => value).map(([label, value]) => [h("dt", null, label), h("dd", null, value)])),
      h("h3", null, "Metadata"),
      metadata.length ? h("dl", {class: "metadata"}, metadata.map(([key, value]) =>
        [h("dt", null, key), h("dd", null, typeof value === "string" ? value : JSON.stringify(value))]))
        : h("p", {class: "empty"}, "None set by the visitor's page."),
      h("h3", null, "History"),
      h("button", {type: "button", class: "secondary", id: "show-history", onclick: () => this.showHistory(history)},
        "Who did what"), history);
  }

  /** The audit trail (`GET /api/conversations/{id}/history`): each change, when, and by whom. */
  async showHistory(into) {
    const emails = new Map(this.app.operators.map((o) => [o._id, o.email]));
    const by = (actor) => actor.kind === "operator" ? emails.get(actor.id) ?? "an operator"
      : {customer: "the visitor", apikey: "an API key"}[actor.kind] ?? `a ${actor.kind}`;
    try {
      const trail = await get(`/api/conversations/${this.conversationId}/history`);
      replace(into, h("ol", {class: "history"}, trail.entries.map((entry) => h("li", null,
        time(entry.at), " ", entry.type.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase(),
        entry.actor && [" by ", by(entry.actor)]))));
    } catch (error) {
      replace(into, errorBox(error));
    }
  }
}

customElements.define("parley-conversation", ParleyConversation);
