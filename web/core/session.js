// The visitor's session, shared by the widget and the mascot: one session per website, one command
// queue, one realtime stream; the website's widget settings (`GET /api/chat/config`, read at start-up) and
// the visitor's language; the state both surfaces render, the events they listen to, and the page's own
// events (`["on", "message:received", fn]`).
// Live frames: the AI agent's text as it is written (`message.delta`, kept as a draft until the stored
// `message.created` of the same id replaces it), its typing (`agent.typing`), the team's (`typing`), and
// the actions it offers (`action.offered`, answered with the page's handler and a `parley:action` event).

import { openEvents, readEvents, request, uploadFile } from "./transport.js";
import { catalogue, supported, wordsOf } from "./i18n.js";

const STORE = "parley:";
const warn = (text) => console.warn("[parley] " + text);
const TEAM_TYPING_MS = 6000;  // the dashboard repeats `typing` every 3 s while the operator types
const VISITOR_TYPING_EVERY_MS = 3000;  // and the widget, while the visitor types
export const DEFAULT_BRAND_COLOR = "#4f46e5";  // commands/admin.py DEFAULT_BRAND_COLOR: a website not yet given one
// What the widget shows until the website's settings arrive (or when they cannot): GET /api/chat/config's shape
const DEFAULT_CONFIG = { brandColor: DEFAULT_BRAND_COLOR, title: null, welcomeMessage: null, awayMessage: null,
  position: "right", launcherLabel: null, helpSearch: true, ratings: true, theme: "light", language: "en",
  open: true, nextOpenAt: null, online: true };
// what the host page may listen to
const CONFIG_WAIT_MS = 3000;  // how long the surfaces wait for the website's settings before showing anyway
const PAGE_EVENTS = ["message:received", "message:sent", "chat:opened", "chat:closed", "unread:changed"];
let single = null;

export function parley(base) {
  return single || (single = createCore(base));
}

// command -> [argument checks, description]; "s" a string, "S" a string or nothing, "o" an object,
// "v" any JSON value, "f" a function
const SIGNATURES = {
  setUserId: ["ss", "(id: string, signature: string)"],
  setUserEmail: ["sS", "(email: string, signature?: string)"],
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
  setLocale: ["s", "(language: string)"],
  reset: ["", "()"],
  on: ["sf", "(event: string, listener: function)"],
  off: ["sf", "(event: string, listener: function)"],
};

function argumentsFit(checks, args) {
  if (args.length > checks.length) return false;
  return [...checks].every((check, i) => {
    const a = args[i];
    if (check === "s") return typeof a === "string" && a.trim() !== "";
    if (check === "S") return a === undefined || a === null || typeof a === "string";
    if (check === "o") return a !== null && typeof a === "object" && !Array.isArray(a);
    if (check === "f") return typeof a === "function";
    return a === null || ["string", "number", "boolean"].includes(typeof a);
  });
}

function createCore(base) {
  const w = window;
  const mascot = w.PARLEY_MASCOT || {};
  // the dashboard's preview (web/preview.html): settings come from the page, nothing goes to the network
  const preview = Boolean(w.PARLEY_PREVIEW);
  const websiteId = String(w.PARLEY_WEBSITE_ID || mascot.websiteId || "");
  const listeners = {};
  const pageListeners = Object.fromEntries(PAGE_EVENTS.map((name) => [name, new Set()]));
  const surfaces = new Set();
  const readables = new Map();
  const actions = new Map();
  const state = {
    websiteId, base, token: null, customerId: null, userId: null, email: null, conversationId: null, messages: new Map(),
    drafts: new Map(), offers: new Map(), outbox: new Map(),
    open: false, shown: true, unread: 0, brandColor: DEFAULT_BRAND_COLOR, help: null,
    resolved: false,  // the team resolved the current conversation: the satisfaction prompt shows
    connected: false, typing: false, agentTyping: false,
    config: { ...DEFAULT_CONFIG }, locale: null, i18n: catalogue("en"), preview,
    language: null,  // the language last stored on the customer
  };
  let brandOverride = mascot.brandColor || null;  // setBrandColor's, or the mascot snippet's
  let pendingMetadata = {};
  let chain = Promise.resolve();
  let starting = null;
  let opening = null;  // the visitor's current conversation being found or started
  let stream = null;
  let lastEventId = null;
  let contextTimer = 0;
  let typingTimer = 0;
  let outboxIds = 0;
  let typingSent = 0;  // when the visitor's last `typing: true` went
  let wanted = "en";  // the language asked for last
  let speaking = Promise.resolve();  // its catalogue, loading

  const emit = (name, data) => (listeners[name] || []).forEach((fn) => fn(data));
  const on = (name, fn) => (listeners[name] = listeners[name] || []).push(fn);
  // the host page's listeners: one that throws does not stop the others, nor the widget
  const tell = (name, detail) => pageListeners[name].forEach((fn) => {
    try { fn(detail); } catch (error) { warn("a listener of " + name + " failed: " + error.message); }
  });

  function load() {
    try { return JSON.parse(w.localStorage.getItem(STORE + websiteId)) || {}; } catch (e) { return {}; }
  }
  function save() {
    try {
      if (!state.token) return w.localStorage.removeItem(STORE + websiteId);
      const { token, customerId, userId, email, language } = state;
      w.localStorage.setItem(STORE + websiteId, JSON.stringify({ token, customerId, userId, email, language }));
    } catch (e) { /* storage refused (private mode): the session lasts as long as the page */ }
  }

  async function call(method, path, body, auth = true) {
    return request(base, method, path, body, auth ? "ChatSession " + (await session()) : null);
  }

  // --- the website's settings and the visitor's language

  // the colours and words as the settings, the page and its commands have them now; another language's
  // words arrive with its catalogue (`speaking` settles then)
  function configured() {
    state.brandColor = brandOverride || state.config.brandColor || DEFAULT_BRAND_COLOR;
    const html = document.documentElement.lang;
    const language = state.locale || supported(html) || supported(state.config.language) || "en";
    wanted = language;
    speaking = wordsOf(language).then((words) => {
      if (wanted !== language) return;
      if (state.i18n.language !== language) {
        state.i18n = catalogue(language, words);
        emit("config");
      }
      storeLanguage();
    });
    emit("config");
    emit("brand");
  }

  function configure(config) {
    state.config = { ...DEFAULT_CONFIG, ...config };
    configured();
  }

  // Settled once the website's settings are applied, or failed, or slow: the surfaces show themselves then,
  // so a visitor never sees the default colours flash before the website's.
  function loadConfig() {
    if (preview || !websiteId) return speaking;
    // revalidated on every page load (a 304 when unchanged), so a saved change shows on the next one
    const loaded = fetch(base + "/api/chat/config?websiteId=" + encodeURIComponent(websiteId), { cache: "no-cache" })
      .then((response) => (response.ok ? response.json() : Promise.reject(new Error("status " + response.status))))
      .then(configure, (e) => warn("the website's widget settings did not load: " + e.message));
    return Promise.race([loaded.then(() => speaking), new Promise((resolve) => setTimeout(resolve, CONFIG_WAIT_MS))]);
  }

  // the visitor's language, on their customer record for the team (once per session and language)
  function storeLanguage() {
    const language = state.i18n.language;
    if (preview || !state.token || state.language === language) return;
    state.language = language;
    save();
    // after the command running now, so two changes of the profile never race
    chain = chain.then(() => call("PUT", "/api/chat/profile", { language }))
      .catch((e) => warn("storing the visitor's language failed: " + e.message));
  }

  // --- the session: kept per website, started when first needed, dropped when the user changes

  function session() {
    if (state.token) return Promise.resolve(state.token);
    if (preview) return new Promise(() => {});  // the preview never starts one
    return starting || (starting = begin({}).finally(() => { starting = null; }));
  }

  // `current`: the anonymous session this browser holds, whose conversation the identified customer keeps
  async function begin(identity, current) {
    const body = { websiteId, ...identity, ...(current ? { sessionToken: current } : {}) };
    const started = await call("POST", "/api/chat/sessions", body, false);
    // kept when the server made the anonymous customer the identified one (not when the identity had one)
    const kept = Boolean(current) && started.customerId === state.customerId;
    adopt(started.sessionToken, started.customerId, identity.userId || null, identity.email || null, kept);
    await flushMetadata();  // before any conversation starts, so the first one takes it
    return started.sessionToken;
  }

  // `kept`: the same visitor signed in, so what is on screen stays and is read again under the new session
  function adopt(token, customerId, userId, email, kept) {
    if (kept) {
      if (stream) stream.abort();
      stream = null;
      lastEventId = null;
    } else {
      forget();
    }
    Object.assign(state, { token, customerId, userId, email, language: null });
    save();
    scheduleContext();
    connect();
    storeLanguage();
  }

  function forget() {
    const hadUnread = state.unread > 0;
    if (stream) stream.abort();
    stream = null;
    lastEventId = null;
    opening = null;
    Object.assign(state, { token: null, customerId: null, userId: null, email: null, conversationId: null, resolved: false, unread: 0, typing: false,
                           agentTyping: false, messages: new Map(), drafts: new Map(), offers: new Map(),
                           outbox: new Map(), help: null, language: null });
    emit("messages");
    emit("unread");
    if (hadUnread) tell("unread:changed", { unread: 0 });
  }

  async function identify(identity, same) {
    if (same && state.token) return;
    await (starting || Promise.resolve()).catch(() => {});
    // an anonymous visitor signing in keeps their conversation; another user at this browser starts afresh
    const keep = state.token && !state.userId && !state.email ? state.token : null;
    try {
      if (keep && !state.customerId) state.customerId = (await call("GET", "/api/chat/profile")).customerId;
      await begin(identity, keep);
    } catch (error) {
      if (error.status !== 401) throw error;
      // a wrong signature: nothing of that user is shown; an identified visitor's session is dropped
      if (!keep) { forget(); save(); }
      warn("the signature does not match; the visitor stays anonymous");
    }
  }

  // An address the page knows but cannot sign: the visitor's unverified contact, never their identity.
  async function unverifiedEmail(email) {
    await call("PUT", "/api/chat/profile", { email });
    state.contact = email;
    emit("messages");
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
      if (!state.open) {
        state.unread += 1;
        tell("unread:changed", { unread: state.unread });
      }
      emit("unread");
      emit("reply", message);
      tell("message:received", { ...message });
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

  // The visitor's open conversation: the one already there (read first, so a reload while a message
  // was being sent continues it), else a new one; found once however many messages wait for it.
  function conversation() {
    if (state.conversationId) return Promise.resolve(state.conversationId);
    return opening || (opening = (async () => {
      const open = (await call("GET", "/api/chat/conversations")).find((c) => !c.resolved);
      if (!state.conversationId) state.conversationId = open ? open._id : (await call("POST", "/api/chat/conversations", {}))._id;
      return state.conversationId;
    })().finally(() => { opening = null; }));
  }

  // A message goes through the outbox: shown at once, marked failed when it could not be sent (the
  // visitor's Retry, or the connection coming back, sends it again), gone once the stored one is shown.
  async function send(content, attachmentIds, pending) {
    const item = pending || { id: "out-" + ++outboxIds, content, attachmentIds, status: "sending" };
    visitorTyping(false);
    item.status = "sending";
    state.outbox.set(item.id, item);
    emit("messages");
    emit("sending");
    try {
      const conversationId = await conversation();
      const message = await call("POST", "/api/chat/messages", { conversationId, content: item.content,
        ...(item.attachmentIds && item.attachmentIds.length ? { attachmentIds: item.attachmentIds } : {}) });
      state.outbox.delete(item.id);
      received(message, false);
      tell("message:sent", { ...message });
      return message;
    } catch (error) {
      if (error.status && error.status < 500 && error.status !== 429) state.outbox.delete(item.id);
      else item.status = "failed";
      emit("messages");
      throw error;
    }
  }

  // The visitor is (or stops) typing, told to the team: at most every 3 s, and only in a conversation.
  function visitorTyping(typing) {
    if (preview || !state.conversationId || !state.token || (typing && Date.now() - typingSent < VISITOR_TYPING_EVERY_MS)
        || (!typing && !typingSent)) return;
    typingSent = typing ? Date.now() : 0;
    call("POST", "/api/chat/typing", { conversationId: state.conversationId, typing }).catch(() => {});
  }

  function resend() {
    [...state.outbox.values()].filter((item) => item.status === "failed")
      .forEach((item) => send(item.content, item.attachmentIds, item).catch((e) => warn("sending failed again: " + e.message)));
  }

  // --- live updates: fetch streaming (the credential goes in a header), resumed with Last-Event-ID

  function setConnected(connected) {
    if (state.connected === connected) return;
    state.connected = connected;
    emit("connected", connected);
    if (connected) resend();
  }

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
            setConnected(true);
            // the channel is open: what is read now and what streams from here meet without a gap
            if (first) { first = false; loadTranscript().catch((e) => warn("loading the conversation failed: " + e.message)); }
          }, frame);
        } catch (error) {
          if (controller.signal.aborted) return;
        }
        setConnected(false);
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
    else if (event === "conversation.updated" && payload.conversationId === state.conversationId) {
      state.resolved = payload.resolved;
      emit("messages");
    } else if (event === "message.read" && state.messages.has(payload.messageId)) {
      state.messages.get(payload.messageId).readAt = payload.readAt;
      emit("messages");
    } else if (event === "message.delta") streamed(payload);
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

  function pageEvent(name) {
    if (!pageListeners[name]) throw new TypeError("no event " + JSON.stringify(name) + "; there are " + PAGE_EVENTS.join(", "));
    return pageListeners[name];
  }

  // --- the commands

  const COMMANDS = {
    setUserId: (id, signature) => identify({ userId: id, signature }, state.userId === id),
    setUserEmail(email, signature) {
      if (signature == null) return unverifiedEmail(email);
      return identify({ email, emailSignature: signature, ...(state.userId ? { userId: state.userId, signature: state.signature } : {}) },
                      state.email === email);
    },
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
      brandOverride = color;
      configured();
    },
    setLocale(tag) {
      const language = supported(tag);
      if (!language) throw new TypeError("no catalogue for " + JSON.stringify(tag) + "; English is shown");
      state.locale = language;
      configured();
    },
    // sign-out on a shared device: this browser forgets the session at once, and the service ends it, so
    // its token (in a page left open elsewhere, say) reads nothing more; the next visitor starts anonymous
    async reset() {
      const token = state.token;
      forget();
      save();
      if (token) await request(base, "DELETE", "/api/chat/session", undefined, "ChatSession " + token);
    },
    on(name, fn) { pageEvent(name).add(fn); },
    off(name, fn) { pageEvent(name).delete(fn); },
  };

  function setOpen(open) {
    const changed = state.open !== open;
    state.open = open;
    if (open) {
      if (state.unread) tell("unread:changed", { unread: 0 });
      state.unread = 0;
      emit("unread");
      session().catch((e) => warn("starting the chat failed: " + e.message));
    }
    emit("open");
    if (changed) tell(open ? "chat:opened" : "chat:closed", {});
  }

  function run(command) {
    // a page event's listener is added at once, so none is missed while earlier commands still run
    if (Array.isArray(command) && (command[0] === "on" || command[0] === "off") && argumentsFit("sf", command.slice(1))) {
      try { COMMANDS[command[0]](command[1], command[2]); } catch (error) { warn(command[0] + " failed: " + error.message); }
      return chain;
    }
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

  const restored = preview ? {} : load();
  if (restored.token) {
    Object.assign(state, { token: restored.token, customerId: restored.customerId || null, userId: restored.userId || null,
                           email: restored.email || null, language: restored.language || null });
  }
  w.addEventListener("online", () => resend());
  configured();
  const ready = loadConfig();

  return {
    state, on, emit, call, session, send, resend, setOpen, act, configure, ready, visitorTyping,
    surfaces,
    upload: async (file) => uploadFile(base, "/api/chat/attachments", file, "ChatSession " + (await session())),
    rate: (message, rating) => call("POST", "/api/messages/" + message._id + "/rating", { websiteId, rating })
      .then((m) => received(m, false)),
    react: (message, emoji) => call("POST", "/api/messages/" + message._id + "/reaction/customer", { websiteId, emoji })
      .then(() => loadTranscript()),
    document: (id) => call("GET", "/api/chat/documents/" + encodeURIComponent(id)),
    leaveEmail: unverifiedEmail,
    attach(surface) {
      // the first surface to be ready takes over the queue; a second one shares what it did
      surfaces.add(surface);
      if (surfaces.size === 1) installQueue();
    },
    has: (kind) => [...surfaces].some((s) => s === kind),
    warn,
  };
}
