// A website's automatic assignment, on its card of the Websites page: the mode (off, round-robin,
// least-busy), each operator's capacity, the team it assigns among, and whether a reply takes an unassigned
// conversation (PUT /api/websites/{websiteName}/assignment).

import {api, get} from "../api.js";
import {errorBox, field, h, replace} from "../dom.js";

const MODES = [["off", "Off"], ["round-robin", "Round-robin"], ["least-busy", "Least busy"]];

export function assignmentSection(website) {
  const path = `/api/websites/${website.websiteName}/assignment`;
  const id = website._id;
  const section = h("div", {class: "assignment", "data-assignment": website.websiteName});
  const status = h("div", {"aria-live": "polite"});
  const render = (setting, teams) => {
    const mode = h("select", {id: `assignment-mode-${id}`},
      MODES.map(([value, label]) => h("option", {value, selected: value === setting.mode}, label)));
    const capacity = h("input", {type: "number", min: "1", max: "10000", required: true, value: String(setting.capacity),
                                 id: `assignment-capacity-${id}`});
    const team = h("select", {id: `assignment-team-${id}`}, h("option", {value: ""}, "Every operator"),
      teams.map((t) => h("option", {value: t._id, selected: t._id === setting.teamId}, t.name)));
    const onReply = h("input", {type: "checkbox", checked: setting.assignOnReply, id: `assignment-reply-${id}`});
    replace(section, h("h3", null, "Automatic assignment"),
      h("p", {class: "notice"}, "New conversations go to an online operator below their capacity of open conversations; " +
        "one nobody can take waits until someone is online with room."),
      h("form", {onsubmit: async (event) => {
        event.preventDefault();
        try {
          const saved = await api("PUT", path, {mode: mode.value, capacity: Number(capacity.value),
            teamId: team.value || null, assignOnReply: onReply.checked});
          render(saved, teams);
          replace(status, h("p", {class: "status-ok"}, "Saved."));
        } catch (error) {
          replace(status, errorBox(error));
        }
      }},
        h("div", {class: "grid2"}, field("Mode", mode), field("Capacity per operator", capacity),
          field("Assign among", team)),
        h("label", null, onReply, " A reply by an operator takes an unassigned conversation"), " ",
        h("button", {type: "submit", class: "secondary"}, "Save assignment")),
      status);
  };
  Promise.all([get(path), get("/api/teams").catch(() => [])])
    .then(([setting, teams]) => render(setting, teams), (error) => replace(section, errorBox(error)));
  return section;
}
