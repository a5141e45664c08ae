// The one place a page inserts HTML: a message's or a help document's `contentHtml`, which the server
// rendered from Markdown and sanitized (projections/richtext.py). The browser checks it once more against
// the same allow-list, so a bug on one side alone cannot run a script. Without `contentHtml` (a draft that
// is still streaming, a message being sent) the text is shown as text.

import { h } from "./dom.js";

const TAGS = new Set(["P", "BR", "EM", "STRONG", "S", "DEL", "UL", "OL", "LI", "A", "CODE", "PRE", "BLOCKQUOTE",
  "H1", "H2", "H3", "H4", "H5", "H6", "HR", "IMG"]);
const ATTRIBUTES = { A: ["href", "target", "rel"], IMG: ["src", "alt"], OL: ["start"] };

function allowed(el) {
  if (!TAGS.has(el.tagName)) return false;
  const keep = ATTRIBUTES[el.tagName] || [];
  for (const { name } of [...el.attributes]) if (!keep.includes(name)) el.removeAttribute(name);
  if (el.tagName === "A") {
    if (!/^(https?:|mailto:)/i.test(el.getAttribute("href") || "")) el.removeAttribute("href");
    el.setAttribute("target", "_blank");
    el.setAttribute("rel", "noopener noreferrer");
  }
  return el.tagName !== "IMG" || (el.getAttribute("src") || "").startsWith("/api/attachments/");
}

/** A `tag` element (a div by default) holding `item.contentHtml`, or `item.content` as text. */
export function richText(item, props = {}, tag = "div") {
  const el = h(tag, props);
  if (typeof item.contentHtml !== "string" || !item.contentHtml) {
    el.textContent = item.content || "";
    return el;
  }
  const template = document.createElement("template");
  template.innerHTML = item.contentHtml;
  for (const node of [...template.content.querySelectorAll("*")]) if (!allowed(node)) node.replaceWith(...node.childNodes);
  el.classList.add("rich");
  el.append(template.content);
  return el;
}
