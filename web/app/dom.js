// Building the page from data without ever parsing data as HTML: every string becomes a text node or an
// attribute value, so a message like `<img src=x onerror=alert(1)>` shows as those characters.

const SVG = "http://www.w3.org/2000/svg";

function build(el, props, children) {
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "value" || name === "checked") el[name] = value; // the live state, not the default
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** An HTML element: h("button", {class: "x", onclick}, "text", otherElement). */
export const h = (tag, props, ...children) => build(document.createElement(tag), props, children);

/** An SVG element, for the reports' charts. */
export const s = (tag, props, ...children) => build(document.createElementNS(SVG, tag), props, children);

export function replace(el, ...children) {
  el.replaceChildren();
  return build(el, null, children);
}

export function time(iso, withDate = true) {
  const date = new Date(iso);
  const options = withDate ? {dateStyle: "medium", timeStyle: "short"} : {timeStyle: "short"};
  return h("time", {datetime: iso, title: date.toLocaleString()}, date.toLocaleString(undefined, options));
}

/** A button that copies `text` (or what the function `text` answers when pressed), and says so. */
export function copyButton(text, label = "Copy") {
  const button = h("button", {type: "button", class: "secondary", onclick: async () => {
    await navigator.clipboard.writeText(typeof text === "function" ? text() : text).catch(() => {});
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  }}, label);
  return button;
}

/** A secret shown once: it lives only in this element, never in storage or a URL. */
export function secretOnce(label, secret) {
  return h("div", {class: "secret", role: "status"},
    h("p", null, h("strong", null, label), " Copy it now: it will not be shown again."),
    h("code", {class: "secret-value", tabindex: "0"}, secret), " ", copyButton(secret));
}

/** The problem+json detail of a failed call, in a live region. */
export function errorBox(error) {
  return h("p", {class: "error", role: "alert"}, error?.message ?? String(error));
}

export function field(label, control, hint) {
  const id = control.id || (control.id = "f" + Math.random().toString(36).slice(2));
  return h("div", {class: "field"}, h("label", {for: id}, label), control, hint && h("small", null, hint));
}

/** `el` coloured by a label's colour (the CSS variable --label), set through the CSSOM: the page's CSP
 *  refuses style attributes. */
export function tinted(el, color) {
  el.style.setProperty("--label", color);
  return el;
}
