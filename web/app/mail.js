// Whether the service sends e-mail (PARLEY_SMTP_URL) and takes replies to it (GET /api/mail), and the notice
// the pages where e-mail matters show: the operators page (invitations, reset links) and the notification
// preferences (their e-mail channel).

import {get} from "./api.js";
import {h} from "./dom.js";

let state = null;

/** `{sending, replies}`, asked once per page load. */
export function mailState() {
  state ??= get("/api/mail").catch(() => ({sending: false, replies: false}));
  return state;
}

/** A note saying e-mail is off, or nothing (an empty fragment) when the service sends it. */
export async function mailOffNotice(what) {
  const {sending} = await mailState();
  if (sending) return document.createDocumentFragment();
  return h("p", {class: "notice", role: "note"},
    `E-mail is off on this server (PARLEY_SMTP_URL is not set): ${what}`);
}
