// Help search, as the widget and the mascot offer it beside the chat: a search form over the website's
// published articles (`searchDocuments`), its results, and one article read in place. Text only.

import { h } from "../app/dom.js";
import { richText } from "../app/rich-text.js";

let ids = 0;

export function helpView(core) {
  const id = "parley-help-" + ++ids;
  const t = (key, values) => core.state.i18n.t(key, values);
  const query = h("input", { type: "search", id });
  const label = h("label", { for: id, class: "visually-hidden" });
  const submit = h("button", { type: "submit", class: "send" });
  const results = h("ul", { class: "results" });
  const doc = h("article", { class: "doc", hidden: true });
  const root = h("div", { class: "help", hidden: true },
    h("form", { role: "search", onsubmit: (event) => {
      event.preventDefault();
      if (query.value.trim()) window.$parley.push(["searchDocuments", query.value.trim()]);
    } }, label, query, submit),
    results, doc);

  function openDocument(match) {
    core.document(match._id).then((d) => {
      doc.replaceChildren(h("button", { type: "button", onclick: () => { doc.hidden = true; results.hidden = false; results.focus(); } },
        t("back")), h("h3", null, d.title), richText(d));
      results.hidden = true;
      doc.hidden = false;
      doc.firstChild.focus();
    }, (error) => core.warn("opening the document failed: " + error.message));
  }

  function paint() {
    const found = core.state.help;
    if (!found) return results.replaceChildren();
    query.value = found.query;
    results.replaceChildren(...(found.results.length ? found.results.map((match) => h("li", null,
      h("button", { type: "button", onclick: () => openDocument(match) }, h("strong", null, match.title), h("span", null, match.snippet))))
      : [h("li", { class: "empty" }, t("noMatch", { query: found.query }))]));
    results.hidden = false;
    doc.hidden = true;
  }

  function words() {
    query.placeholder = t("searchPlaceholder");
    label.textContent = t("searchHelp");
    submit.textContent = t("search");
    results.setAttribute("aria-label", t("articles"));
    paint();
  }
  core.on("config", words);
  core.on("help", paint);
  core.on("messages", () => { if (!core.state.help) paint(); });  // a reset forgets the last search
  words();
  return { root, focus: () => query.focus() };
}

export const HELP_CSS = [
  ".help{flex:1;display:flex;flex-direction:column;min-height:0;background:var(--back)}",
  ".help form{display:flex;gap:8px;padding:10px;background:var(--panel);border-bottom:1px solid var(--line)}",
  ".help input{flex:1;min-width:0;padding:8px 10px;border:1px solid var(--field);border-radius:10px;background:var(--panel);color:var(--ink)}",
  ".results{flex:1;overflow-y:auto;padding:10px;display:flex;flex-direction:column;gap:8px;list-style:none}",
  ".results button{display:block;width:100%;text-align:start;background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:10px}",
  ".results strong{display:block;font-weight:700}.results span{color:var(--muted);font-size:13px}",
  ".doc{flex:1;overflow-y:auto;padding:14px;background:var(--panel)}.doc h3{font-size:16px;font-weight:700;margin-bottom:8px}.doc p{white-space:pre-wrap}",
  ".doc button{margin-bottom:10px;color:var(--brand);font-weight:600}",
].join("");
