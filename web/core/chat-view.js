// The chat both surfaces draw: the transcript (a live region) and the composer, built with the dashboard's
// own element builder from text, and from the server's sanitized `contentHtml` only through richText.

import { h } from "../app/dom.js";
import { richText } from "../app/rich-text.js";
import { emojiPicker } from "./emoji-picker.js";

const RATINGS = [["unhappy", "\u{1F641}"], ["neutral", "\u{1F610}"], ["happy", "\u{1F642}"]];
const EMOJIS = ["\u{1F44D}", "\u2764\uFE0F", "\u{1F602}"];
let ids = 0;

// `compact` leaves out ratings and reactions.
export function chatView(core, compact) {
  const id = "parley-" + ++ids;
  const log = h("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation", tabindex: "0" });
  const typing = h("p", { class: "typing", role: "status", hidden: true });
  const box = h("textarea", { id: id + "-box", rows: "1", placeholder: "Write a message\u2026" });
  const picker = emojiPicker(box, id);
  const form = h("form", { class: "composer" },
    h("label", { for: id + "-box", class: "visually-hidden" }, "Message"), box, picker.button,
    h("button", { type: "submit", class: "send" }, "Send"));
  const submit = () => {
    const content = box.value.trim();
    if (!content) return;
    box.value = "";
    core.send(content).catch((e) => { box.value = content; core.warn("sending failed: " + e.message); core.emit("error", e); });
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); submit(); }
  });

  function message(m, draft) {
    const mine = m.from === "customer";
    // a draft is the agent's answer as it streams: busy, so screen readers read it once it is whole
    const item = h("div", { class: "msg " + (mine ? "mine" : "team") + (draft ? " draft" : ""), "data-id": m._id,
      "aria-busy": draft ? "true" : null },
      m.deleted ? h("p", { class: "text removed" }, "Message removed") : richText(m, { class: "text" }));
    // a team member's reply names them (the AI agent's and an API key's name nobody)
    const who = !mine && m.operator;
    if (who) item.prepend(h("p", { class: "author" },
      h("img", { class: "avatar", src: core.state.base + who.avatarUrl, alt: "", width: "20", height: "20" }),
      who.displayName || "Team"));
    if (!mine && !compact && !draft) {
      item.append(h("div", { class: "feedback" },
        ...RATINGS.map(([rating, face]) => h("button", {
          type: "button", class: "rate", "aria-label": "Rate this reply " + rating, "aria-pressed": String(m.rating === rating),
          onclick: () => core.rate(m, rating).catch((e) => core.warn("rating failed: " + e.message)) }, face)),
        ...EMOJIS.map((emoji) => {
          const mineReaction = (m.reactions || []).some((r) => r.from === "customer" && r.emoji === emoji);
          return h("button", {
            type: "button", class: "react", "aria-label": "React " + emoji, "aria-pressed": String(mineReaction),
            onclick: () => core.react(m, mineReaction ? null : emoji).catch((e) => core.warn("reacting failed: " + e.message)) }, emoji);
        })));
    }
    const shown = (m.reactions || []).map((r) => r.emoji).join(" ");
    if (shown) item.append(h("p", { class: "reactions" }, shown));
    return item;
  }

  function offer(o) {
    const done = o.status === "done";
    return h("div", { class: "msg team offer", "data-tool-call-id": o.toolCallId },
      h("button", { type: "button", class: "action", disabled: o.status !== "offered", "aria-label": done ? o.label + " (done)" : null,
        onclick: () => core.act(o) }, (done ? "\u2713 " : "") + o.label));
  }

  function render() {
    const { messages, offers, drafts } = core.state;
    const sorted = [...messages.values()].sort((a, b) => (a.creationTime < b.creationTime ? -1 : a.creationTime > b.creationTime ? 1 : 0));
    const after = (id) => [...offers.values()].filter((o) => (messages.has(o.after) ? o.after : null) === id).map(offer);
    const items = [...after(null), ...sorted.flatMap((m) => [message(m), ...after(m._id)]),
                   ...[...drafts.values()].map((d) => message(d, true))];
    log.replaceChildren(...(items.length ? items : [h("p", { class: "empty" }, "Ask us anything. We usually answer within minutes.")]));
    log.scrollTop = log.scrollHeight;
  }
  core.on("messages", render);
  core.on("delta", (id) => {
    const bubble = [...log.children].find((e) => e.dataset.id === id);
    if (!bubble) return render();
    bubble.firstChild.textContent = core.state.drafts.get(id).content;
    log.scrollTop = log.scrollHeight;
  });
  core.on("typing", () => {
    const { typing: team, agentTyping } = core.state;
    typing.hidden = !team && !agentTyping;
    typing.textContent = team ? "The team is typing\u2026" : "The assistant is typing\u2026";
  });
  render();
  return { root: h("div", { class: "chat" }, log, typing, picker.panel, form), focus: () => box.focus(), log };
}
