// What the widget and the mascot share: one visitor session, one command queue, one realtime stream, the
// website's settings and the visitor's language, and the chat panel they both draw. An ES module, so it
// adds no global; both scripts import it from the same URL, and the browser keeps one instance per page,
// so with both on a page every command is applied once and both surfaces reflect it. Its parts are
// modules of their own (core/, and the dashboard's element builder), imported relative to this file's
// URL, so they come from wherever it came from.
// Text from the network is only ever handed to the surfaces as strings; they render it as text nodes, and
// the server's sanitized `contentHtml` only through richText (app/rich-text.js).

export { parley, DEFAULT_BRAND_COLOR } from "./core/session.js";
export { panel, dress, PANEL_CSS } from "./core/panel.js";
export { HELP_CSS } from "./core/help-view.js";
export { BASE_CSS } from "./core/styles.js";
export { h } from "./app/dom.js";
export { richText } from "./app/rich-text.js";
