"""The three interactive views (MCP Apps): self-contained HTML documents, no external script, style or
font, that render the structured result of their tool. The host hands the result to the view over
`postMessage` (`ui/notifications/tool-result`, after the `ui/initialize` handshake); the view draws it
with DOM text nodes only, never parsing data as HTML."""

from __future__ import annotations

OVERVIEW_URI = "ui://parley/overview.html"
INBOX_URI = "ui://parley/inbox.html"
ACTIVITY_URI = "ui://parley/activity.html"

_SHELL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>%(title)s</title>
<style>
body{font:14px system-ui,sans-serif;margin:0;padding:12px;color:#1d2433;background:#fff}
h1{font-size:15px;margin:0 0 10px}.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:8px}
.tile{border:1px solid #d6dae3;border-radius:8px;padding:10px}.tile b{display:block;margin-bottom:6px}
.num{font-size:20px;font-weight:600}.muted{color:#5b6478}table{border-collapse:collapse;width:100%%}
td,th{padding:4px 6px;border-bottom:1px solid #eceef3;text-align:left}.dot{display:inline-block;width:8px;height:8px;
border-radius:50%%;background:#2f6fed}.bar{display:flex;align-items:flex-end;gap:6px;height:140px}
.col{flex:1;display:flex;flex-direction:column;justify-content:flex-end;align-items:center}
.seg{width:100%%}.v{background:#2f6fed}.r{background:#28a06a}.c{background:#f0a020}
</style></head><body><h1 id="title">%(title)s</h1><div id="root" class="muted">Waiting for data...</div>
<script>
(function () {
  "use strict";
  var root = document.getElementById("root");
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function age(seconds) {
    if (seconds === null || seconds === undefined) return "none waiting";
    if (seconds < 3600) return Math.round(seconds / 60) + " min";
    if (seconds < 86400) return Math.round(seconds / 3600) + " h";
    return Math.round(seconds / 86400) + " d";
  }
  function when(text) { var d = new Date(text); return isNaN(d) ? "" : d.toLocaleString(); }
  %(render)s
  function show(result) {
    if (!result || !result.structuredContent) return;
    root.className = "";
    root.textContent = "";
    render(result.structuredContent);
  }
  var next = 1;
  function request(method, params) {
    window.parent.postMessage({jsonrpc: "2.0", id: next++, method: method, params: params}, "*");
  }
  window.addEventListener("message", function (event) {
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/tool-result") show(message.params);
    else if (message.id === 1 && message.result) {
      window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/initialized", params: {}}, "*");
    }
  });
  request("ui/initialize", {appInfo: {name: "parley-view", version: "1"}, appCapabilities: {},
                             protocolVersion: "2026-01-26"});
  window.parleyRender = show;
})();
</script></body></html>"""

_OVERVIEW = """
  function render(data) {
    var tiles = el("div", "tiles");
    data.websites.forEach(function (w) {
      var tile = el("div", "tile");
      tile.appendChild(el("b", null, w.name));
      tile.appendChild(el("div", "num", w.open + " open"));
      tile.appendChild(el("div", "muted", w.unread + " unread, " + w.resolved + " resolved, " + w.spam + " spam"));
      tile.appendChild(el("div", "muted", "longest wait: " + age(w.oldestWaitingSeconds)));
      tiles.appendChild(tile);
    });
    if (!data.websites.length) tiles.appendChild(el("p", "muted", "No websites."));
    root.appendChild(tiles);
  }"""

_INBOX = """
  function render(data) {
    document.getElementById("title").textContent = "Inbox: " + data.name;
    var table = el("table"), head = el("tr");
    ["", "Status", "Awaiting reply", "Last activity"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    data.rows.forEach(function (row) {
      var tr = el("tr"), mark = el("td");
      if (row.unread) { var dot = el("span", "dot"); dot.title = "unread"; mark.appendChild(dot); }
      tr.appendChild(mark);
      tr.appendChild(el("td", null, row.status));
      tr.appendChild(el("td", null, row.awaitingReply ? "yes" : "no"));
      tr.appendChild(el("td", "muted", when(row.lastEditTime)));
      table.appendChild(tr);
    });
    root.appendChild(table);
    if (!data.rows.length) root.appendChild(el("p", "muted", "No conversations."));
  }"""

_ACTIVITY = """
  function render(data) {
    document.getElementById("title").textContent = "Activity: " + data.name;
    var most = 1;
    data.days.forEach(function (d) { most = Math.max(most, d.conversations + d.visitorMessages + d.replies); });
    var chart = el("div", "bar");
    data.days.forEach(function (d) {
      var col = el("div", "col");
      [["c", d.conversations, "conversations"], ["v", d.visitorMessages, "visitor messages"], ["r", d.replies, "replies"]]
        .forEach(function (part) {
          var seg = el("div", "seg " + part[0]);
          seg.style.height = Math.round(120 * part[1] / most) + "px";
          seg.title = part[1] + " " + part[2];
          col.appendChild(seg);
        });
      col.appendChild(el("div", "muted", d.day.slice(5)));
      chart.appendChild(col);
    });
    root.appendChild(chart);
    root.appendChild(el("p", "muted", "orange: conversations started, blue: visitor messages, green: replies"));
  }"""


def page(title: str, render: str) -> str:
    return _SHELL % {"title": title, "render": render}


OVERVIEW_HTML = page("Parley overview", _OVERVIEW)
INBOX_HTML = page("Parley inbox", _INBOX)
ACTIVITY_HTML = page("Parley conversation activity", _ACTIVITY)
