// The style both surfaces start from: nothing of the host page's CSS reaches into a shadow root except
// what is inherited, so the root element sets every inherited property it relies on.
export const BASE_CSS = `
:host{all:initial!important;position:fixed!important;z-index:2147483000!important;display:block!important}
:host([hidden]){display:none!important}
[hidden]{display:none!important}
*{box-sizing:border-box;margin:0;padding:0;font:inherit;color:inherit;border:0;background:none;letter-spacing:normal;text-transform:none}
.root{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif,"Apple Color Emoji","Segoe UI Emoji","Noto Color Emoji";color:#1f2330;text-align:left}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
button{cursor:pointer}
:focus-visible{outline:2px solid var(--brand);outline-offset:2px}
.chat{display:flex;flex-direction:column;min-height:0;flex:1}
.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;background:#f6f7fb}
.msg{max-width:85%;display:flex;flex-direction:column;gap:2px}
.msg .text{padding:8px 12px;border-radius:14px;white-space:pre-wrap;overflow-wrap:anywhere}
.mine{align-self:flex-end}.mine .text{background:var(--brand);color:#fff;border-bottom-right-radius:4px}
.team{align-self:flex-start}.team .text{background:#fff;border:1px solid #e3e6ef;border-bottom-left-radius:4px}
.removed{font-style:italic;opacity:.7}.emoji-open{background:none;border:0;font-size:18px;padding:0 4px}.emoji-panel{max-height:180px;overflow-y:auto;background:#fff;border-top:1px solid #e3e6ef;padding:4px}.emoji-grid [role=row]{display:flex}.emoji{flex:1;text-align:center;font-size:20px;padding:2px;cursor:pointer;border-radius:6px}.emoji[aria-selected=true]{background:#e3e6ef;outline:2px solid var(--brand)}.msg .rich{white-space:normal}.rich ul,.rich ol{padding-left:1.2em}.rich>*{margin:0 0 .4em}.rich>:last-child{margin-bottom:0}.rich pre{white-space:pre-wrap}.mine .rich a{color:inherit}
.feedback{display:flex;gap:2px;opacity:.75}.feedback button{font-size:13px;padding:1px 4px;border-radius:6px}
.feedback [aria-pressed=true]{background:#e3e6ef;opacity:1}
.reactions{font-size:13px}
.author{display:flex;align-items:center;gap:6px;font-size:12px;color:#5b6070}
.avatar{width:20px;height:20px;border-radius:50%;object-fit:cover}
.empty{color:#5b6070;text-align:center;margin:auto 8px}
.typing{padding:0 12px 6px;color:#5b6070;font-size:12px;background:#f6f7fb}
.draft .text::after{content:"\u258D";opacity:.5}
.offer .action{padding:8px 12px;border-radius:14px;border:1px solid var(--brand);color:var(--brand);background:#fff;font-weight:600}
.offer .action:disabled{cursor:default;opacity:.7}
.composer{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e6ef;background:#fff}
.composer textarea{flex:1;resize:none;padding:8px 10px;border:1px solid #cfd3df;border-radius:10px;min-height:38px;max-height:120px;background:#fff;color:#1f2330}
.send{background:var(--brand);color:#fff;border-radius:10px;padding:0 14px;font-weight:600}
`;
