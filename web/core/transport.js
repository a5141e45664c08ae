// How the visitor's browser talks to the service: JSON calls, and the realtime stream read with fetch
// streaming (so the session credential goes in a header, never in a URL).

/** A JSON call; a failure throws an Error with the problem's detail and the HTTP `status`. */
export async function request(base, method, path, body, authorization) {
  const headers = {};
  if (authorization) headers.Authorization = authorization;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error((data && data.detail) || response.status + " from " + path);
    error.status = response.status;
    throw error;
  }
  return data;
}

/** A file as the `file` part of a multipart body (a pasted image has no name: it gets one). */
export async function uploadFile(base, path, file, authorization) {
  const form = new FormData();
  form.append("file", file, file.name || "pasted image.png");
  const response = await fetch(base + path, { method: "POST", headers: { Authorization: authorization }, body: form });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw Object.assign(new Error((data && data.detail) || response.status + " from " + path), { status: response.status });
  return data;
}

/** The realtime stream's response, resumed after `lastEventId` when there is one. */
export function openEvents(url, authorization, lastEventId, signal) {
  const headers = { Authorization: authorization };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  return fetch(url, { headers, signal });
}

/**
 * Reads a `text/event-stream` body until it ends: `onOpen()` once its first bytes arrive, then
 * `onFrame({id, event, data})` for every frame.
 */
export async function readEvents(response, onOpen, onFrame) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let opened = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    if (!opened) {
      opened = true;
      onOpen();
    }
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      onFrame(parseFrame(buffer.slice(0, end)));
      buffer = buffer.slice(end + 2);
    }
  }
}

function parseFrame(text) {
  let id = null, event = "message", data = "";
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon === 0) continue;
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data += value;
  }
  return { id, event, data };
}
