// Parley's chat widget: a launcher and a chat panel in a shadow root, driven by window.$parley.
// Install: <script>window.$parley = []; window.PARLEY_WEBSITE_ID = "…";</script>
//          <script async src="{base_url}/widget.js"></script>
// Plain ES, no build step. It adds no global but $parley; its session, queue, realtime stream, settings
// and panel live in parley-core.js, which the mascot shares. Its title, colours, position, launcher
// label and language are the website's (GET /api/chat/config), read at each page load.
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script.src.replace(/\/widget\.js(?:[?#].*)?$/, "");
  import(base + "/parley-core.js").then(function (module) { mount(module, module.parley(base)); }, function (error) {
    console.warn("[parley] the widget could not load: " + error.message);
  });

  var CSS = [
    ":host{right:20px!important;bottom:20px!important}",
    ":host([data-position=left]){left:20px!important;right:auto!important}",
    ".launcher{min-width:56px;height:56px;border-radius:28px;background:var(--brand);color:#fff;display:flex;align-items:center;justify-content:center;gap:8px;box-shadow:0 6px 20px rgba(20,24,40,.25);position:relative;margin-inline-start:auto;font-weight:600}",
    ".left .launcher{margin-inline-start:0}",
    ".launcher.labelled{padding:0 20px 0 16px}",
    ".launcher svg{width:28px;height:28px;fill:none;stroke:#fff;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}",
    ".badge{position:absolute;top:-4px;right:-4px;min-width:20px;height:20px;border-radius:10px;background:#e5484d;color:#fff;font-size:12px;font-weight:700;display:grid;place-items:center;padding:0 5px}",
    ".panel{position:absolute;right:0;bottom:72px;width:min(370px,calc(100vw - 40px));height:min(560px,calc(100vh - 120px));background:var(--panel);border-radius:16px;box-shadow:0 12px 40px rgba(20,24,40,.28);display:flex;flex-direction:column;overflow:hidden}",
    ".left .panel{left:0;right:auto}",
  ].join("");

  var ICON = "M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z";

  function mount(module, core) {
    var h = module.h;
    var host = document.createElement("div");
    host.setAttribute("data-parley", "widget");
    var shadow = host.attachShadow({ mode: "open" });
    var style = h("style", null, module.BASE_CSS + module.PANEL_CSS + module.HELP_CSS + CSS);
    var icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("aria-hidden", "true");
    var path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", ICON);
    icon.append(path);
    var badge = h("span", { class: "badge", hidden: true });
    var label = h("span", { class: "label" });
    var launcher = h("button", { type: "button", class: "launcher", "aria-expanded": "false", "aria-controls": "parley-panel",
      onclick: function () { core.setOpen(!core.state.open); } }, icon, label, badge);
    var view = module.panel(core, "parley", function () { core.setOpen(false); });
    var panel = h("div", { class: "panel", id: "parley-panel", role: "dialog", "aria-labelledby": "parley-title", hidden: true },
      view.head, view.parts[0], view.parts[1]);
    var root = h("div", { class: "root" }, panel, launcher);
    shadow.append(style, root);
    module.dress(core, root, host);

    function t(key, values) { return core.state.i18n.t(key, values); }
    function paintLauncher() {
      var open = core.state.open, n = core.state.unread, text = core.state.config.launcherLabel;
      label.textContent = text || "";
      label.hidden = !text;
      launcher.classList.toggle("labelled", Boolean(text));
      badge.hidden = n === 0;
      badge.textContent = n > 99 ? "99+" : String(n);
      // a label shown on the launcher is its name (with what is unread), as people who see it say it
      launcher.setAttribute("aria-label", (text || t(open ? "close" : "open")) + (n ? ", " + t("unread", { n: n }) : ""));
    }
    function paintOpen() {
      var open = core.state.open;
      panel.hidden = !open;
      launcher.setAttribute("aria-expanded", String(open));
      paintLauncher();
      if (open) view.focus();
    }
    core.on("open", function () {
      var wasOpen = !panel.hidden;
      paintOpen();
      if (wasOpen && panel.hidden) launcher.focus();
    });
    core.on("shown", function () { host.hidden = !core.state.shown; });
    core.on("unread", paintLauncher);
    core.on("config", paintLauncher);
    root.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && core.state.open) { event.stopPropagation(); core.setOpen(false); }
    });

    paintOpen();
    host.hidden = !core.state.shown;
    core.ready.then(function () {
      document.body.append(host);
      core.attach("widget");
    });
  }
})();
