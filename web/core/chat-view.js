// The chat both surfaces draw: the transcript (a live region) and the composer, built from text only
// (never markup, but the server's sanitized `contentHtml` through richText) with the dashboard's own element builder. Every word comes from the visitor's catalogue
// (core/i18n.js), and is drawn again when the language or the website's settings change.

import { h } from "../app/dom.js";
import { attachControl, filesView } from "./attachments.js";
import { richText } from "../app/rich-text.js";
import { emojiPicker } from "./emoji-picker.js";

// the satisfaction prompt's faces, in the order they are offered; the words are the catalogue's
const RATINGS = [["unhappy", "\u{1F641}"], ["neutral", "\u{1F610}"], ["happy", "\u{1F642}"]];
const EMOJIS = ["\u{1F44D}", "\u2764\uFE0F", "\u{1F602}"];
const TICK_MS = 30000;  // how often "2 minutes ago" is brought up to date
let ids = 0;

/** The team's reply to rate: the last one a person of the team wrote (the AI agent's are not rated). */
export function ratedMessage(messages) {
  return [...messages.values()].filter((m) => m.from === "operator" && m.author === "operator")
    .sort((a, b) => (a.creationTime < b.creationTime ? -1 : 1)).pop() || null;
}

export function chatView(core) {
  const id = "parley-" + ++ids;
  const t = (key, values) => core.state.i18n.t(key, values);
  const log = h("div", { class: "log", role: "log", "aria-live": "polite", tabindex: "0" });
  const typing = h("p", { class: "typing", role: "status", hidden: true });
  const offline = h("p", { class: "offline", role: "status", hidden: true });
  const box = h("textarea", { id: id + "-box", rows: "1" });
  const files = attachControl(core, box);
  const picker = emojiPicker(box, id);
  const label = h("label", { for: id + "-box", class: "visually-hidden" });
  const sendButton = h("button", { type: "submit", class: "send" });
  const form = h("form", { class: "composer" }, files.input, files.button, label, box, picker.button, sendButton);
  let openReactions = null;  // the message whose emoji choice is open
  const submit = () => {
    const content = box.value.trim();
    const attachmentIds = files.ids();
    if ((!content && !attachmentIds.length) || files.busy()) return;
    box.value = "";
    files.clear();
    core.send(content, attachmentIds).catch((e) => { core.warn("sending failed: " + e.message); core.emit("error", e); });
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  box.addEventListener("input", () => core.visitorTyping(box.value.trim() !== ""));
  box.addEventListener("blur", () => core.visitorTyping(false));
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); submit(); }
  });

  function stamp(iso) {
    const { i18n } = core.state;
    return h("time", { class: "when", datetime: iso, title: i18n.exact(iso) }, i18n.ago(iso));
  }

  function reactions(m) {
    const mine = (emoji) => (m.reactions || []).some((r) => r.from === "customer" && r.emoji === emoji);
    const open = openReactions === m._id;
    const toggle = h("button", { type: "button", class: "react", "aria-expanded": String(open),
      onclick: () => { openReactions = open ? null : m._id; render(); } }, t("react"));
    const choices = open && h("div", { class: "emojis", role: "group", "aria-label": t("react") },
      ...EMOJIS.map((emoji) => h("button", { type: "button", "aria-label": t("reactWith", { emoji }), "aria-pressed": String(mine(emoji)),
        onclick: () => {
          openReactions = null;
          core.react(m, mine(emoji) ? null : emoji).catch((e) => core.warn("reacting failed: " + e.message));
        } }, emoji)));
    return h("div", { class: "feedback" }, toggle, choices);
  }

  function message(m, draft) {
    const mine = m.from === "customer";
    // a draft is the agent's answer as it streams: busy, so screen readers read it once it is whole
    const item = h("div", { class: "msg " + (mine ? "mine" : "team") + (draft ? " draft" : ""), "data-id": m._id,
      "aria-busy": draft ? "true" : null }, m.deleted ? h("p", { class: "text removed" }, t("removed"))
        : [richText(m, { class: "text", hidden: !m.content && !draft }), filesView(m.attachments)]);
    // a team member's reply names them (the AI agent is the assistant; an API key's reply names nobody)
    const who = !mine && m.operator;
    if (who) item.prepend(h("p", { class: "author" },
      h("img", { class: "avatar", src: core.state.base + who.avatarUrl, alt: "", width: "20", height: "20" }),
      who.displayName || t("team")));
    else if (!mine && m.author === "agent") item.prepend(h("p", { class: "author" }, t("assistant")));
    if (draft) return item;
    const shown = (m.reactions || []).map((r) => r.emoji).join(" ");
    item.append(h("p", { class: "meta" }, stamp(m.creationTime), mine && m.readAt ? h("span", { class: "seen" }, " \u00B7 " + t("seen")) : null,
      shown ? h("span", { class: "reactions" }, shown) : null));
    if (!mine) item.append(reactions(m));
    return item;
  }

  // a message of the visitor's not stored yet: sending, or failed with Retry (sent again on reconnection)
  function outgoing(item) {
    const failed = item.status === "failed";
    return h("div", { class: "msg mine" + (failed ? " failed" : ""), "data-outbox": item.id },
      h("p", { class: "text" }, item.content),
      h("p", { class: "meta" }, failed ? [t("notSent"), " ", h("button", { type: "button", class: "retry",
        onclick: () => core.send(item.content, item.attachmentIds, item).catch((e) => core.warn("sending failed again: " + e.message)) }, t("retry"))]
        : "\u2026"));
  }

  function offer(o) {
    const done = o.status === "done";
    return h("div", { class: "msg team offer", "data-tool-call-id": o.toolCallId },
      h("button", { type: "button", class: "action", disabled: o.status !== "offered", "aria-label": done ? o.label + " (" + t("done") + ")" : null,
        onclick: () => core.act(o) }, (done ? "\u2713 " : "") + o.label));
  }

  // "How did we do?" once the team resolved the conversation: the rating goes on the team's last reply
  function survey() {
    const { resolved, messages, config } = core.state;
    const target = resolved && config.ratings && ratedMessage(messages);
    if (!target) return null;
    if (target.rating) return h("p", { class: "survey thanks", role: "status" }, t("thanks"));
    return h("div", { class: "survey", role: "group", "aria-labelledby": id + "-survey" },
      h("p", { id: id + "-survey" }, t("howDidWeDo")),
      h("div", { class: "faces" }, ...RATINGS.map(([rating, face]) => h("button", { type: "button", class: "face", "data-rating": rating,
        onclick: () => core.rate(target, rating).catch((e) => core.warn("rating failed: " + e.message)) },
        h("span", { "aria-hidden": "true" }, face), h("span", null, t(rating))))));
  }

  function empty() {
    const { config } = core.state;
    const away = !config.open || !config.online;
    const text = away ? config.awayMessage || t("away") : config.welcomeMessage || t("welcome");
    const greeting = h("p", { class: "empty" + (away ? " away" : "") }, text);
    return away ? h("div", { class: "away-box" }, greeting, config.nextOpenAt &&
      h("p", { class: "opens" }, t("opensAt", { when: core.state.i18n.exact(config.nextOpenAt) })), contactForm()) : greeting;
  }

  // While the team is away, the visitor may leave an address to hear back at: kept as their unverified
  // contact (never their identity), as an unsigned `setUserEmail` is.
  function contactForm() {
    if (core.state.contact) return h("p", { class: "contact-saved", role: "status" }, t("emailSaved", { email: core.state.contact }));
    const input = h("input", { type: "email", id: id + "-contact", required: true, autocomplete: "email" });
    return h("form", { class: "contact", onsubmit: (event) => {
      event.preventDefault();
      core.leaveEmail(input.value.trim()).catch((e) => core.warn("saving the address failed: " + e.message));
    } }, h("label", { for: id + "-contact" }, t("leaveEmail")), input, h("button", { type: "submit" }, t("saveEmail")));
  }

  function render() {
    const { messages, offers, drafts, outbox } = core.state;
    const sorted = [...messages.values()].sort((a, b) => (a.creationTime < b.creationTime ? -1 : a.creationTime > b.creationTime ? 1 : 0));
    const after = (id) => [...offers.values()].filter((o) => (messages.has(o.after) ? o.after : null) === id).map(offer);
    const items = [...after(null), ...sorted.flatMap((m) => [message(m), ...after(m._id)]),
                   ...[...drafts.values()].map((d) => message(d, true)), ...[...outbox.values()].map(outgoing)];
    log.replaceChildren(...(items.length ? items : [empty()]), ...[survey()].filter(Boolean));
    log.scrollTop = log.scrollHeight;
  }

  function words() {
    log.setAttribute("aria-label", t("conversation"));
    box.placeholder = t("write");
    label.textContent = t("message");
    sendButton.textContent = t("send");
    offline.textContent = t("offline");
    paintTyping();
    render();
  }

  function paintTyping() {
    const { typing: team, agentTyping } = core.state;
    typing.hidden = !team && !agentTyping;
    typing.textContent = team ? t("teamTyping") : t("agentTyping");
  }

  core.on("messages", render);
  core.on("config", words);
  core.on("delta", (id) => {
    const bubble = [...log.children].find((e) => e.dataset.id === id);
    if (!bubble) return render();
    bubble.lastChild.textContent = core.state.drafts.get(id).content;
    log.scrollTop = log.scrollHeight;
  });
  core.on("typing", paintTyping);
  core.on("connected", (connected) => { offline.hidden = connected || !core.state.token; });
  const ticker = setInterval(() => (log.isConnected ? log.querySelectorAll("time.when").forEach((e) => {
    e.textContent = core.state.i18n.ago(e.getAttribute("datetime"));
  }) : clearInterval(ticker)), TICK_MS);
  words();
  return { root: h("div", { class: "chat" }, offline, log, typing, picker.panel, files.list, form), focus: () => box.focus(), log };
}
