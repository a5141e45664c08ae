// All of the operator's notifications (a page at a time, read and unread) and their settings: for each kind,
// the channels (the dashboard's centre, desktop notifications, e-mail), the desktop permission (asked for
// only when the operator clicks for it) and the sound.

import {api, get} from "../api.js";
import {Page} from "../page.js";
import {errorBox, h, replace} from "../dom.js";
import {askDesktopPermission, desktopPermission, kindLabel, notificationItem, setSound, soundOn,
        sourceOf} from "../notifications.js";

const CHANNELS = [["dashboard", "Dashboard"], ["desktop", "Desktop"], ["email", "E-mail"]];
const PERMISSION_TEXT = {
  granted: "Desktop notifications are on in this browser.",
  denied: "This browser blocks Parley's desktop notifications: allow them in the site's settings.",
  default: "Desktop notifications are off in this browser.",
  unsupported: "This browser cannot show desktop notifications.",
};

class ParleyNotifications extends Page {
  async show() {
    this.list = h("ul", {class: "notification-list full"});
    this.more = h("div");
    this.status = h("div", {"aria-live": "polite"});
    this.settings = h("div");
    replace(this, h("h1", null, "Notifications"),
      h("div", {class: "card stack"},
        h("div", {class: "panel-head"},
          h("h2", null, "Recent"),
          h("button", {type: "button", class: "secondary", id: "page-mark-all-read", onclick: () => this.markAll()},
            "Mark all read")),
        this.status, this.list, this.more),
      this.settings);
    this.listen("notification.created", () => this.load());
    this.listen("notifications.read", () => this.load());
    this.listen("notifications.changed", () => this.load());
    await Promise.all([this.load(), this.loadSettings()]);
    this.dataset.ready = "";
  }

  async load(cursor) {
    try {
      const page = await get("/api/notifications", cursor ? {limit: 50, cursor} : {limit: 50});
      const items = page.items.map((item) => notificationItem(item, () => this.open(item)));
      if (cursor) this.list.append(...items);
      else replace(this.list, items.length ? items : h("li", {class: "empty"}, "No notifications yet."));
      replace(this.more, page.nextCursor && h("button", {type: "button", class: "secondary",
                                                        onclick: () => this.load(page.nextCursor)}, "Older"));
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }

  async open(item) {
    if (!item.read) {
      const answer = await api("POST", "/api/notifications/read", {ids: [item._id]}).catch(() => null);
      if (answer) this.app.centre?.setUnread(answer.unread);
    }
    this.app.navigate(sourceOf(item));
  }

  async markAll() {
    try {
      const answer = await api("POST", "/api/notifications/read", {all: true});
      this.app.centre?.setUnread(answer.unread);
      this.load();
    } catch (error) {
      replace(this.status, errorBox(error));
    }
  }

  async loadSettings() {
    const preferences = await get("/api/operators/me/notifications");
    const boxes = {};
    const rows = Object.keys(preferences).map((kind) => h("tr", null,
      h("th", {scope: "row"}, kindLabel(kind)),
      CHANNELS.map(([channel, label]) => {
        const box = h("input", {type: "checkbox", checked: preferences[kind][channel],
                                "aria-label": `${kindLabel(kind)}: ${label}`, "data-kind": kind, "data-channel": channel});
        (boxes[kind] ??= {})[channel] = box;
        return h("td", null, box);
      })));
    const saved = h("div", {"aria-live": "polite"});
    const form = h("form", {class: "card stack", id: "notification-preferences", onsubmit: async (event) => {
      event.preventDefault();
      const body = Object.fromEntries(Object.entries(boxes).map(([kind, channels]) =>
        [kind, Object.fromEntries(Object.entries(channels).map(([channel, box]) => [channel, box.checked]))]));
      try {
        const answer = await api("PUT", "/api/operators/me/notifications", body);
        if (this.app.centre) this.app.centre.preferences = answer;
        replace(saved, h("p", {class: "notice"}, "Saved."));
      } catch (error) {
        replace(saved, errorBox(error));
      }
    }}, h("h2", null, "Channels"),
      h("table", null, h("thead", null, h("tr", null, h("th", {scope: "col"}, "Kind"),
        CHANNELS.map(([, label]) => h("th", {scope: "col"}, label)))), h("tbody", null, rows)),
      h("p", {class: "hint"}, "E-mail goes out only when the server has an SMTP server configured."),
      h("button", {type: "submit"}, "Save"), saved);

    const permission = h("p", {id: "desktop-permission"}, PERMISSION_TEXT[desktopPermission()]);
    const ask = h("button", {type: "button", id: "enable-desktop", class: "secondary",
                             hidden: desktopPermission() !== "default", onclick: async () => {
      const answer = await askDesktopPermission();
      replace(permission, PERMISSION_TEXT[answer] ?? PERMISSION_TEXT.default);
      ask.hidden = answer !== "default";
    }}, "Turn on desktop notifications");
    const sound = h("input", {type: "checkbox", id: "notification-sound", checked: soundOn(),
                              onchange: () => setSound(sound.checked)});
    replace(this.settings, form,
      h("section", {class: "card stack"}, h("h2", null, "This browser"), permission, ask,
        h("label", {for: "notification-sound"}, sound, " Play a sound for each new notification")));
  }
}

customElements.define("parley-notifications", ParleyNotifications);
