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


def created_of(first: Recorded | None, created_type: type[E], org_id: uuid.UUID, what: str) -> E:
    """The event that created an entity of this organization; anything else (missing, other kind, other
    org) is 404."""
    if first is None or not isinstance(first.event, created_type) or first.event.org_id != org_id:
        raise NotFound(f"{what} not found")
    return first.event


def entity_of(history: list[Recorded], created_type: type[E], org_id: uuid.UUID, what: str) -> Entity[E]:
    return Entity(created_of(history[0] if history else None, created_type, org_id, what), history[-1].version,
                  history)


def load(store: EventStore, stream_id: uuid.UUID | None, created_type: type[E], org_id: uuid.UUID,
         what: str) -> Entity[E]:
    return entity_of(store.load(stream_id) if stream_id else [], created_type, org_id, what)


async def load_created_async(store: EventStore, stream_id: uuid.UUID | None, created_type: type[E],
                             org_id: uuid.UUID, what: str) -> E:
    """What an entity was created as, for a decision that needs nothing it became later: one cached read."""
    return created_of(await store.first_async(stream_id) if stream_id else None, created_type, org_id, what)
