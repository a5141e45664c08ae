// Parley's mascot: a pet at the page's edge that opens a small chat bubble; same session, queue,
// transcript, settings and panel (titled with the website's title, with help search and the satisfaction
// prompt) as the widget (parley-core.js). Install:
//   <script>window.$parley = []; window.PARLEY_WEBSITE_ID = "…";
//           window.PARLEY_MASCOT = {websiteId: "…", pet: {id, name, spritesheet}};</script>
// (`brandColor` in PARLEY_MASCOT overrides the website's colour, as `setBrandColor` does.)
//   <script async src="{base_url}/mascot.js"></script>
// The pet is an atlas of 8 x 11 cells of 192x208 (pets/atlas.json, fetched with the core): rows 0-8 are
// states, 9-10 look directions.
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script.src.replace(/\/mascot\.js(?:[?#].*)?$/, "");
  var format = fetch(base + "/pets/atlas.json").then(function (response) { return response.json(); });
  Promise.all([import(base + "/parley-core.js"), format]).then(function (loaded) {
    mount(loaded[0], loaded[0].parley(base), loaded[1]);
  }, function (error) {
    console.warn("[parley] the mascot could not load: " + error.message);
  });

  var SHOWN = 0.5, DEAD_ZONE = 60;

  function mount(module, core, PET) {
    var h = module.h;
    var STATES = PET.states, LAST_MS = PET.lastFrameMs, CELL_W = PET.cellWidth, CELL_H = PET.cellHeight;
    var ATLAS_W = CELL_W * PET.columns, ATLAS_H = CELL_H * PET.rows;
    var CSS = [
      // bottom left: the widget's launcher holds the bottom right when both are on a page
      ":host{left:16px!important;bottom:12px!important}",
      // with the widget's launcher set to the left, the pet takes the right
      ":host([data-position=left]){right:16px!important;left:auto!important}",
      ".pet{display:block;width:" + CELL_W * SHOWN + "px;height:" + CELL_H * SHOWN + "px;background-repeat:no-repeat;",
      "background-size:" + ATLAS_W * SHOWN + "px " + ATLAS_H * SHOWN + "px;transition:transform 1.2s linear}",
      ".pet.entering{transform:translateX(-140px)}",
      ".bubble{position:absolute;left:0;bottom:" + (CELL_H * SHOWN + 8) + "px;width:min(300px,calc(100vw - 32px));height:min(380px,calc(100vh - 160px));",
      "background:var(--panel);border-radius:16px;box-shadow:0 10px 34px rgba(20,24,40,.28);display:flex;flex-direction:column;overflow:hidden}",
      ".left .bubble{left:auto;right:0}",
    ].join("");

    var config = window.PARLEY_MASCOT || {};
    var pet = config.pet || {};
    var name = typeof pet.name === "string" && pet.name ? pet.name : "Pip";
    var reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    var host = document.createElement("div");
    host.setAttribute("data-parley", "mascot");
    var shadow = host.attachShadow({ mode: "open" });
    var sprite = h("button", { type: "button", class: "pet", "aria-expanded": "false", "aria-controls": "parley-bubble",
      onclick: function () { toggle(); } });
    var view = module.panel(core, "parley-bubble", function () { toggle(false); });
    var bubble = h("div", { class: "bubble", id: "parley-bubble", role: "dialog", "aria-labelledby": "parley-bubble-title", hidden: true },
      view.head, view.parts[0], view.parts[1]);
    var root = h("div", { class: "root" }, bubble, sprite);
    shadow.append(h("style", null, module.BASE_CSS + module.PANEL_CSS + module.HELP_CSS + CSS), root);
    module.dress(core, root, host);
    function label() { sprite.setAttribute("aria-label", core.state.i18n.t("chatWith", { name: name })); }
    core.on("config", label);
    label();

    // --- the artwork: the configured atlas, or the default pet when it does not load or has the wrong size
    var DEFAULT = base + "/pets/default/spritesheet.png";
    function useAtlas(url, fallback) {
      var image = new Image();
      image.onload = function () {
        if (image.naturalWidth === ATLAS_W && image.naturalHeight === ATLAS_H) {
          sprite.style.backgroundImage = "url(" + JSON.stringify(url) + ")";
          sprite.setAttribute("data-atlas", url);
        } else if (fallback) {
          core.warn("the pet " + url + " is " + image.naturalWidth + "x" + image.naturalHeight + ", not " + ATLAS_W + "x" + ATLAS_H + "; showing the default pet");
          useAtlas(DEFAULT, false);
        }
      };
      image.onerror = function () {
        if (fallback) { core.warn("the pet " + url + " did not load; showing the default pet"); useAtlas(DEFAULT, false); }
      };
      image.src = url;
    }
    useAtlas(typeof pet.spritesheet === "string" && pet.spritesheet ? pet.spritesheet : DEFAULT, true);

    // --- animation: one state at a time; a state that plays once returns to idle
    var state = null, frame = 0, timer = 0, looking = -1;
    function show(row, column, ms) {
      sprite.style.backgroundPosition = -column * CELL_W * SHOWN + "px " + -row * CELL_H * SHOWN + "px";
      sprite.setAttribute("data-row", String(row));
      sprite.setAttribute("data-frame", String(column));
      sprite.setAttribute("data-frame-ms", String(ms));
    }
    function play(next) {
      clearTimeout(timer);
      looking = -1;
      state = reduced ? "idle" : next;
      frame = 0;
      sprite.setAttribute("data-state", state);
      step();
    }
    function step() {
      var s = STATES[state], last = frame === s.frames - 1;
      var ms = last ? LAST_MS : s.frameMs;
      show(s.row, frame, ms);
      if (reduced) return;  // idle frame 0, still
      timer = setTimeout(function () {
        if (!last) frame += 1;
        else if (s.loops) frame = 0;
        else return play("idle");
        step();
      }, ms);
    }

    // --- while idle and at rest it looks toward the cursor: 16 directions clockwise from up
    document.addEventListener("mousemove", function (event) {
      if (reduced || state !== "idle") return;
      var box = sprite.getBoundingClientRect();
      var dx = event.clientX - (box.left + box.width / 2), dy = event.clientY - (box.top + box.height / 2);
      if (Math.hypot(dx, dy) < DEAD_ZONE) {
        if (looking >= 0) play("idle");
        return;
      }
      var angle = (Math.atan2(dx, -dy) * 180 / Math.PI + 360) % 360;
      var index = Math.round(angle / 22.5) % 16;
      if (index === looking) return;
      clearTimeout(timer);
      looking = index;
      sprite.setAttribute("data-look", String(index));
      show(PET.lookRows[Math.floor(index / 8)], index % 8, 0);
    }, { passive: true });

    // --- the moments of a conversation
    core.on("sending", function () { play("waiting"); });
    core.on("typing", function () { if (core.state.typing || core.state.agentTyping) play("running"); });
    core.on("event:agent.run", function () { play("running"); });
    core.on("reply", function () { play("jumping"); });
    core.on("help", function () { play("review"); });
    core.on("error", function () { play("failed"); });

    // --- the bubble: with the widget on the page, the queue's openChat is the widget's; the pet's own
    // click always opens the bubble
    function paint(open) {
      bubble.hidden = !open;
      sprite.setAttribute("aria-expanded", String(open));
      if (open) view.focus();
    }
    function toggle(open) {
      open = open === undefined ? bubble.hidden : open;
      if (core.has("widget")) {
        paint(open);
        if (open) core.session().catch(function (e) { core.warn("starting the chat failed: " + e.message); });
      } else {
        core.setOpen(open);
      }
      if (!open) sprite.focus();
    }
    core.on("open", function () { if (!core.has("widget")) paint(core.state.open); });
    core.on("shown", function () { host.hidden = !core.state.shown; });
    root.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && !bubble.hidden) { event.stopPropagation(); toggle(false); }
    });

    host.hidden = !core.state.shown;
    // the host element (not a global) lets a page or a test play a state: host.play("jumping")
    host.play = function (next) { if (STATES[next]) play(next); };
    core.ready.then(function () {
      document.body.append(host);
      core.attach("mascot");
      if (reduced) return play("idle");
      // it walks in along the bottom edge, then waves
      sprite.classList.add("entering");
      play("running-right");
      requestAnimationFrame(function () { requestAnimationFrame(function () { sprite.classList.remove("entering"); }); });
      sprite.addEventListener("transitionend", function () { play("waving"); }, { once: true });
    });
  }
})();
