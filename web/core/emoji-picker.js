// The emoji picker of the widget's and the dashboard's composers: a button that opens a grid of emoji.
// The list (emoji.json: [character, English name] pairs, made from the `emoji` Python package's data,
// single code points only) is a separate static file fetched on the first open, so it costs the widget's
// size budget nothing. Keyboard: arrow keys move, Home/End jump, Enter or Space inserts, Escape closes
// and gives the focus back. Emoji are plain text drawn with the system's font.

import { h } from "../app/dom.js";

const COLUMNS = 8;
let list = null; // one fetch per page, shared by every picker

function loadList() {
  list ??= fetch(new URL("./emoji.json", import.meta.url)).then((r) => {
    if (!r.ok) throw new Error("the emoji list answered " + r.status);
    return r.json();
  }).catch((error) => { list = null; throw error; });
  return list;
}

/** Inserts `text` at the caret of `box` (a textarea), as if typed. */
export function insertAtCaret(box, text) {
  const start = box.selectionStart ?? box.value.length, end = box.selectionEnd ?? start;
  box.value = box.value.slice(0, start) + text + box.value.slice(end);
  box.selectionStart = box.selectionEnd = start + text.length;
  box.dispatchEvent(new Event("input", { bubbles: true }));
}

/** The picker for `box`: `{button, panel}` to place beside it (the panel stays hidden until opened). */
export function emojiPicker(box, idPrefix) {
  const grid = h("div", { class: "emoji-grid", role: "grid", "aria-label": "Emoji", tabindex: "0" });
  const panel = h("div", { class: "emoji-panel", hidden: true }, grid);
  const button = h("button", { type: "button", class: "emoji-open", "aria-label": "Insert an emoji",
    "aria-haspopup": "grid", "aria-expanded": "false", onclick: () => (panel.hidden ? open() : close(true)) }, "\u{1F642}");
  let cells = [], active = 0;

  function show(index) {
    if (!cells.length) return;
    active = Math.max(0, Math.min(cells.length - 1, index));
    cells.forEach((cell, i) => cell.setAttribute("aria-selected", String(i === active)));
    grid.setAttribute("aria-activedescendant", cells[active].id);
    cells[active].scrollIntoView({ block: "nearest" });
  }

  function pick(index) {
    insertAtCaret(box, cells[index].textContent);
    close(false);
    box.focus();
  }

  async function open() {
    panel.hidden = false;
    button.setAttribute("aria-expanded", "true");
    if (!cells.length) {
      grid.replaceChildren(h("p", { class: "emoji-loading" }, "Loading\u2026"));
      const emoji = await loadList().catch(() => null);
      if (!emoji) {
        grid.replaceChildren(h("p", { class: "emoji-loading" }, "The emoji could not be loaded."));
        return;
      }
      cells = emoji.map(([character, name], i) => h("span", { id: `${idPrefix}-emoji-${i}`, role: "gridcell",
        class: "emoji", "aria-label": name, title: name, onclick: () => pick(i) }, character));
      const rows = [];
      for (let i = 0; i < cells.length; i += COLUMNS) rows.push(h("div", { role: "row" }, cells.slice(i, i + COLUMNS)));
      grid.replaceChildren(...rows);
    }
    show(active);
    grid.focus();
  }

  function close(refocus) {
    panel.hidden = true;
    button.setAttribute("aria-expanded", "false");
    if (refocus) button.focus();
  }

  const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: COLUMNS, ArrowUp: -COLUMNS };
  grid.addEventListener("keydown", (event) => {
    if (event.key in moves) show(active + moves[event.key]);
    else if (event.key === "Home") show(0);
    else if (event.key === "End") show(cells.length - 1);
    else if ((event.key === "Enter" || event.key === " ") && cells.length) pick(active);
    else if (event.key === "Escape") close(true);
    else return;
    event.preventDefault();
    event.stopPropagation();
  });
  return { button, panel };
}
