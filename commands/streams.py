"""Loading an entity's stream for a decision, and running a decision: load, fold, decide, append, and
again from a fresh load when another write took the stream's next version first."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Awaitable, Callable, Generic, Sequence, TypeVar

from commands.errors import NotFound
from events.store import EventStore, Pending, Recorded, StreamConflict
from events.types import Event

E = TypeVar("E", bound=Event)
S = TypeVar("S")


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


@dataclass
class Folded:
    """What a fold leaves of a stream: a decision's events follow its last version."""

    stream_id: uuid.UUID
    version: int

    def follow(self, *events: Event) -> list[Pending]:
        return [Pending(self.stream_id, self.version + i, event) for i, event in enumerate(events, start=1)]


@dataclass(frozen=True)
class Appended(Generic[S]):
    """A decision's outcome: the state it was taken on, what it appended (nothing: no change) and the
    position that holds it (the organization's current one when nothing changed, for read-your-writes)."""

    state: S
    pending: Sequence[Pending]
    position: int


def execute(store: EventStore, org_id: uuid.UUID, load: Callable[[], S],
            decide: Callable[[S], Sequence[Pending]], *, retry: bool = True) -> Appended[S]:
    """Loads the state, decides and appends; when another write wins a version meanwhile
    (`StreamConflict`), decides again from a fresh load, which is safe since a decision reads nothing
    but its state. A refusal (`CommandError`) from `load` or `decide` ends it. Without `retry` the
    conflict is the answer (409: the API's writes whose loser is told rather than re-decided)."""
    while True:
        state = load()
        pending = decide(state)
        if not pending:
            return Appended(state, pending, store.org_position(org_id))
        try:
            return Appended(state, pending, store.append(*pending))
        except StreamConflict:
            if not retry:
                raise


async def execute_async(store: EventStore, load: Callable[[], Awaitable[S]],
                        decide: Callable[[S], Sequence[Pending]], *,
                        credential_generation: int | None = None) -> Appended[S]:
    """`execute` on the event loop, for a decision that always appends (the hot path has no round trip
    to spare for an organization's position): one append, refused with `CredentialsChanged` if the
    credential checked at `credential_generation` was revoked since."""
    while True:
        state = await load()
        pending = decide(state)
        try:
            return Appended(state, pending, await store.append_async(*pending,
                                                                     credential_generation=credential_generation))
        except StreamConflict:
            continue
