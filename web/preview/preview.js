// The dashboard's live preview of a website's widget or mascot (the Websites page frames this page, one
// frame per surface: ?surface=widget or ?surface=mascot): the real widget.js or mascot.js, opened, fed
// the form's settings by postMessage from the dashboard (same origin only), and never a request to the API.
(function () {
  "use strict";
  var surface = new URLSearchParams(location.search).get("surface") === "mascot" ? "mascot" : "widget";
  window.PARLEY_PREVIEW = true;
  window.PARLEY_WEBSITE_ID = "preview";
  window.$parley = [];
  if (surface === "mascot") window.PARLEY_MASCOT = { websiteId: "preview" };
  var script = document.createElement("script");
  script.src = "/" + surface + ".js";
  document.head.append(script);

  // a short exchange, so the visitor's bubbles show the brand colour and the team's reply its author
  function sample(core) {
    var now = Date.now();
    [{ _id: "sample-1", from: "customer", author: "customer", content: "Hi! Where is my order?", readAt: new Date(now - 60000).toISOString() },
     { _id: "sample-2", from: "operator", author: "operator", content: "It left our warehouse this morning.",
       operator: { displayName: "Sam", avatarUrl: "/app/icon.svg" } }].forEach(function (m, i) {
      m.conversationId = "sample";
      m.creationTime = new Date(now - (120 - i * 60) * 1000).toISOString();
      m.reactions = [];
      core.state.messages.set(m._id, m);
    });
    core.state.conversationId = "sample";
  }

  import("/parley-core.js").then(function (module) {
    var core = module.parley(location.origin);
    if (surface === "mascot") sample(core);
    window.addEventListener("message", function (event) {
      if (event.origin !== location.origin || !event.data || event.data.type !== "parley:preview") return;
      core.configure(event.data.config);
      core.emit("messages");
    });
    (function ready() {
      if (!core.surfaces.size) return setTimeout(ready, 20);
      core.setOpen(true);
      parent.postMessage({ type: "parley:preview-ready", surface: surface }, location.origin);
    })();
  });
})();
