// The style both surfaces start from: nothing of the host page's CSS reaches into a shadow root except
// what is inherited, so the root element sets every inherited property it relies on. Its colours are
// variables, so the website's theme (light, dark, or the visitor's system: `.dark`, `.auto`) is one class.
import { ATTACHMENTS_CSS } from "./attachments.js";

export const BASE_CSS = `
:host{all:initial!important;position:fixed!important;z-index:2147483000!important;display:block!important}
:host([hidden]){display:none!important}
[hidden]{display:none!important}
*{box-sizing:border-box;margin:0;padding:0;font:inherit;color:inherit;border:0;background:none;letter-spacing:normal;text-transform:none}
.root{--ink:#1f2330;--muted:#5b6070;--panel:#fff;--back:#f6f7fb;--line:#e3e6ef;--field:#cfd3df;--chip:#e3e6ef;--bad:#b42318;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif,"Apple Color Emoji","Segoe UI Emoji","Noto Color Emoji";color:var(--ink);text-align:start}
.root.dark{--ink:#e8eaf2;--muted:#a9afc2;--panel:#1c1f2a;--back:#12141c;--line:#2e3342;--field:#454b5e;--chip:#2e3342;--bad:#ff8a80}
@media (prefers-color-scheme:dark){.root.auto{--ink:#e8eaf2;--muted:#a9afc2;--panel:#1c1f2a;--back:#12141c;--line:#2e3342;--field:#454b5e;--chip:#2e3342;--bad:#ff8a80}}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
button{cursor:pointer}
:focus-visible{outline:2px solid var(--brand);outline-offset:2px}
.chat{display:flex;flex-direction:column;min-height:0;flex:1}
.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;background:var(--back)}
.msg{max-width:85%;display:flex;flex-direction:column;gap:2px}
.msg .text{padding:8px 12px;border-radius:14px;white-space:pre-wrap;overflow-wrap:anywhere}
.mine{align-self:flex-end;align-items:flex-end}.mine .text{background:var(--brand);color:#fff;border-end-end-radius:4px}
.team{align-self:flex-start}.team .text{background:var(--panel);border:1px solid var(--line);border-end-start-radius:4px}
.failed .text{opacity:.7}
.meta{font-size:12px;color:var(--muted)}.reactions{margin-inline-start:6px}
.retry{color:var(--bad);font-weight:600;text-decoration:underline}
.feedback{display:flex;gap:4px;align-items:center}
.feedback .react{font-size:12px;color:var(--muted);padding:1px 6px;border-radius:6px;border:1px solid var(--line)}
.emojis{display:flex;gap:2px}.emojis button{padding:1px 4px;border-radius:6px}
.emojis [aria-pressed=true]{background:var(--chip)}
.survey{align-self:stretch;text-align:center;background:var(--panel);border:1px solid var(--line);border-radius:12px;padding:10px}
.survey p{font-weight:600}
.faces{display:flex;justify-content:center;gap:8px;margin-top:6px}
.face{display:flex;flex-direction:column;align-items:center;padding:4px 10px;border-radius:10px;border:1px solid var(--line);font-size:12px}
.face span:first-child{font-size:22px}
.author{display:flex;align-items:center;gap:6px;font-size:12px;color:var(--muted)}
.removed{font-style:italic;opacity:.7}.emoji-open{background:none;border:0;font-size:18px;padding:0 4px}.emoji-panel{max-height:180px;overflow-y:auto;background:var(--panel);border-top:1px solid var(--line);padding:4px}.emoji-grid [role=row]{display:flex}.emoji{flex:1;text-align:center;font-size:20px;padding:2px;cursor:pointer;border-radius:6px}.emoji[aria-selected=true]{background:#e3e6ef;outline:2px solid var(--brand)}.msg .rich{white-space:normal}.rich ul,.rich ol{padding-left:1.2em}.rich>*{margin:0 0 .4em}.rich>:last-child{margin-bottom:0}.rich pre{white-space:pre-wrap}.mine .rich a{color:inherit}
.avatar{width:20px;height:20px;border-radius:50%;object-fit:cover}
.empty{color:var(--muted);text-align:center;margin:auto 8px}.away-box{margin:auto 8px;text-align:center}.away-box .opens{color:var(--muted);font-size:.9em}.contact{display:flex;flex-wrap:wrap;gap:6px;justify-content:center}.contact label{flex-basis:100%}.contact input{flex:1;min-width:0;padding:6px;border:1px solid var(--muted);border-radius:6px;font:inherit}
.typing{padding:0 12px 6px;color:var(--muted);font-size:12px;background:var(--back)}
.offline{padding:6px 12px;font-size:12px;background:#fff4d6;color:#5c4300}
.draft .text::after{content:"\u258D";opacity:.5}
.offer .action{padding:8px 12px;border-radius:14px;border:1px solid var(--brand);color:var(--brand);background:var(--panel);font-weight:600}
.offer .action:disabled{cursor:default;opacity:.7}
.composer{display:flex;gap:8px;padding:10px;border-top:1px solid var(--line);background:var(--panel)}
.composer textarea{flex:1;resize:none;padding:8px 10px;border:1px solid var(--field);border-radius:10px;min-height:38px;max-height:120px;background:var(--panel);color:var(--ink)}
.send{background:var(--brand);color:#fff;border-radius:10px;padding:0 14px;font-weight:600}
` + ATTACHMENTS_CSS;
