// The avatar visitors and the team see beside the signed-in operator's replies and notes: an uploaded
// image (re-encoded by the service, its metadata removed) or, without one, initials the service draws.

import {api} from "../api.js";
import {errorBox, field, h, replace} from "../dom.js";

const IMAGE_TYPES = "image/png,image/jpeg,image/webp";

export function avatarSection(app) {
  const status = h("div", {"aria-live": "polite"});
  const say = (...content) => replace(status, ...content);
  // no version named: its answer is cached for minutes at most, so a new name's initials show soon
  const avatar = h("img", {id: "profile-avatar", class: "avatar-large", alt: "Your avatar", width: 64, height: 64,
                           src: `/api/operators/${app.me._id}/avatar`});
  const file = h("input", {id: "profile-avatar-file", type: "file", accept: IMAGE_TYPES});
  const shown = (identity) => { avatar.src = identity.avatarUrl; };
  return h("form", {class: "card stack", id: "profile-avatar-form", onsubmit: async (event) => {
    event.preventDefault();
    if (!file.files.length) return say(errorBox("Choose a PNG, JPEG or WebP image first."));
    try {
      shown(await api("PUT", "/api/operators/me/avatar", file.files[0]));
      file.value = "";
      say(h("p", {class: "notice"}, "Your avatar is saved (cropped to a square, its metadata removed)."));
    } catch (error) { say(errorBox(error)); }
  }}, h("h2", null, "Avatar"),
    h("div", {class: "identity"}, avatar, h("p", null, "Shown beside your replies; your e-mail address never is.")),
    field("Image", file, "PNG, JPEG or WebP, at most 5 MB."),
    h("div", {class: "toolbar"},
      h("button", {type: "submit"}, "Upload"),
      h("button", {type: "button", class: "secondary", id: "profile-avatar-remove", onclick: async () => {
        try {
          shown(await api("DELETE", "/api/operators/me/avatar"));
          say(h("p", {class: "notice"}, "Your avatar is removed: your initials show instead."));
        } catch (error) { say(errorBox(error)); }
      }}, "Remove avatar")),
    status);
}
