// What every page shares: the app (main.js sets `element.app`), and listening to realtime events for as
// long as it is on screen. Its own module so that pages never import main.js, which imports them.

import {h} from "./dom.js";

export class Page extends HTMLElement {
  listen(name, handler) {
    const wrapped = (event) => handler(event.detail);
    this.app.bus.addEventListener(name, wrapped);
    (this.listeners ??= []).push([name, wrapped]);
  }

  disconnectedCallback() {
    for (const [name, handler] of this.listeners ?? []) this.app.bus.removeEventListener(name, handler);
    this.listeners = [];
  }

  get websiteId() { return this.app.website?._id ?? ""; }

  /** A page for a workspace without any website yet. */
  noWebsite() {
    return h("p", {class: "empty"}, "No website yet. ", h("a", {href: "/app/websites"}, "Create one"), " first.");
  }
}
