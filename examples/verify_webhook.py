#!/usr/bin/env python3
"""A Parley webhook receiver that checks every delivery before trusting it, as an integrator should.

Standard library only. Run it with the secret that creating the subscription returned:

    PARLEY_WEBHOOK_SECRET=whsec_... python examples/verify_webhook.py --port 8080

What it checks, in order:
1. `X-Service-Signature: t=<timestamp>,v1=<hex>` is an HMAC-SHA256 of `<timestamp>.<raw body>` keyed by
   the secret (compared in constant time, over the raw bytes: never re-serialize the JSON first).
2. The timestamp is within five minutes of our clock, so an old captured request cannot be replayed.
3. The same signature is not seen twice within those five minutes, so a fresh capture cannot be
   replayed either.
Then it drops duplicates: Parley delivers at least once, and every retry of one event to one
subscription carries the same `X-Service-Delivery` id. `X-Service-Position` orders events when
deliveries arrive out of order (each delivery is independent; a failing one never holds back the next).
Answer 2xx quickly (do the work later): anything else, or no answer within 10 seconds, is retried.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300


class Rejected(Exception):
    """The request is not a genuine, fresh delivery."""


def verify(secret: str, signature_header: str | None, body: bytes, now: float | None = None) -> dict:
    """The delivery's JSON payload, once its signature and timestamp are good; Rejected otherwise."""
    if not signature_header:
        raise Rejected("no X-Service-Signature header")
    timestamp, signatures = None, []
    for part in signature_header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        raise Rejected("malformed X-Service-Signature header")
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_SECONDS:
        raise Rejected("timestamp outside the tolerance: an old or replayed request")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        raise Rejected("signature mismatch: wrong secret or altered body")
    return json.loads(body)


class ReplayGuard:
    """Remembers the signatures seen within the tolerance; a second sighting is a replay."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.lock = threading.Lock()

    def check(self, signature_header: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.lock:
            self.seen = {s: at for s, at in self.seen.items() if now - at <= 2 * TOLERANCE_SECONDS}
            if signature_header in self.seen:
                raise Rejected("replayed request")
            self.seen[signature_header] = now


class Deduplicator:
    """Delivery ids already processed; a real receiver keeps them in its database."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.lock = threading.Lock()

    def first_time(self, delivery_id: str) -> bool:
        with self.lock:
            if delivery_id in self.done:
                return False
            self.done.add(delivery_id)
            return True


def make_handler(secret: str, guard: ReplayGuard, dedup: Deduplicator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            signature = self.headers.get("X-Service-Signature")
            try:
                payload = verify(secret, signature, body)
                guard.check(signature)
            except (Rejected, ValueError) as exc:
                return self.answer(400, f"rejected: {exc}")
            if not dedup.first_time(self.headers.get("X-Service-Delivery", "")):
                return self.answer(200, "duplicate delivery, already processed")
            print(f"accepted {payload['event']} at position {self.headers.get('X-Service-Position')}: "
                  f"{payload['data'].get('_id')}", flush=True)
            self.answer(200, "ok")

        def answer(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    secret = os.environ.get("PARLEY_WEBHOOK_SECRET")
    if not secret:
        raise SystemExit("set PARLEY_WEBHOOK_SECRET to the secret returned when the subscription was created")
    server = ThreadingHTTPServer((args.host, args.port), make_handler(secret, ReplayGuard(), Deduplicator()))
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
