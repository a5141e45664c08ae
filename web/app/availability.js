// The operator's availability in the header: a native select (keyboard operable as it is) to choose online,
// away or offline, a dot and a word for how the team sees them now, and the reports of activity at the dashboard
// (a key, a click, the tab shown again) that keep an operator who chose online from reading as away
// (projections/views/availability.py). A report goes at most every third of the server's delay.

import {api, get} from "./api.js";
import {h} from "./dom.js";

const CHOICES = [["online", "Online"], ["away", "Away"], ["offline", "Offline"]];
const ACTIVITY = ["keydown", "pointerdown", "focus"];

export function availabilityControl(bus) {
  const select = h("select", {id: "availability", onchange: () => choose(select.value)},
    CHOICES.map(([value, label]) => h("option", {value}, label)));
  const dot = h("span", {class: "availability-dot", "aria-hidden": "true"});
  const state = h("span", {class: "availability-state", role: "status"});
  const element = h("div", {class: "availability"}, dot,
    h("label", null, h("span", {class: "visually-hidden"}, "Availability"), select), state);
  let shown = null; // the last answer: {status, chosen, awayAfterSeconds}
  let lastReport = 0;

  function show(answer) {
    shown = answer;
    select.value = answer.chosen;
    element.dataset.status = answer.status;
    // said only when it differs from the choice: online, but away since inactive
    state.textContent = answer.status === answer.chosen ? "" : "away while inactive";
  }

  async function choose(status) {
    show(await api("PUT", "/api/operators/me/availability", {status}));
    lastReport = Date.now();
  }

  async function report() {
    if (!shown || Date.now() - lastReport < shown.awayAfterSeconds * 1000 / 3) return;
    lastReport = Date.now();
    show(await api("POST", "/api/operators/me/activity").catch(() => shown));
  }

  const onVisible = () => { if (document.visibilityState === "visible") report(); };
  for (const name of ACTIVITY) addEventListener(name, report, {capture: true, passive: true});
  document.addEventListener("visibilitychange", onVisible);
  // chosen in another tab or window: the realtime stream says so
  const onChosen = async (event) => {
    if (event.detail.operatorId === element.operatorId) show(await get("/api/operators/me/availability"));
  };
  bus.addEventListener("operator.availability", onChosen);
  element.start = async (operatorId) => {
    element.operatorId = operatorId;
    show(await api("POST", "/api/operators/me/activity")); // opening the dashboard is activity
    lastReport = Date.now();
  };
  element.stop = () => {
    for (const name of ACTIVITY) removeEventListener(name, report, {capture: true});
    document.removeEventListener("visibilitychange", onVisible);
    bus.removeEventListener("operator.availability", onChosen);
  };
  return element;
}
