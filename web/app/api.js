// The dashboard's only way to the service: the public REST API with the operator's access token in the
// Authorization header (never in a URL). The token lives in this origin's localStorage, which no other
// origin can read; signing out revokes it on the server and forgets it here.

const TOKEN = "parley.token";
const WEBSITE = "parley.website";

export const session = {
  get token() { return localStorage.getItem(TOKEN); },
  set token(value) { localStorage.setItem(TOKEN, value); },
  get website() { return localStorage.getItem(WEBSITE); },
  set website(value) { localStorage.setItem(WEBSITE, value); },
  forget() { localStorage.removeItem(TOKEN); },
};

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `request failed (${status})`);
    this.status = status;
    this.field = problem?.field;
    this.type = problem?.type ?? "";
  }

  /** The problem's kind, the last segment of its type (`two-factor-required` ...). */
  is(kind) { return this.type.endsWith(`/${kind}`); }
}

/** Called when the token stops working (revoked elsewhere, or signed out in another tab). */
let onSignedOut = () => {};
export const whenSignedOut = (callback) => { onSignedOut = callback; };

function headers(extra = {}) {
  const token = session.token;
  return {...(token ? {Authorization: `Token ${token}`} : {}), ...extra};
}

/** A call to the API: `body` is sent as JSON, or as it is when it is a file (a Blob, with its own type). */
export async function api(method, path, body) {
  return (await versioned(method, path, body)).body;
}

/**
 * `api`, with the record's version: answers {body, etag}. With `ifMatch`, the change is made only if the
 * record is still at that version (else an ApiError with status 412, and nothing changed).
 */
export async function versioned(method, path, body, ifMatch) {
  const file = body instanceof Blob;
  const type = file ? body.type : "application/json";
  const init = {method, headers: headers({...(body === undefined ? {} : {"Content-Type": type}),
                                          ...(ifMatch ? {"If-Match": ifMatch} : {})})};
  if (body !== undefined) init.body = file ? body : JSON.stringify(body);
  const response = await fetch(path, init);
  if (!response.ok) {
    const problem = await response.json().catch(() => null);
    if (response.status === 401 && session.token) {
      session.forget();
      onSignedOut();
    }
    throw new ApiError(response.status, problem);
  }
  return {body: response.status === 204 ? null : await response.json(), etag: response.headers.get("ETag")};
}

/** A download (`Accept: type`) as a Blob, with the same credential and the same errors as `api`. */
export async function download(path, params, type) {
  const response = await fetch(`${path}?${new URLSearchParams(params)}`, {headers: headers({Accept: type})});
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  return response.blob();
}

/** Saves a download (`Accept: type`) as the file `name`, as the browser saves any file. */
export async function saveDownload(path, params, type, name) {
  const url = URL.createObjectURL(await download(path, params, type));
  Object.assign(document.createElement("a"), {href: url, download: name}).click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A file sent as the `file` part of a multipart/form-data body (the browser writes its boundary). */
export async function upload(path, file, name) {
  const form = new FormData();
  form.append("file", file, name ?? file.name ?? "file");
  const response = await fetch(path, {method: "POST", headers: headers(), body: form});
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  return response.json();
}

export const get = (path, params) => api("GET", params ? `${path}?${new URLSearchParams(params)}` : path);

/** `totp`: the code of an operator with two-factor sign-in (or a recovery code), once the server asked for it. */
export async function signIn(email, password, totp) {
  const {token} = await api("POST", "/api/operators/sessions", totp ? {email, password, totp} : {email, password});
  session.token = token;
}

export async function signOut() {
  try {
    await api("DELETE", "/api/operators/sessions/current");
  } finally {
    session.forget();
  }
}

/**
 * The organization's live changes from `GET /api/realtime`, read with fetch streaming (EventSource cannot
 * send the Authorization header). After a drop it reconnects with Last-Event-ID, so nothing is missed.
 * `onEvent(name, data)` runs for every event; returns a function that stops it.
 */
export function realtime(onEvent, onState = () => {}) {
  let lastId = null;
  let stopped = false;
  let controller = null;

  async function connect() {
    controller = new AbortController();
    const extra = lastId ? {"Last-Event-ID": lastId} : {};
    const response = await fetch("/api/realtime", {headers: headers(extra), signal: controller.signal});
    if (response.status === 401) {
      stopped = true;
      session.forget();
      onSignedOut();
      return;
    }
    if (!response.ok) throw new Error(`realtime answered ${response.status}`);
    onState("open");
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message", data = "", id = null;
        for (const line of block.split("\n")) {
          const colon = line.indexOf(":");
          const key = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (key === "event") name = text;
          else if (key === "data") data += text;
          else if (key === "id") id = text;
        }
        if (id) lastId = id;
        if (data) onEvent(name, JSON.parse(data));
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        await connect();
      } catch (error) {
        if (stopped) break;
      }
      if (stopped) break;
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return () => { stopped = true; controller?.abort(); };
}
