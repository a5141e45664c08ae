"""Live frames and the channels they reach: what travels beside the log on NATS without being an event.

A worker (the AI agent's streamed text, its typing, the actions it offers) or an API process (the team's
typing) publishes a `LiveFrame` on the stream's `live` subject; every API process's hub pushes it to the
open `Channel`s it is for, without an SSE `id`, and nothing replays it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Literal

import msgspec
import nats
from nats.aio.msg import Msg

from events import stream
from events.supervision import keep_running

log = logging.getLogger("parley.realtime")

# A channel whose reader falls this far behind is closed; its client resumes with Last-Event-ID.
CHANNEL_BACKLOG = 1000


class LiveFrame(msgspec.Struct):
    """A frame for open channels only, published by a worker: to the organization's operators and, when
    `customer_id` is set, to that visitor."""

    org_id: uuid.UUID
    customer_id: uuid.UUID | None
    operators: bool
    event: str
    data: msgspec.Raw


def live_subject(stream_name: str) -> str:
    """A plain NATS subject beside the JetStream stream's own (which it does not match)."""
    return f"{stream.subject_of(stream_name)}.live"


live_decoder = msgspec.json.Decoder(LiveFrame)


class ConnectionLost(Exception):
    """The live frames' NATS connection closed (NATS stopped or restarted): it is made again."""


class LiveConnection:
    """The NATS connection live frames travel on, made again whenever it is lost (`stream.connect` does not
    reconnect by itself): run `run()` as a task. With `received`, it also subscribes to the live subject
    on every new connection and hands each message to it. Frames published while it is down are lost, as
    live frames may be."""

    def __init__(self, nats_url: str, subject: str, name: str,
                 received: Callable[[Msg], Awaitable[None]] | None = None):
        self.nats_url = nats_url
        self.subject = subject
        self.name = name
        self.received = received
        self._nc: nats.NATS | None = None  # while it is open

    async def run(self) -> None:
        await keep_running(self.name, self._run_once, log)

    async def _run_once(self) -> None:
        lost = asyncio.Event()

        async def closed() -> None:
            lost.set()

        nc = await stream.connect(self.nats_url, closed_cb=closed)
        try:
            if self.received is not None:
                await nc.subscribe(self.subject, cb=self.received)
            self._nc = nc
            await lost.wait()
            raise ConnectionLost("the NATS connection was lost")
        finally:
            self._nc = None
            await stream.close(nc)

    async def publish(self, live: LiveFrame) -> None:
        """Publishes a live frame to every API process's hub; ephemeral, so lost while NATS is away."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            return
        try:
            await nc.publish(self.subject, msgspec.json.encode(live))
        except Exception:  # what is stored is what counts; a live frame may be lost
            log.debug("a live frame was not published", exc_info=True)


@dataclass(eq=False)
class Held:
    """The credential an open stream was opened with (its kind and id, as `Principal.credential_id`), the
    credential generation it was last found standing at and when it ends by itself, if it does; `ended` is
    done once it was found revoked or expired."""

    kind: str
    credential_id: uuid.UUID
    generation: int
    expires_at: datetime | None = None
    ended: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def revoked(self) -> bool:
        return self.ended.done()

    def revoke(self) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


@dataclass(eq=False, slots=True)
class Channel:
    """One open stream: who it is for, the credential it holds (it ends with it), and the frames waiting
    to be written to it: `(position, frame)` pairs (position 0: not in the log), then None once it ended.
    No queue or task of its own: the stream writing it waits on `taken`, woken by what is put."""

    audience: Literal["operator", "visitor"]
    org_id: uuid.UUID
    customer_id: uuid.UUID | None = None
    operator_id: uuid.UUID | None = None  # an operator's own stream: their notifications reach it
    held: Held | None = None
    last_sent: int = 0
    pending: list[tuple[int, bytes] | None] = field(default_factory=list)
    waiter: asyncio.Future | None = None  # while the stream waits for something to write

    def put(self, position: int, data: bytes) -> bool:
        """False when the reader fell `CHANNEL_BACKLOG` frames behind: the channel is to be closed."""
        if len(self.pending) >= CHANNEL_BACKLOG:
            return False
        self.pending.append((position, data))
        self._wake()
        return True

    def idle(self) -> bool:
        return not self.pending

    @property
    def ended(self) -> bool:
        return bool(self.pending) and self.pending[-1] is None

    def end(self) -> None:
        self.pending.append(None)
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def taken(self) -> list[tuple[int, bytes] | None]:
        """Everything put since the last call, once there is something."""
        while not self.pending:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        items, self.pending = self.pending, []
        return items
