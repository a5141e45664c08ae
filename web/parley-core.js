// What the widget and the mascot share: one visitor session, one command queue, one realtime stream.
// An ES module, so it adds no global; both scripts import it from the same URL, and the browser keeps one
// instance per page, so with both on a page every command is applied once and both surfaces reflect it.
// Text from the network is only ever handed to the surfaces as strings; they render it with textContent.
// Live frames: the AI agent's text as it is written (`message.delta`, kept as a draft until the stored
// `message.created` of the same id replaces it), its typing (`agent.typing`), the team's (`typing`), and
// the actions it offers (`action.offered`, answered with the page's handler and a `parley:action` event).

const STORE = "parley:";
const warn = (text) => console.warn("[parley] " + text);
const TEAM_TYPING_MS = 6000;  // the dashboard repeats `typing` every 3 s while the operator types
let single = null;

export function parley(base) {
  return single || (single = createCore(base));
}

// command -> [argument checks, description]; "s" a string, "s?" a string or nothing, "o" an object,
// "v" any JSON value
const SIGNATURES = {
  setUserId: ["ss", "(id: string, signature: string)"],
  setUserEmail: ["ss", "(email: string, signature: string)"],
  setUserNickname: ["s", "(name: string)"],
  setUserPhone: ["s", "(phone: string)"],
  setMetadata: ["sv", "(key: string, value: string | number | boolean | null)"],
  addReadable: ["o", "({userId, description, value})"],
  removeReadable: ["o", "({userId, description})"],
  addAction: ["o", "({userId, name, description, handler?})"],
  removeAction: ["o", "({userId, name})"],
  openChat: ["", "()"], closeChat: ["", "()"], showChat: ["", "()"], hideChat: ["", "()"],
  sendMessage: ["s", "(content: string)"],
  searchDocuments: ["sS", "(query: string, locale?: string)"],
  setBrandColor: ["s", "(color: string)"],
};

function argumentsFit(checks, args) {
  if (args.length > checks.length) return false;
  return [...checks].every((check, i) => {
    const a = args[i];
    if (check === "s") return typeof a === "string" && a.trim() !== "";
    if (check === "S") return a === undefined || a === null || typeof a === "string";
    if (check === "o") return a !== null && typeof a === "object" && !Array.isArray(a);
    return a === null || ["string", "number", "boolean"].includes(typeof a);
  });
}

function createCore(base) {
  const w = window;
  const mascot = w.PARLEY_MASCOT || {};
  const websiteId = String(w.PARLEY_WEBSITE_ID || mascot.websiteId || "");
  const listeners = {};
  const surfaces = new Set();
  const readables = new Map();
  const actions = new Map();
  const state = {
    websiteId, base, token: null, userId: null, email: null, conversationId: null, messages: new Map(),
    drafts: new Map(), offers: new Map(),
    open: false, shown: true, unread: 0, brandColor: mascot.brandColor || "#4f46e5", help: null,
    connected: false, typing: false, agentTyping: false,
  };
  let pendingMetadata = {};
  let chain = Promise.resolve();
  let starting = null;
  let stream = null;
  let lastEventId = null;
  let contextTimer = 0;
  let typingTimer = 0;

  const emit = (name, data) => (listeners[name] || []).forEach((fn) => fn(data));
  const on = (name, fn) => (listeners[name] = listeners[name] || []).push(fn);

  function load() {
    try { return JSON.parse(w.localStorage.getItem(STORE + websiteId)) || {}; } catch (e) { return {}; }
  }
  function save() {
    try {
      w.localStorage.setItem(STORE + websiteId, JSON.stringify({ token: state.token, userId: state.userId,
                                                                   email: state.email }));
    } catch (e) { /* storage refused (private mode): the session lasts as long as the page */ }
  }

  async function call(method, path, body, auth = true) {
    const headers = {};
    if (auth) headers.Authorization = "ChatSession " + (await session());
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const error = new Error((data && data.detail) || response.status + " from " + path);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  // --- the session: kept per website, started when first needed, dropped when the user changes

  function session() {
    if (state.token) return Promise.resolve(state.token);
    return starting || (starting = begin({}).finally(() => { starting = null; }));
  }

  async function begin(identity) {
    const started = await call("POST", "/api/chat/sessions", { websiteId, ...identity }, false);
    adopt(started.sessionToken, identity.userId || null, identity.email || null);
    await flushMetadata();  // before any conversation starts, so the first one takes it
    return started.sessionToken;
  }

  function adopt(token, userId, email) {
    forget();
    Object.assign(state, { token, userId, email });
    save();
    scheduleContext();
    connect();
  }

  function forget() {
    if (stream) stream.abort();
    stream = null;
    lastEventId = null;
    Object.assign(state, { token: null, userId: null, email: null, conversationId: null, unread: 0, typing: false,
                           agentTyping: false, messages: new Map(), drafts: new Map(), offers: new Map() });
    emit("messages");
    emit("unread");
  }

  async function identify(identity, same) {
    if (same && state.token) return;
    try {
      await (starting || Promise.resolve()).catch(() => {});
      await begin(identity);
    } catch (error) {
      if (error.status !== 401) throw error;
      // a wrong signature: nothing of that user is shown; the visitor goes on anonymously
      forget();
      save();
      warn("the signature does not match; the visitor stays anonymous");
    }
  }

  // --- the conversation and its transcript

  async function loadTranscript() {
    const conversations = await call("GET", "/api/chat/conversations");
    const current = conversations.find((c) => !c.resolved);
    state.conversationId = current ? current._id : null;
    if (current) {
      const messages = await call("GET", "/api/chat/messages?conversationId=" + encodeURIComponent(current._id));
      messages.forEach((m) => state.messages.set(m._id, m));
    }
    emit("messages");
  }

  // whether a pushed item is of the visitor's current conversation (the first one pushed becomes it)
  function ours(conversationId) {
    if (conversationId !== state.conversationId) {
      if (state.conversationId) return false;
      state.conversationId = conversationId;
    }
    return true;
  }

  function received(message, live) {
    if (!ours(message.conversationId)) return;
    const known = state.messages.has(message._id);
    state.messages.set(message._id, message);
    state.drafts.delete(message._id);  // the streamed bubble becomes the stored message, in one render
    if (!known && live && message.from !== "customer") {
      setTyping({ typing: false, agentTyping: false });
      if (!state.open) state.unread += 1;
      emit("unread");
      emit("reply", message);
    }
    emit("messages");
  }

  function setTyping(change) {
    Object.assign(state, change);
    clearTimeout(typingTimer);
    // the team's typing fades by itself: its `false` may never come (a closed tab)
    if (state.typing) typingTimer = setTimeout(() => setTyping({ typing: false }), TEAM_TYPING_MS);
    emit("typing");
  }

  function streamed({ conversationId, messageId, delta }) {
    if (state.messages.has(messageId) || !ours(conversationId)) return;
    const draft = state.drafts.get(messageId);
    if (draft) draft.content += delta;
    else state.drafts.set(messageId, { _id: messageId, conversationId, from: "operator", author: "agent", content: delta });
    emit("delta", messageId);
  }

  // --- the actions the AI agent offers: the page's own (addAction), shown as buttons

  function registered(name) {
    return [...actions.values()].find((a) => a.name === name && (!a.userId || a.userId === state.userId));
  }

  function offered(offer) {
    if (!ours(offer.conversationId) || state.offers.has(offer.toolCallId)) return;
    const action = registered(offer.name);
    if (!action) return console.debug("[parley] the agent offered " + JSON.stringify(offer.name) + ", which this page did not register; ignored");
    let args = offer.arguments;
    try { args = JSON.parse(args || "{}"); } catch (e) { /* not JSON: handed over as the text it is */ }
    const after = [...state.messages.values()].reduce((last, m) => (!last || m.creationTime >= last.creationTime ? m : last), null);
    state.offers.set(offer.toolCallId, { toolCallId: offer.toolCallId, name: offer.name, arguments: args,
      label: action.description || action.name, after: after && after._id, status: "offered" });
    emit("messages");
  }

  // The visitor's click: the page's handler, then `parley:action` on window, then the result to the agent.
  async function act(offer) {
    if (offer.status !== "offered") return;
    offer.status = "running";
    emit("messages");
    const { toolCallId, name } = offer;
    try {
      if (!("result" in offer)) {
        const handler = (registered(name) || {}).handler;
        try {
          const value = typeof handler === "function" ? await handler(offer.arguments, { toolCallId, name }) : null;
          offer.result = value === undefined ? null : value;
        } catch (error) {
          warn("the handler of " + name + " failed: " + error.message);
          offer.result = { error: String(error.message || error) };
        }
        w.dispatchEvent(new CustomEvent("parley:action", { detail: { toolCallId, name, arguments: offer.arguments } }));
      }
      await call("POST", "/api/chat/actions/" + encodeURIComponent(toolCallId) + "/result", { result: offer.result });
      offer.status = "done";
    } catch (error) {
      offer.status = error.status === 409 ? "done" : "offered";  // 409: answered already (another tab)
      if (offer.status === "offered") warn("sending the result of " + name + " failed: " + error.message);
    }
    emit("messages");
  }

  async function send(content) {
    if (!state.conversationId) {
      const started = await call("POST", "/api/chat/conversations", {});
      state.conversationId = started._id;
    }
    emit("sending");
    const message = await call("POST", "/api/chat/messages", { conversationId: state.conversationId, content });
    received(message, false);
    return message;
  }

  // --- live updates: fetch streaming (the credential goes in a header), resumed with Last-Event-ID

  function connect() {
    const token = state.token;
    const controller = new AbortController();
    stream = controller;
    let delay = 250;
    let first = true;
    (async () => {
      while (!controller.signal.aborted && state.token === token) {
        try {
          const headers = { Authorization: "ChatSession " + token };
          if (lastEventId) headers["Last-Event-ID"] = lastEventId;
          const response = await fetch(base + "/api/chat/realtime", { headers, signal: controller.signal });
          if (response.status === 401) { forget(); save(); return; }
          if (!response.ok) throw new Error("realtime " + response.status);
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          let opened = false;
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value;
            if (!opened) {
              opened = true;
              delay = 250;
              state.connected = true;
              emit("connected", true);
              // the channel is open: what is read now and what streams from here meet without a gap
              if (first) { first = false; loadTranscript().catch((e) => warn("loading the conversation failed: " + e.message)); }
            }
            let end;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              frame(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
            }
          }
        } catch (error) {
          if (controller.signal.aborted) return;
        }
        state.connected = false;
        emit("connected", false);
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 5000);
      }
    })();
  }

  function frame(text) {
    let id = null, event = "message", data = "";
    for (const line of text.split("\n")) {
      const colon = line.indexOf(":");
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "event") event = value;
      else if (field === "data") data += value;
    }
    if (id) lastEventId = id;
    if (!data) return;
    let payload;
    try { payload = JSON.parse(data); } catch (e) { return; }
    if (event === "message.created") received(payload, true);
    else if (event === "conversation.created" && !state.conversationId) state.conversationId = payload._id;
    else if (event === "MESSAGE_UPDATED_EVENT") loadTranscript().catch(() => {});
    else if (event === "message.delta") streamed(payload);
    else if (event === "action.offered") offered(payload);
    else if ((event === "typing" || event === "agent.typing") && ours(payload.conversationId)) {
      setTyping(event === "typing" ? { typing: payload.typing !== false } : { agentTyping: payload.typing !== false });
    }
    emit("event:" + event, payload);
  }

  // --- what the page attaches: metadata for the conversation, context for the AI agent

  function flushMetadata() {
    const metadata = pendingMetadata;
    pendingMetadata = {};
    if (!Object.keys(metadata).length) return Promise.resolve();
    return call("PUT", "/api/chat/metadata", { metadata }).catch((e) => warn("setMetadata failed: " + e.message));
  }

  function scheduleContext() {
    if (!state.token) return;
    clearTimeout(contextTimer);
    contextTimer = setTimeout(() => {
      const body = {
        readables: [...readables.values()].map((r) => ({ userId: r.userId || null, description: r.description, value: r.value === undefined ? null : r.value })),
        actions: [...actions.values()].map((a) => ({ userId: a.userId || null, name: a.name, description: a.description || "" })),
      };
      call("PUT", "/api/chat/context", body).catch((e) => warn("sending the page context failed: " + e.message));
    }, 0);
  }

  const key = (item, name) => (item.userId || "") + "\u0000" + item[name];

  // --- the commands

  const COMMANDS = {
    setUserId: (id, signature) => identify({ userId: id, signature }, state.userId === id),
    setUserEmail: (email, signature) => identify(
      { email, emailSignature: signature, ...(state.userId ? { userId: state.userId, signature: state.signature } : {}) },
      state.email === email),
    setUserNickname: (nickname) => call("PUT", "/api/chat/profile", { nickname }),
    setUserPhone: (phone) => call("PUT", "/api/chat/profile", { phone }),
    setMetadata(name, value) {
      pendingMetadata[name] = value === null ? null : String(value);
      return state.token ? flushMetadata() : undefined;
    },
    addReadable(readable) {
      if (typeof readable.description !== "string" || !readable.description) throw new TypeError("a readable needs a description");
      readables.set(key(readable, "description"), readable);
      scheduleContext();
    },
    removeReadable(readable) { readables.delete(key(readable, "description")); scheduleContext(); },
    addAction(action) {
      if (typeof action.name !== "string" || !action.name) throw new TypeError("an action needs a name");
      actions.set(key(action, "name"), action);
      scheduleContext();
    },
    removeAction(action) { actions.delete(key(action, "name")); scheduleContext(); },
    openChat() { setOpen(true); },
    closeChat() { setOpen(false); },
    showChat() { state.shown = true; emit("shown"); },
    hideChat() { state.shown = false; emit("shown"); },
    sendMessage: (content) => send(content),
    async searchDocuments(query, locale) {
      setOpen(true);
      const params = new URLSearchParams({ query, ...(locale ? { locale } : {}) });
      const results = await call("GET", "/api/chat/documents/search?" + params);
      state.help = { query, results };
      emit("help");
    },
    setBrandColor(color) {
      if (!w.CSS || !CSS.supports("color", color)) throw new TypeError(JSON.stringify(color) + " is not a CSS color");
      state.brandColor = color;
      emit("brand");
    },
  };

  function setOpen(open) {
    state.open = open;
    if (open) {
      state.unread = 0;
      emit("unread");
      session().catch((e) => warn("starting the chat failed: " + e.message));
    }
    emit("open");
  }

  function run(command) {
    chain = chain.then(() => {
      if (!Array.isArray(command) || typeof command[0] !== "string") {
        return warn("a command is an array [name, ...arguments]; ignored " + String(command));
      }
      const [name, ...args] = command;
      const signature = Object.prototype.hasOwnProperty.call(SIGNATURES, name) && SIGNATURES[name];
      if (!signature) return warn("unknown command " + JSON.stringify(name) + "; ignored");
      if (!argumentsFit(signature[0], args)) return warn(name + " expects " + signature[1] + "; ignored");
      if (name === "setUserId") state.signature = args[1];
      return COMMANDS[name](...args);
    }).catch((error) => warn(command[0] + " failed: " + error.message));
    return chain;
  }

  function installQueue() {
    const queued = Array.isArray(w.$parley) ? w.$parley.slice() : [];
    const queue = [];
    Object.defineProperty(queue, "push", { value: (...commands) => { commands.forEach(run); return queue.length; } });
    w.$parley = queue;
    queued.forEach(run);
    chain = chain.then(() => { if (state.token && !stream) connect(); });
  }

  const restored = load();
  if (restored.token) Object.assign(state, { token: restored.token, userId: restored.userId || null, email: restored.email || null });

  return {
    state, on, emit, call, session, send, setOpen, act,
    surfaces,
    rate: (message, rating) => call("POST", "/api/messages/" + message._id + "/rating", { websiteId, rating })
      .then((m) => received(m, false)),
    react: (message, emoji) => call("POST", "/api/messages/" + message._id + "/reaction/customer", { websiteId, emoji })
      .then(() => loadTranscript()),
    document: (id) => call("GET", "/api/chat/documents/" + encodeURIComponent(id)),
    attach(surface) {
      // the first surface to be ready takes over the queue; a second one shares what it did
      surfaces.add(surface);
      if (surfaces.size === 1) installQueue();
    },
    has: (kind) => [...surfaces].some((s) => s === kind),
    warn,
  };
}

// --- the pet format (commands/pets.py), which the mascot plays and the dashboard previews: an atlas of
// 8 x 11 cells of 192x208; rows 0-8 are these states, [row, frames, ms per frame, loops], the last frame
// of each held lastMs; rows 9-10 the 16 look directions, clockwise from up
export const PET = {
  cellWidth: 192, cellHeight: 208, columns: 8, rows: 11, lastMs: 320,
  states: {
    "idle": [0, 6, 220, true], "running-right": [1, 8, 110, true], "running-left": [2, 8, 110, true],
    "waving": [3, 4, 170, false], "jumping": [4, 5, 130, false], "failed": [5, 8, 150, false],
    "waiting": [6, 6, 230, true], "running": [7, 6, 120, true], "review": [8, 6, 180, false],
  },
};

// --- what both surfaces draw: elements built from text only (never markup), and the chat itself

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "text") el.textContent = value;
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

const RATINGS = [["unhappy", "\u{1F641}"], ["neutral", "\u{1F610}"], ["happy", "\u{1F642}"]];
const EMOJIS = ["\u{1F44D}", "\u2764\uFE0F", "\u{1F602}"];
let ids = 0;

// The transcript (a live region) and the composer; `compact` leaves out ratings and reactions.
export function chatView(core, compact) {
  const id = "parley-" + ++ids;
  const log = h("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation", tabindex: "0" });
  const typing = h("p", { class: "typing", role: "status", hidden: true });
  const box = h("textarea", { id: id + "-box", rows: "1", placeholder: "Write a message\u2026" });
  const form = h("form", { class: "composer" },
    h("label", { for: id + "-box", class: "visually-hidden", text: "Message" }), box,
    h("button", { type: "submit", class: "send", text: "Send" }));
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
      "aria-busy": draft ? "true" : null }, h("p", { class: "text", text: m.content }));
    if (!mine && !compact && !draft) {
      item.append(h("div", { class: "feedback" },
        ...RATINGS.map(([rating, face]) => h("button", {
          type: "button", class: "rate", "aria-label": "Rate this reply " + rating, "aria-pressed": String(m.rating === rating),
          text: face, onclick: () => core.rate(m, rating).catch((e) => core.warn("rating failed: " + e.message)) })),
        ...EMOJIS.map((emoji) => {
          const mineReaction = (m.reactions || []).some((r) => r.from === "customer" && r.emoji === emoji);
          return h("button", {
            type: "button", class: "react", "aria-label": "React " + emoji, "aria-pressed": String(mineReaction), text: emoji,
            onclick: () => core.react(m, mineReaction ? null : emoji).catch((e) => core.warn("reacting failed: " + e.message)) });
        })));
    }
    const shown = (m.reactions || []).map((r) => r.emoji).join(" ");
    if (shown) item.append(h("p", { class: "reactions", text: shown }));
    return item;
  }

  function offer(o) {
    const done = o.status === "done";
    return h("div", { class: "msg team offer", "data-tool-call-id": o.toolCallId },
      h("button", { type: "button", class: "action", disabled: o.status !== "offered", "aria-label": done ? o.label + " (done)" : null,
        text: (done ? "\u2713 " : "") + o.label, onclick: () => core.act(o) }));
  }

  function render() {
    const { messages, offers, drafts } = core.state;
    const sorted = [...messages.values()].sort((a, b) => (a.creationTime < b.creationTime ? -1 : a.creationTime > b.creationTime ? 1 : 0));
    const after = (id) => [...offers.values()].filter((o) => (messages.has(o.after) ? o.after : null) === id).map(offer);
    const items = [...after(null), ...sorted.flatMap((m) => [message(m), ...after(m._id)]),
                   ...[...drafts.values()].map((d) => message(d, true))];
    log.replaceChildren(...(items.length ? items : [h("p", { class: "empty", text: "Ask us anything. We usually answer within minutes." })]));
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
  return { root: h("div", { class: "chat" }, log, typing, form), focus: () => box.focus(), log };
}

// The style both surfaces start from: nothing of the host page's CSS reaches into a shadow root except
// what is inherited, so the root element sets every inherited property it relies on.
export const BASE_CSS = `
:host{all:initial!important;position:fixed!important;z-index:2147483000!important;display:block!important}
:host([hidden]){display:none!important}
[hidden]{display:none!important}
*{box-sizing:border-box;margin:0;padding:0;font:inherit;color:inherit;border:0;background:none;letter-spacing:normal;text-transform:none}
.root{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2330;text-align:left}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
button{cursor:pointer}
:focus-visible{outline:2px solid var(--brand);outline-offset:2px}
.chat{display:flex;flex-direction:column;min-height:0;flex:1}
.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;background:#f6f7fb}
.msg{max-width:85%;display:flex;flex-direction:column;gap:2px}
.msg .text{padding:8px 12px;border-radius:14px;white-space:pre-wrap;overflow-wrap:anywhere}
.mine{align-self:flex-end}.mine .text{background:var(--brand);color:#fff;border-bottom-right-radius:4px}
.team{align-self:flex-start}.team .text{background:#fff;border:1px solid #e3e6ef;border-bottom-left-radius:4px}
.feedback{display:flex;gap:2px;opacity:.75}.feedback button{font-size:13px;padding:1px 4px;border-radius:6px}
.feedback [aria-pressed=true]{background:#e3e6ef;opacity:1}
.reactions{font-size:13px}
.empty{color:#5b6070;text-align:center;margin:auto 8px}
.typing{padding:0 12px 6px;color:#5b6070;font-size:12px;background:#f6f7fb}
.draft .text::after{content:"\u258D";opacity:.5}
.offer .action{padding:8px 12px;border-radius:14px;border:1px solid var(--brand);color:var(--brand);background:#fff;font-weight:600}
.offer .action:disabled{cursor:default;opacity:.7}
.composer{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e6ef;background:#fff}
.composer textarea{flex:1;resize:none;padding:8px 10px;border:1px solid #cfd3df;border-radius:10px;min-height:38px;max-height:120px;background:#fff;color:#1f2330}
.send{background:var(--brand);color:#fff;border-radius:10px;padding:0 14px;font-weight:600}
`;
