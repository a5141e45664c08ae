// Parley's chat widget: a launcher and a chat panel in a shadow root, driven by window.$parley.
// Install: <script>window.$parley = []; window.PARLEY_WEBSITE_ID = "…";</script>
//          <script async src="{base_url}/widget.js"></script>
// Plain ES, no build step. It adds no global but $parley; its session, queue and realtime stream live in
// parley-core.js, which the mascot shares.
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script.src.replace(/\/widget\.js(?:[?#].*)?$/, "");
  import(base + "/parley-core.js").then(function (module) { mount(module, module.parley(base)); }, function (error) {
    console.warn("[parley] the widget could not load: " + error.message);
  });

  var CSS = [
    ":host{right:20px!important;bottom:20px!important}",
    ".launcher{width:56px;height:56px;border-radius:50%;background:var(--brand);color:#fff;display:grid;place-items:center;box-shadow:0 6px 20px rgba(20,24,40,.25);position:relative;margin-left:auto}",
    ".launcher svg{width:28px;height:28px;fill:none;stroke:#fff;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}",
    ".badge{position:absolute;top:-4px;right:-4px;min-width:20px;height:20px;border-radius:10px;background:#e5484d;color:#fff;font-size:12px;font-weight:700;display:grid;place-items:center;padding:0 5px}",
    ".panel{position:absolute;right:0;bottom:72px;width:min(370px,calc(100vw - 40px));height:min(560px,calc(100vh - 120px));background:#fff;border-radius:16px;box-shadow:0 12px 40px rgba(20,24,40,.28);display:flex;flex-direction:column;overflow:hidden}",
    ".head{display:flex;align-items:center;gap:8px;padding:14px 14px 14px 18px;background:var(--brand);color:#fff}",
    ".head h2{flex:1;font-size:16px;font-weight:700}",
    ".head button{color:#fff;border-radius:8px;padding:4px 8px;font-size:13px;background:rgba(255,255,255,.16)}",
    ".help{flex:1;display:flex;flex-direction:column;min-height:0;background:#f6f7fb}",
    ".help form{display:flex;gap:8px;padding:10px;background:#fff;border-bottom:1px solid #e3e6ef}",
    ".help input{flex:1;padding:8px 10px;border:1px solid #cfd3df;border-radius:10px;background:#fff;color:#1f2330}",
    ".results{flex:1;overflow-y:auto;padding:10px;display:flex;flex-direction:column;gap:8px;list-style:none}",
    ".results button{display:block;width:100%;text-align:left;background:#fff;border:1px solid #e3e6ef;border-radius:10px;padding:10px}",
    ".results strong{display:block;font-weight:700}.results span{color:#5b6070;font-size:13px}",
    ".doc{flex:1;overflow-y:auto;padding:14px;background:#fff}.doc h3{font-size:16px;font-weight:700;margin-bottom:8px}.doc p{white-space:pre-wrap}",
    ".doc button{margin-bottom:10px;color:var(--brand);font-weight:600}",
  ].join("");

  var ICON = "M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z";

  function mount(module, core) {
    var h = module.h;
    var host = document.createElement("div");
    host.setAttribute("data-parley", "widget");
    var shadow = host.attachShadow({ mode: "open" });
    var style = h("style", null, module.BASE_CSS + CSS);
    var icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("aria-hidden", "true");
    var path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", ICON);
    icon.append(path);
    var badge = h("span", { class: "badge", hidden: true });
    var launcher = h("button", { type: "button", class: "launcher", "aria-expanded": "false", "aria-controls": "parley-panel",
      onclick: function () { core.setOpen(!core.state.open); } }, icon, badge);
    var chat = module.chatView(core, false);
    var title = h("h2", { id: "parley-title" }, "Chat with us");
    var helpButton = h("button", { type: "button", "aria-pressed": "false", onclick: function () { showHelp(help.hidden); } }, "Help");
    var query = h("input", { type: "search", id: "parley-query", placeholder: "Search our help articles" });
    var results = h("ul", { class: "results", "aria-label": "Help articles" });
    var doc = h("article", { class: "doc", hidden: true });
    var help = h("div", { class: "help", hidden: true },
      h("form", { role: "search", onsubmit: function (event) {
        event.preventDefault();
        if (query.value.trim()) window.$parley.push(["searchDocuments", query.value.trim()]);
      } }, h("label", { for: "parley-query", class: "visually-hidden" }, "Search help"), query,
        h("button", { type: "submit", class: "send" }, "Search")),
      results, doc);
    var panel = h("div", { class: "panel", id: "parley-panel", role: "dialog", "aria-labelledby": "parley-title", hidden: true },
      h("div", { class: "head" }, title, helpButton,
        h("button", { type: "button", "aria-label": "Close chat", onclick: function () { core.setOpen(false); } }, "\u2715")),
      chat.root, help);
    var root = h("div", { class: "root" }, panel, launcher);
    shadow.append(style, root);

    function showHelp(on) {
      help.hidden = !on;
      chat.root.hidden = on;
      helpButton.textContent = on ? "Chat" : "Help";
      helpButton.setAttribute("aria-pressed", String(on));
      (on ? query : chat).focus();
    }

    function openDocument(match) {
      core.document(match._id).then(function (d) {
        doc.replaceChildren(h("button", { type: "button", onclick: function () {
          doc.hidden = true; results.hidden = false; results.focus(); } }, "\u2190 Back to results"),
          h("h3", null, d.title), module.richText(d));
        results.hidden = true;
        doc.hidden = false;
        doc.firstChild.focus();
      }, function (error) { core.warn("opening the document failed: " + error.message); });
    }

    core.on("help", function () {
      var found = core.state.help;
      query.value = found.query;
      results.replaceChildren.apply(results, found.results.length ? found.results.map(function (match) {
        return h("li", null, h("button", { type: "button", onclick: function () { openDocument(match); } },
          h("strong", null, match.title), h("span", null, match.snippet)));
      }) : [h("li", { class: "empty" }, "No article matches \u201C" + found.query + "\u201D.")]);
      results.hidden = false;
      doc.hidden = true;
      if (help.hidden) showHelp(true);
    });

    function paintOpen() {
      var open = core.state.open;
      panel.hidden = !open;
      launcher.setAttribute("aria-expanded", String(open));
      launcher.setAttribute("aria-label", open ? "Close chat" : "Open chat");
      if (open) chat.focus();
    }
    core.on("open", function () {
      var wasOpen = !panel.hidden;
      paintOpen();
      if (wasOpen && panel.hidden) launcher.focus();
    });
    core.on("shown", function () { host.hidden = !core.state.shown; });
    core.on("unread", function () {
      var n = core.state.unread;
      badge.hidden = n === 0;
      badge.textContent = n > 99 ? "99+" : String(n);
      launcher.setAttribute("aria-label", (core.state.open ? "Close chat" : "Open chat") + (n ? ", " + n + " unread" : ""));
    });
    core.on("brand", function () { root.style.setProperty("--brand", core.state.brandColor); });
    root.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && core.state.open) { event.stopPropagation(); core.setOpen(false); }
    });

    root.style.setProperty("--brand", core.state.brandColor);
    paintOpen();
    host.hidden = !core.state.shown;
    document.body.append(host);
    core.attach("widget");
  }
})();
