// What the widget's panel and the mascot's bubble both are: a header with the website's title, Help (when
// the website offers help search) and Close; the chat and the help search beneath it; and the surface's
// root dressed in the website's brand colour, theme, and the visitor's language and its direction.

import { h } from "../app/dom.js";
import { chatView } from "./chat-view.js";
import { helpView } from "./help-view.js";

export function panel(core, id, close) {
  const t = (key) => core.state.i18n.t(key);
  const chat = chatView(core);
  const help = helpView(core);
  const title = h("h2", { id: id + "-title" });
  const helpButton = h("button", { type: "button", class: "help-toggle", "aria-pressed": "false", onclick: () => showHelp(help.root.hidden) });
  const closeButton = h("button", { type: "button", class: "close", onclick: close }, "\u2715");
  const head = h("div", { class: "head" }, title, helpButton, closeButton);

  function showHelp(on) {
    help.root.hidden = !on;
    chat.root.hidden = on;
    helpButton.textContent = on ? t("chat") : t("help");
    helpButton.setAttribute("aria-pressed", String(on));
    (on ? help : chat).focus();
  }
  function words() {
    const { config } = core.state;
    title.textContent = config.title || t("title");
    helpButton.hidden = !config.helpSearch;
    if (!config.helpSearch && !help.root.hidden) showHelp(false);
    helpButton.textContent = help.root.hidden ? t("help") : t("chat");
    closeButton.setAttribute("aria-label", t("close"));
  }
  core.on("config", words);
  core.on("help", () => { if (help.root.hidden && core.state.help) showHelp(true); });
  words();
  return { head, parts: [chat.root, help.root], chat, focus: () => chat.focus() };
}

/** The surface's root in the website's colours and theme, and the visitor's language and direction. */
export function dress(core, root, host) {
  const paint = () => {
    const { config, i18n, brandColor } = core.state;
    root.style.setProperty("--brand", brandColor);
    root.className = "root " + config.theme + " " + config.position;
    root.setAttribute("lang", i18n.language);
    root.setAttribute("dir", i18n.dir);
    host.setAttribute("data-position", config.position);
  };
  core.on("config", paint);
  core.on("brand", paint);
  paint();
}

export const PANEL_CSS = [
  ".head{display:flex;align-items:center;gap:8px;padding:12px 12px 12px 16px;background:var(--brand);color:#fff}",
  ".head h2{flex:1;font-size:16px;font-weight:700}",
  ".head button{color:#fff;border-radius:8px;padding:4px 8px;font-size:13px;background:rgba(0,0,0,.2)}",
].join("");
