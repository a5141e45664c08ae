// A website's business hours on the Websites page: its time zone, each weekday's opening ranges, holidays
// and the away message posted once in a conversation whose visitor writes while the website is closed.

import {api} from "../api.js";
import {errorBox, field, h, replace} from "../dom.js";

const DAYS = [["mon", "Monday"], ["tue", "Tuesday"], ["wed", "Wednesday"], ["thu", "Thursday"], ["fri", "Friday"],
              ["sat", "Saturday"], ["sun", "Sunday"]];
const ZONES = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];

/** "09:00-12:00, 13:00-17:00" from [["09:00", "12:00"], ["13:00", "17:00"]], and back. */
const rangesText = (ranges) => (ranges ?? []).map(([start, end]) => `${start}-${end}`).join(", ");
const rangesOf = (text) => text.split(",").map((part) => part.trim()).filter(Boolean)
  .map((part) => part.split("-").map((clock) => clock.trim()));

export function hoursSection(website) {
  const path = `/api/websites/${website.websiteName}/hours`;
  const id = website._id;
  const section = h("div", {class: "hours"}, h("h3", null, "Business hours"));
  const status = h("div", {"aria-live": "polite"});
  const render = (hours) => {
    const zone = h("input", {id: `hours-zone-${id}`, value: hours.timezone, list: `zones-${id}`, required: true,
                             autocomplete: "off", spellcheck: "false"});
    const zones = h("datalist", {id: `zones-${id}`}, ZONES.map((name) => h("option", {value: name})));
    const days = Object.fromEntries(DAYS.map(([day]) => [day, h("input", {
      id: `hours-${day}-${id}`, value: rangesText(hours.weekly[day]), placeholder: "closed", "data-day": day})]));
    const holidays = h("textarea", {id: `hours-holidays-${id}`, rows: "3", placeholder: "2026-12-25"});
    holidays.value = hours.holidays.join("\n");
    const away = h("textarea", {id: `hours-away-${id}`, rows: "2", maxlength: "2000"});
    away.value = hours.awayMessage ?? "";
    replace(section, h("h3", null, "Business hours"),
      h("form", {class: "stack", onsubmit: async (event) => {
        event.preventDefault();
        const body = {
          timezone: zone.value.trim(),
          weekly: Object.fromEntries(DAYS.map(([day]) => [day, rangesOf(days[day].value)])
            .filter(([, ranges]) => ranges.length)),
          holidays: holidays.value.split(/\s+/).filter(Boolean),
          awayMessage: away.value.trim() || null,
        };
        try {
          render(await api("PUT", path, body));
          replace(status, h("p", {class: "status-ok"}, "Saved."));
        } catch (error) {
          replace(status, errorBox(error));
        }
      }},
        field("Time zone", zone, "An IANA name, such as Europe/Paris."), zones,
        h("fieldset", null, h("legend", null, "Opening hours (HH:MM-HH:MM, several separated by commas; empty: closed)"),
          DAYS.map(([day, label]) => h("div", {class: "hours-day"}, field(label, days[day])))),
        field("Holidays", holidays, "Closed dates, one per line, as YYYY-MM-DD."),
        field("Away message", away, "Posted once in a conversation when a visitor writes outside these hours. Empty: none."),
        h("button", {type: "submit", class: "secondary"}, "Save hours")),
      status);
  };
  api("GET", path).then(render, (error) => replace(section, errorBox(error)));
  return section;
}
