// The visitor's session, shared by the widget and the mascot: one session per website, one command
// queue, one realtime stream; the state both surfaces render, and the events they listen to.
// Live frames: the AI agent's text as it is written (`message.delta`, kept as a draft until the stored
// `message.created` of the same id replaces it), its typing (`agent.typing`), the team's (`typing`), and
// the actions it offers (`action.offered`, answered with the page's handler and a `parley:action` event).

import { openEvents, readEvents, request, uploadFile } from "./transport.js";

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
    return request(base, method, path, body, auth ? "ChatSession " + (await session()) : null);
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

  async function send(content, attachmentIds) {
    if (!state.conversationId) {
      const started = await call("POST", "/api/chat/conversations", {});
      state.conversationId = started._id;
    }
    emit("sending");
    const message = await call("POST", "/api/chat/messages", { conversationId: state.conversationId, content,
                                                               ...(attachmentIds && attachmentIds.length ? { attachmentIds } : {}) });
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
          const response = await openEvents(base + "/api/chat/realtime", "ChatSession " + token, lastEventId, controller.signal);
          if (response.status === 401) { forget(); save(); return; }
          if (!response.ok) throw new Error("realtime " + response.status);
          await readEvents(response, () => {
            delay = 250;
            state.connected = true;
            emit("connected", true);
            // the channel is open: what is read now and what streams from here meet without a gap
            if (first) { first = false; loadTranscript().catch((e) => warn("loading the conversation failed: " + e.message)); }
          }, frame);
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

  function frame({ id, event, data }) {
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
    upload: async (file) => uploadFile(base, "/api/chat/attachments", file, "ChatSession " + (await session())),
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
