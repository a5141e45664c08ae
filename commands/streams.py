"""Loading an entity's stream for a decision: what a command needs to know before it appends."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Generic, TypeVar

from commands.errors import NotFound
from events.store import EventStore, Recorded
from events.types import Event

E = TypeVar("E", bound=Event)


def now() -> datetime:
    return datetime.now(timezone.utc)


def name_stream(kind: str, value: str) -> uuid.UUID:
    """The stream that reserves a unique name: the same name always maps to the same stream."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"parley:{kind}:{value}")


@dataclass(frozen=True)
class Entity(Generic[E]):
    created: E
    version: int
    history: list[Recorded]


def entity_of(history: list[Recorded], created_type: type[E], org_id: uuid.UUID, what: str) -> Entity[E]:
    """An entity of this organization from its stream; anything else (missing, other kind, other org) is 404."""
    if not history or not isinstance(history[0].event, created_type) or history[0].event.org_id != org_id:
        raise NotFound(f"{what} not found")
    return Entity(history[0].event, history[-1].version, history)


def load(store: EventStore, stream_id: uuid.UUID | None, created_type: type[E], org_id: uuid.UUID,
         what: str) -> Entity[E]:
    return entity_of(store.load(stream_id) if stream_id else [], created_type, org_id, what)


async def load_async(store: EventStore, stream_id: uuid.UUID | None, created_type: type[E], org_id: uuid.UUID,
                     what: str) -> Entity[E]:
    return entity_of(await store.load_async(stream_id) if stream_id else [], created_type, org_id, what)
