// The notification centre in the dashboard's header: a bell with the unread count, a panel listing the
// operator's notifications (each linking to its source, read or unread, all marked read at once), the
// count in the tab's title and on its icon, a desktop notification (the browser's Notification API, asked
// for only when the operator clicks to turn it on) and an optional sound. Live through the realtime
// stream's `notification.created` and `notifications.read` frames; read again after a reconnection, since
// those frames are not replayed. Texts are shown as text (dom.js never parses data as HTML).

import {api, get} from "./api.js";
import {errorBox, h, replace, time} from "./dom.js";

const ICON = "/app/icon.svg";
const SOUND_KEY = "parley.notificationSound";
const LABELS = {
  "conversation.new": "New conversation", "message.new": "New message", mention: "Mention",
  assignment: "Assignment", handoff: "Agent hand-off", "webhook.disabled": "Webhook disabled",
};

/** Where a notification leads: its conversation, or the webhooks page. */
export function sourceOf(item) {
  if (item.conversationId) return `/app/inbox/${encodeURIComponent(item.conversationId)}`;
  return item.kind === "webhook.disabled" ? "/app/webhooks" : "/app/notifications";
}

export const kindLabel = (kind) => LABELS[kind] ?? kind;

export const soundOn = () => localStorage.getItem(SOUND_KEY) === "on";
export const setSound = (on) => localStorage.setItem(SOUND_KEY, on ? "on" : "off");

/** Whether the browser can show desktop notifications, and whether the operator allowed them. */
export const desktopPermission = () => ("Notification" in window ? Notification.permission : "unsupported");

/** Asks for the permission: call it only from a click (browsers refuse, and users dislike, asking on load). */
export async function askDesktopPermission() {
  if (!("Notification" in window)) return "unsupported";
  return Notification.requestPermission();
}

/** A short two-tone chime made on the spot (no audio file to fetch). */
function chime() {
  const Context = window.AudioContext || window.webkitAudioContext;
  if (!Context) return;
  const audio = new Context();
  for (const [index, pitch] of [880, 660].entries()) {
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    tone.frequency.value = pitch;
    gain.gain.setValueAtTime(0.08, audio.currentTime + index * 0.15);
    gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + index * 0.15 + 0.14);
    tone.connect(gain).connect(audio.destination);
    tone.start(audio.currentTime + index * 0.15);
    tone.stop(audio.currentTime + index * 0.15 + 0.15);
  }
  setTimeout(() => audio.close(), 600);
}

export class NotificationCentre {
  constructor(app) {
    this.app = app;
    this.unread = 0;
    this.items = [];
    this.preferences = null;
    this.iconSvg = null;
    this.count = h("span", {class: "bell-count", "aria-hidden": "true", hidden: true});
    this.button = h("button", {type: "button", class: "bell", id: "notifications-bell", "aria-expanded": "false",
                               "aria-controls": "notification-panel", onclick: () => this.toggle()},
      h("span", {"aria-hidden": "true"}, "🔔"), this.count, h("span", {class: "visually-hidden", id: "bell-label"}));
    this.list = h("ul", {class: "notification-list"});
    this.status = h("div", {"aria-live": "polite"});
    this.panel = h("section", {class: "notification-panel card", id: "notification-panel", hidden: true,
                               "aria-label": "Notifications"},
      h("div", {class: "panel-head"},
        h("h2", null, "Notifications"),
        h("button", {type: "button", class: "secondary", id: "mark-all-read", onclick: () => this.markAll()},
          "Mark all read"),
        h("a", {href: "/app/notifications", onclick: () => this.close()}, "All and settings")),
      this.status, this.list);
    this.element = h("div", {class: "notification-centre"}, this.button, this.panel);
    app.bus.addEventListener("notification.created", (event) => this.created(event.detail));
    app.bus.addEventListener("notifications.read", (event) => this.setUnread(event.detail.unread));
    this.setUnread(0);
  }

  async refresh() {
    try {
      const [page, preferences] = await Promise.all([get("/api/notifications", {limit: 20}),
                                                     get("/api/operators/me/notifications")]);
      this.items = page.items;
      this.preferences = preferences;
      this.setUnread(page.unread);
      this.renderList();
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }

  created({notification, unread}) {
    this.items = [notification, ...this.items.filter((i) => i._id !== notification._id)].slice(0, 20);
    this.setUnread(unread);
    this.renderList();
    this.app.bus.dispatchEvent(new CustomEvent("notifications.changed"));
    const wanted = this.preferences?.[notification.kind];
    if (wanted?.desktop !== false && desktopPermission() === "granted") {
      const shown = new Notification(`Parley: ${kindLabel(notification.kind)}`,
                                     {body: notification.text, tag: notification._id, icon: ICON});
      shown.onclick = () => { window.focus(); this.open(notification); };
    }
    if (soundOn()) chime();
  }

  setUnread(unread) {
    this.unread = unread;
    this.count.textContent = unread > 99 ? "99+" : String(unread);
    this.count.hidden = unread === 0;
    this.button.querySelector("#bell-label").textContent = `Notifications, ${unread} unread`;
    this.button.dataset.unread = String(unread);
    this.applyTitle();
    this.applyIcon();
  }

  /** The page's title, with the unread count in front while there is one. */
  applyTitle() {
    const base = this.app.pageTitle ?? "Parley";
    document.title = this.unread ? `(${this.unread}) ${base}` : base;
  }

  async applyIcon() {
    const link = document.querySelector("link[rel='icon']");
    if (!link) return;
    if (!this.unread) {
      link.href = ICON;
      return;
    }
    this.iconSvg ??= await fetch(ICON).then((r) => r.text()).catch(() => null);
    if (!this.iconSvg) return;
    const label = this.unread > 9 ? "9+" : String(this.unread);
    const badge = `<circle cx="24" cy="8" r="8" fill="#d32f2f"/><text x="24" y="12" font-size="${label.length > 1 ? 9 : 12}" ` +
      `font-family="sans-serif" font-weight="700" text-anchor="middle" fill="#fff">${label}</text>`;
    link.href = "data:image/svg+xml," + encodeURIComponent(this.iconSvg.replace("</svg>", badge + "</svg>"));
  }

  renderList() {
    replace(this.list, this.items.length ? this.items.map((item) => notificationItem(item, () => this.open(item)))
      : h("li", {class: "empty"}, "Nothing yet."));
  }

  toggle() { this.panel.hidden ? this.show() : this.close(); }

  show() {
    this.panel.hidden = false;
    this.button.setAttribute("aria-expanded", "true");
    this.refresh();
  }

  close() {
    this.panel.hidden = true;
    this.button.setAttribute("aria-expanded", "false");
  }

  /** Marks the notification read and goes to its source. */
  async open(item) {
    this.close();
    if (!item.read) {
      item.read = true;
      api("POST", "/api/notifications/read", {ids: [item._id]}).then((r) => this.setUnread(r.unread)).catch(() => {});
    }
    this.app.navigate(sourceOf(item));
  }

  async markAll() {
    try {
      const answer = await api("POST", "/api/notifications/read", {all: true});
      for (const item of this.items) item.read = true;
      this.setUnread(answer.unread);
      this.renderList();
      this.app.bus.dispatchEvent(new CustomEvent("notifications.changed"));
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }
}

/** One notification as a list item: a link to its source, with its kind, text and time. */
export function notificationItem(item, onOpen) {
  return h("li", {class: item.read ? "notification read" : "notification unread", "data-kind": item.kind},
    h("a", {href: sourceOf(item), onclick: (event) => { event.preventDefault(); event.stopPropagation(); onOpen(); }},
      h("strong", null, kindLabel(item.kind)), item.read ? null : h("span", {class: "visually-hidden"}, " (unread)"),
      h("span", {class: "text"}, item.text)),
    time(item.createdAt));
}
