// The forms shown before an operator is signed in, besides sign-in itself: accepting an invitation, setting
// a password from a reset link (both opened from a link /app/#/invite/<token>, /app/#/reset/<token>: the token
// stays in the fragment, which the browser never sends to the server) and creating a fresh install's first
// owner. Each calls `done(token)` once the service signed the operator in, or `done(null)` to go to sign-in.

import {api, session} from "./api.js";
import {errorBox, field, h} from "./dom.js";

const MIN_PASSWORD = 10; // commands/accounts.py MIN_PASSWORD: the service says so too, in a 400

function passwordInput(autocomplete = "new-password") {
  return h("input", {type: "password", name: "password", autocomplete, required: true, minlength: String(MIN_PASSWORD)});
}

/** A form that posts what `send()` answers, and hands the result to `then`; its errors in a live region. */
function form(title, intro, fields, submitLabel, send, then) {
  const status = h("div", {"aria-live": "polite"});
  const element = h("form", {class: "signin card stack", onsubmit: async (event) => {
    event.preventDefault();
    const button = element.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await then(await send());
    } catch (error) {
      status.replaceChildren(errorBox(error));
      button.disabled = false;
    }
  }}, h("h1", null, title), intro && h("p", null, intro), fields, h("button", {type: "submit"}, submitLabel), status);
  return element;
}

export function inviteForm(token, done) {
  const name = h("input", {name: "displayName", autocomplete: "name", maxlength: "100"});
  const password = passwordInput();
  return form("Join your team on Parley",
    "Choose the name visitors and your team will see, and a password. Already an operator of another " +
    "organization? Give your existing password: the name is kept.",
    [field("Display name", name), field("Password", password, `At least ${MIN_PASSWORD} characters.`)],
    "Join", () => api("POST", `/api/invitations/${encodeURIComponent(token)}/accept`,
                      {displayName: name.value.trim() || null, password: password.value}),
    ({token: signedIn}) => done(signedIn));
}

export function resetForm(token, done) {
  const password = passwordInput();
  return form("Choose a new password", "Every session of your account will be signed out.",
    [field("New password", password, `At least ${MIN_PASSWORD} characters.`)], "Set password",
    () => api("POST", `/api/password-resets/${encodeURIComponent(token)}`, {password: password.value}),
    () => done(null, "Your password is set: sign in with it."));
}

export function setupForm(state, done) {
  const organization = h("input", {name: "organizationName", required: true, maxlength: "100", autocomplete: "organization"});
  const name = h("input", {name: "displayName", autocomplete: "name", maxlength: "100"});
  const email = h("input", {type: "email", name: "email", autocomplete: "username", required: true});
  const password = passwordInput();
  const code = !state.local && h("input", {name: "setupCode", required: true, autocomplete: "off"});
  return form("Set up Parley",
    "No operator exists yet: create the organization and its first owner. " +
    (state.local ? "" : "From another machine, give the setup code the server printed when it started."),
    [field("Organization", organization), field("Your name", name), field("E-mail", email),
     field("Password", password, `At least ${MIN_PASSWORD} characters.`), code && field("Setup code", code)],
    "Create the owner", () => api("POST", "/api/setup", {
      organizationName: organization.value.trim(), displayName: name.value.trim() || null, email: email.value.trim(),
      password: password.value, ...(code ? {setupCode: code.value.trim()} : {})}),
    ({token}) => done(token));
}

/** Signs in with a token the service just gave (an accepted invitation, the first owner). */
export function keep(token) {
  session.token = token;
}
