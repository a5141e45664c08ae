// Files in the visitor's chat (widget and mascot): a message's attachments (an image as its thumbnail,
// linked to the full-size image; anything else as a named link with its size), and the composer's attach
// button, which uploads what is chosen or pasted and lists it until the message is sent.

import { h } from "../app/dom.js";

export const ATTACHMENTS_CSS = `
.files{display:flex;flex-wrap:wrap;gap:4px;list-style:none}
.files img{display:block;max-width:200px;max-height:160px;border-radius:10px;border:1px solid #e3e6ef}
.files .file{display:inline-block;padding:6px 10px;border-radius:10px;background:#fff;border:1px solid #e3e6ef;text-decoration:underline}
.attach{font-size:18px;padding:0 4px}
.pending{list-style:none;padding:0 10px;font-size:12px;color:#5b6070;background:#fff}
.pending button{text-decoration:underline;margin-left:4px}
`;

const size = (bytes) => bytes < 1024 ? bytes + " B" : bytes < 1048576 ? (bytes / 1024).toFixed(1) + " KB"
  : (bytes / 1048576).toFixed(1) + " MB";

/** A message's files, or null when it has none. */
export function filesView(files) {
  if (!files || !files.length) return null;
  return h("ul", { class: "files", "aria-label": "Attachments" }, files.map((f) => h("li", null, f.thumbnailUrl
    ? h("a", { href: f.url, target: "_blank", rel: "noopener noreferrer", title: f.name + " (" + size(f.size) + ")" },
      h("img", { src: f.thumbnailUrl, alt: f.name, class: "thumb" }))
    : h("a", { href: f.url, class: "file", rel: "noopener noreferrer", download: f.name },
      "\u{1F4CE} " + f.name + " (" + size(f.size) + ")"))));
}

/** The composer's files: `button` and `input` go in the composer, `list` above it; `ids()` go with a message. */
export function attachControl(core, box) {
  let files = [];
  let pending = 0;
  const list = h("ul", { class: "pending", "aria-live": "polite", "aria-label": "Files to send" });
  const input = h("input", { type: "file", multiple: true, hidden: true });
  const button = h("button", { type: "button", class: "attach", "aria-label": "Attach a file", onclick: () => input.click() },
    "\u{1F4CE}");
  const render = () => list.replaceChildren(...files.map((f, i) => h("li", null, f.name + " (" + size(f.size) + ")",
    h("button", { type: "button", "aria-label": "Remove " + f.name, onclick: () => { files.splice(i, 1); render(); } }, "Remove"))),
    ...(pending ? [h("li", null, "Uploading\u2026")] : []));
  async function add(chosen) {
    for (const file of chosen) {
      pending += 1;
      render();
      try {
        files.push(await core.upload(file));
      } catch (e) {
        core.warn("uploading failed: " + e.message);
        core.emit("error", e);
      } finally {
        pending -= 1;
        render();
      }
    }
  }
  input.addEventListener("change", () => { add([...input.files]); input.value = ""; });
  box.addEventListener("paste", (event) => {
    const pasted = [...((event.clipboardData && event.clipboardData.files) || [])];
    if (pasted.length) { event.preventDefault(); add(pasted); }
  });
  return { list, input, button, busy: () => pending > 0, ids: () => files.map((f) => f._id),
           clear: () => { files = []; render(); } };
}
