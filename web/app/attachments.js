// Attachments in the dashboard: a message's files (an image as its thumbnail, linked to the full-size image;
// anything else as a named link with its size) and the composer's picker, which uploads what is chosen with
// its button, dropped on the composer or pasted from the clipboard, and lists it until the message is sent.

import {upload} from "./api.js";
import {errorBox, h, replace} from "./dom.js";

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** A message's attachments, or null when it has none. */
export function attachmentsView(attachments) {
  if (!attachments?.length) return null;
  return h("ul", {class: "attachments", "aria-label": "Attachments"}, attachments.map((file) =>
    h("li", null, file.thumbnailUrl
      ? h("a", {href: file.url, target: "_blank", rel: "noopener noreferrer", class: "attachment-image",
          title: `${file.name} (${formatSize(file.size)}): open full size`},
        h("img", {src: file.thumbnailUrl, alt: file.name, loading: "lazy"}))
      : h("a", {href: file.url, rel: "noopener noreferrer", class: "attachment-file", download: file.name},
        "📎 ", file.name, h("span", {class: "size"}, ` (${formatSize(file.size)})`)))));
}

/** The composer's files: `element` goes in the form, `ids()` are what the message names. */
export class AttachmentPicker {
  constructor(form, textarea, status) {
    this.files = [];
    this.status = status;
    this.pending = 0;
    this.input = h("input", {type: "file", multiple: true, hidden: true, id: "attach-input",
      onchange: () => { this.add([...this.input.files]); this.input.value = ""; }});
    this.list = h("ul", {class: "pending-attachments", "aria-label": "Files to send", "aria-live": "polite"});
    this.button = h("button", {type: "button", class: "secondary", id: "attach",
      onclick: () => this.input.click()}, "📎 Attach");
    textarea.addEventListener("paste", (event) => {
      const pasted = [...(event.clipboardData?.files ?? [])];
      if (pasted.length) { event.preventDefault(); this.add(pasted); }
    });
    form.addEventListener("dragover", (event) => { event.preventDefault(); form.classList.add("dropping"); });
    form.addEventListener("dragleave", () => form.classList.remove("dropping"));
    form.addEventListener("drop", (event) => {
      event.preventDefault();
      form.classList.remove("dropping");
      this.add([...(event.dataTransfer?.files ?? [])]);
    });
  }

  get busy() { return this.pending > 0; }

  ids() { return this.files.map((file) => file._id); }

  clear() { this.files = []; this.render(); }

  async add(files) {
    for (const file of files) {
      this.pending += 1;
      try {
        // a pasted screenshot has no name of its own
        this.files.push(await upload("/api/attachments", file, file.name || "pasted image.png"));
        replace(this.status);
      } catch (error) {
        replace(this.status, errorBox(error));
      } finally {
        this.pending -= 1;
        this.render();
      }
    }
  }

  render() {
    replace(this.list, this.files.map((file, index) => h("li", {class: "pending-attachment"},
      file.name, h("span", {class: "size"}, ` (${formatSize(file.size)})`), " ",
      h("button", {type: "button", class: "link", "aria-label": `Remove ${file.name}`,
        onclick: () => { this.files.splice(index, 1); this.render(); }}, "Remove"))),
      this.pending ? h("li", {class: "uploading"}, "Uploading…") : null);
  }
}
