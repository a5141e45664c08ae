// Reports as pictures: conversations per day, median first-response time, ratings over time, busiest
// hours and totals by website, drawn as SVG by the small chart functions below (no library, no build).
// Each chart also carries its numbers as a table for screen readers. Below them, the figures per operator,
// team and label as tables, each downloadable as CSV with the same period and website.

import {get, saveDownload} from "../api.js";
import {Page} from "../page.js";
import {errorBox, field, h, replace, s} from "../dom.js";

const W = 560, H = 220, PAD = {left: 44, right: 10, top: 12, bottom: 30};
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

function niceMax(value) {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / step) * step;
}

/** Vertical bars; `series` is a list of [className, values] stacked in that order. */
function bars(labels, series, {every = 1, format = String} = {}) {
  const totals = labels.map((_, i) => series.reduce((sum, [, values]) => sum + (values[i] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - PAD.left - PAD.right, plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / labels.length, width = Math.max(1, slot * 0.7);
  const y = (value) => PAD.top + plotH - (value / max) * plotH;
  const ticks = [0, max / 2, max];
  return s("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", "aria-hidden": "true"},
    ticks.map((tick) => [
      s("line", {class: "axis", x1: PAD.left, x2: W - PAD.right, y1: y(tick), y2: y(tick)}),
      s("text", {x: PAD.left - 6, y: y(tick) + 4, "text-anchor": "end"}, format(tick))]),
    labels.map((label, i) => {
      let base = 0;
      const x = PAD.left + i * slot + (slot - width) / 2;
      return [
        series.map(([className, values]) => {
          const value = values[i] ?? 0;
          const rect = s("rect", {class: className, x, width, y: y(base + value), height: y(base) - y(base + value)},
            s("title", null, `${label}: ${format(value)}`));
          base += value;
          return rect;
        }),
        i % every === 0 && s("text", {x: x + width / 2, y: H - 10, "text-anchor": "middle"}, label)];
    }));
}

function dataTable(caption, headers, rows) {
  return h("table", {class: "visually-hidden"}, h("caption", null, caption),
    h("thead", null, h("tr", null, headers.map((t) => h("th", {scope: "col"}, t)))),
    h("tbody", null, rows.map((row) => h("tr", null, row.map((cell) => h("td", null, cell))))));
}

function chart(title, summary, svg, table) {
  return h("figure", {class: "chart card"}, h("figcaption", null, h("h2", null, title), h("p", {class: "notice"}, summary)),
    svg, table);
}

// two significant digits: a sub-second axis reads 0 s, 0.4 s, 0.8 s, not 0 s, 0 s, 1 s
const minutes = (seconds) => seconds == null ? "—"
  : seconds < 90 ? `${Number(seconds.toPrecision(2))} s` : `${Number((seconds / 60).toPrecision(2))} min`;

// the breakdown tables: the route under /api/reports/, the heading, the row's id and name, the name's
// column, what an empty table says (every team or label is a row, with or without figures)
const BREAKDOWNS = [
  {table: "operators", title: "By operator", id: "operatorId", name: "displayName", column: "Operator"},
  {table: "teams", title: "By team", id: "teamId", name: "name", column: "Team", empty: "No teams yet."},
  {table: "labels", title: "By label", id: "labelId", name: "name", column: "Label", empty: "No labels yet."},
];
const satisfaction = ({rated, happy}) => rated ? `${Math.round((100 * happy) / rated)} % (${happy} of ${rated})` : "—";

function breakdownTable({table, title, id, name, column, empty}, rows, onDownload) {
  const captionId = `breakdown-${table}`;
  const columns = [column, "Conversations", "Replies", "First response (median)", "First response (90 %)",
    "Resolution (median)", "Resolution (90 %)", "Visitors happy"];
  return h("section", {class: "card breakdown", "data-table": table},
    h("div", {class: "toolbar"}, h("h2", {id: captionId}, title),
      h("button", {type: "button", "aria-describedby": captionId, onclick: onDownload}, "Download CSV")),
    h("table", {"aria-labelledby": captionId},
      h("thead", null, h("tr", null, columns.map((text) => h("th", {scope: "col"}, text)))),
      h("tbody", null, rows.length ? rows.map((row) => h("tr", {"data-id": row[id]},
        h("th", {scope: "row"}, row[name] ?? row[id]), h("td", null, row.conversations), h("td", null, row.replies),
        [row.firstResponseMedianSeconds, row.firstResponseP90Seconds, row.resolutionMedianSeconds,
          row.resolutionP90Seconds].map((seconds) => h("td", null, minutes(seconds))),
        h("td", null, satisfaction(row))))
        : h("tr", null, h("td", {colspan: columns.length, class: "empty"}, empty)))));
}

/** The start of the period's first day in the browser's time zone: the charts' days, as a time. */
function periodStart(days) {
  const start = new Date();
  start.setHours(0, 0, 0, 0);
  start.setDate(start.getDate() - (days - 1));
  return start.toISOString();
}

class ParleyReports extends Page {
  show() {
    const days = h("select", {id: "report-days"}, [7, 30, 90].map((n) => h("option", {value: n}, `Last ${n} days`)));
    days.value = "30";
    const scope = h("select", {id: "report-website"}, h("option", {value: ""}, "Every website"),
      this.app.websites.map((w) => h("option", {value: w._id}, w.websiteName)));
    this.charts = h("div", {class: "charts", "aria-live": "polite"});
    this.tables = h("div", {class: "breakdowns"});
    const load = () => this.load(days.value, scope.value);
    days.addEventListener("change", load);
    scope.addEventListener("change", load);
    replace(this, h("h1", null, "Reports"),
      h("div", {class: "toolbar"}, field("Period", days), field("Website", scope)), this.charts, this.tables);
    load();
  }

  async load(days, websiteId) {
    const website = websiteId ? {websiteId} : {};
    const period = {since: periodStart(Number(days)), ...website};
    let report, breakdowns;
    try {
      [report, ...breakdowns] = await Promise.all([get("/api/reports", {days, timezone: ZONE, ...website}),
        ...BREAKDOWNS.map(({table}) => get(`/api/reports/${table}`, period))]);
    } catch (error) {
      return replace(this.charts, errorBox(error));
    }
    replace(this.tables, BREAKDOWNS.map((breakdown, i) => breakdownTable(breakdown, breakdowns[i],
      () => saveDownload(`/api/reports/${breakdown.table}`, period, "text/csv", `${breakdown.table}.csv`)
        .catch((error) => this.tables.prepend(errorBox(error))))));
    const labels = report.days.map((d) => d.date.slice(5));
    const every = Math.ceil(labels.length / 10);
    const conversations = report.days.map((d) => d.conversations);
    const waits = report.days.map((d) => d.medianFirstResponseSeconds);
    const answered = waits.filter((w) => w != null).sort((a, b) => a - b);
    const ratings = ["happy", "neutral", "unhappy"].map((r) => [`bar-${r}`, report.days.map((d) => d.ratings[r])]);
    const hours = report.busiestHours;
    const busiest = hours.indexOf(Math.max(...hours));
    replace(this.charts,
      chart("Conversations per day", `${conversations.reduce((a, b) => a + b, 0)} in ${labels.length} days`,
        bars(labels, [["bar", conversations]], {every}),
        dataTable("Conversations per day", ["Day", "Conversations"], report.days.map((d) => [d.date, d.conversations]))),
      chart("Median first response", answered.length ? `Typical day: ${minutes(answered[answered.length >> 1])}` : "No answered conversations yet",
        bars(labels, [["bar2", waits.map((w) => w ?? 0)]], {every, format: minutes}),
        dataTable("Median first response per day", ["Day", "Median"], report.days.map((d) => [d.date, minutes(d.medianFirstResponseSeconds)]))),
      chart("Ratings", "Happy, neutral and unhappy ratings of the team's replies",
        bars(labels, ratings, {every}),
        dataTable("Ratings per day", ["Day", "Happy", "Neutral", "Unhappy"],
          report.days.map((d) => [d.date, d.ratings.happy, d.ratings.neutral, d.ratings.unhappy]))),
      chart("Busiest hours", hours.some(Boolean) ? `Most visitor messages around ${busiest}:00 (${report.timezone})` : "No visitor messages yet",
        bars(hours.map((_, hour) => String(hour)), [["bar", hours]], {every: 3}),
        dataTable("Visitor messages per hour", ["Hour", "Messages"], hours.map((n, hour) => [`${hour}:00`, n]))),
      chart("By website", "Conversations started in the period",
        bars(report.byWebsite.map((w) => w.websiteName), [["bar", report.byWebsite.map((w) => w.conversations)]]),
        dataTable("Conversations by website", ["Website", "Conversations"], report.byWebsite.map((w) => [w.websiteName, w.conversations]))));
    this.dataset.ready = "true";
  }
}

customElements.define("parley-reports", ParleyReports);
