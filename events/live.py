"""Live frames and the channels they reach: what travels beside the log on NATS without being an event.

A worker (the AI agent's streamed text, its typing, the actions it offers) or an API process (the team's
typing) publishes a `LiveFrame` on the stream's `live` subject; every API process's hub pushes it to the
open `Channel`s it is for, without an SSE `id`, and nothing replays it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from events import stream

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


async def publish_live(nc, subject: str, live: LiveFrame) -> None:
    """Publishes a live frame to every API process's hub; ephemeral, so lost while NATS is away."""
    if nc is None or not nc.is_connected:
        return
    try:
        await nc.publish(subject, msgspec.json.encode(live))
    except Exception:  # what is stored is what counts; a live frame may be lost
        log.debug("a live frame was not published", exc_info=True)


@dataclass(eq=False)
class Channel:
    """One open stream: who it is for, and the frames waiting to be written to it."""

    audience: Literal["operator", "visitor"]
    org_id: uuid.UUID
    customer_id: uuid.UUID | None = None
    last_sent: int = 0
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    def put(self, position: int, data: bytes) -> bool:
        if self.queue.qsize() >= CHANNEL_BACKLOG:
            return False
        self.queue.put_nowait((position, data))
        return True
