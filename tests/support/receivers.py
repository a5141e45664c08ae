"""Real HTTP endpoints on loopback for webhook tests: they record every request and answer as told."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    hold: threading.Event | None = None  # the answer waits until this is set


class Receiver:
    """`answer(n)` decides the reply to the n-th request (0-based); the default is 200."""

    def __init__(self, answer: Callable[[int], Answer] | None = None):
        self.answer = answer or (lambda n: Answer())
        self.requests: list[Received] = []
        self.held = self.most_held = 0  # requests waiting on their `hold` now, and at most at once
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.changed:
                    n = len(receiver.requests)
                    receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    receiver.changed.notify_all()
                reply = receiver.answer(n)
                if reply.hold is not None:
                    with receiver.changed:
                        receiver.held += 1
                        receiver.most_held = max(receiver.most_held, receiver.held)
                    reply.hold.wait(60)
                    with receiver.changed:
                        receiver.held -= 1
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the caller gave up (a timeout test)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """The first `count` requests, once they have arrived."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
                self.changed.wait(left)
            return list(self.requests[:count])

    def events(self) -> list[str]:
        with self.changed:
            return [r.header("X-Service-Event") for r in self.requests]
