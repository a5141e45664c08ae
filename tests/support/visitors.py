"""Test helpers for the visitor's side: chat sessions, and a Server-Sent Events reader."""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import socket
import threading
from dataclasses import dataclass

import httpx


def sign(secret: str, value: str) -> str:
    return hmac.new(secret.encode(), value.encode(), hashlib.sha256).hexdigest()


def chat(token: str) -> dict[str, str]:
    return {"Authorization": f"ChatSession {token}"}


@dataclass
class Visitor:
    token: str
    customer_id: str

    @property
    def headers(self) -> dict[str, str]:
        return chat(self.token)


def start_session(http: httpx.Client, website_id, **body) -> Visitor:
    response = http.post("/api/chat/sessions", json={"websiteId": str(website_id), **body})
    assert response.status_code == 200, response.text
    return Visitor(response.json()["sessionToken"], response.json()["customerId"])


def visitor_with_conversation(http: httpx.Client, tenant) -> tuple[Visitor, str]:
    visitor = start_session(http, tenant.website_id)
    response = http.post("/api/chat/conversations", headers=visitor.headers)
    assert response.status_code == 200, response.text
    return visitor, response.json()["_id"]


class Chatting:
    """A visitor in one conversation of the tenant's website, talking through the visitor API as the
    widget does."""

    def __init__(self, http: httpx.Client, tenant):
        self.http = http
        self.visitor, self.conversation_id = visitor_with_conversation(http, tenant)
        self.headers = self.visitor.headers

    def say(self, content: str) -> dict:
        response = self.http.post("/api/chat/messages", headers=self.headers,
                                  json={"conversationId": self.conversation_id, "content": content})
        assert response.status_code == 200, response.text
        return response.json()

    def transcript(self) -> list[dict]:
        return self.http.get("/api/chat/messages", headers=self.headers,
                             params={"conversationId": self.conversation_id}).json()


@dataclass
class Pushed:
    id: int  # 0 for a live frame
    event: str
    data: dict


class EventStream:
    """Reads an SSE response on a thread; `next()` returns the pushed events in order."""

    def __init__(self, base_url: str, path: str, headers: dict[str, str]):
        self.events: queue.Queue[Pushed | None] = queue.Queue()
        self.status: int | None = None
        self.body = b""
        self._opened = threading.Event()
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(30, read=None))
        self._response: httpx.Response | None = None
        threading.Thread(target=self._read, args=(path, headers), daemon=True).start()
        assert self._opened.wait(30), "the stream did not open"

    def _read(self, path: str, headers: dict[str, str]) -> None:
        try:
            with self._client.stream("GET", path, headers=headers) as response:
                self._response, self.status = response, response.status_code
                self.headers = response.headers
                if response.status_code != 200:
                    self.body = response.read()
                    return
                fields: dict[str, str] = {}
                for line in response.iter_lines():
                    self._opened.set()  # the server's first bytes: the channel is open
                    if line == "":
                        if "data" in fields:
                            # a live frame (the agent's streamed text) has no id: it is not in the log
                            self.events.put(Pushed(int(fields.get("id", 0)), fields.get("event", "message"),
                                                   json.loads(fields["data"])))
                        fields = {}
                    elif not line.startswith(":"):
                        name, _, value = line.partition(":")
                        fields[name] = value.removeprefix(" ")
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._opened.set()
            self.events.put(None)

    def next(self, timeout: float = 30) -> Pushed:
        pushed = self.events.get(timeout=timeout)
        assert pushed is not None, "the stream ended"
        return pushed

    def until(self, predicate, timeout: float = 30) -> list[Pushed]:
        """Every event up to and including the first that matches."""
        seen = []
        while True:
            seen.append(self.next(timeout))
            if predicate(seen[-1]):
                return seen

    def close(self) -> None:
        """Shuts the socket down, which wakes the reader thread and tells the server at once."""
        if self._response is not None:
            sock = self._response.extensions["network_stream"].get_extra_info("socket")
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the server
        self._client.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
