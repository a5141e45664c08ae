"""The event store: the `eventsourcing` library's PostgreSQL application recorder.

An event's notification id is its global position. Each entity is a stream (the recorder's
originator id); appending at a version that is already taken raises `StreamConflict`, which is how
commands get optimistic concurrency. The same transaction that appends also records the organization's
latest position, which reads use to see their own writes.
"""

from __future__ import annotations

import typing
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence
from urllib.parse import unquote, urlsplit

import msgspec
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

from events.types import EVENT_TYPES, Event

EVENTS_TABLE = "parley_events"
NOTIFY_CHANNEL = EVENTS_TABLE  # the recorder NOTIFYs on a channel named after its table


class StreamConflict(Exception):
    """Another writer appended to the stream first."""


@dataclass(frozen=True, slots=True)
class Recorded:
    position: int
    stream_id: uuid.UUID
    version: int
    event: Event


class Pending(NamedTuple):
    stream_id: uuid.UUID
    version: int
    event: Event


_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder | None = None


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> Event:
    global _decoder
    if _decoder is None:
        _decoder = msgspec.json.Decoder(typing.Union[EVENT_TYPES])  # type: ignore[valid-type]
    return _decoder.decode(data)


class _Recorder(PostgresApplicationRecorder):
    """Adds the organization's write position to the append transaction."""

    def _fetch_ids_after_insert_events(self, curs, stored_events, **kwargs: Any):
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        org_id = kwargs.get("org_id")
        if ids and org_id is not None:
            curs.execute(
                "INSERT INTO parley_org_positions (org_id, position) VALUES (%s, %s) "
                "ON CONFLICT (org_id) DO UPDATE SET position = GREATEST(parley_org_positions.position, EXCLUDED.position)",
                (org_id, max(ids)),
            )
        return ids


def datastore_for(database_url: str, pool_size: int) -> PostgresDatastore:
    parts = urlsplit(database_url)
    return PostgresDatastore(
        dbname=parts.path.lstrip("/") or "postgres",
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password or ""),
        pool_size=pool_size,
        max_overflow=pool_size,
        max_waiting=0,
    )


class EventStore:
    def __init__(self, database_url: str, *, pool_size: int = 8):
        self.datastore = datastore_for(database_url, pool_size)
        self.recorder = _Recorder(self.datastore, events_table_name=EVENTS_TABLE)
        self.recorder.create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                "CREATE TABLE IF NOT EXISTS parley_org_positions (org_id uuid PRIMARY KEY, position bigint NOT NULL)"
            )

    def append(self, *pending: Pending) -> int:
        """Appends atomically and returns the position of the last event."""
        org_ids = {p.event.org_id for p in pending}
        assert len(org_ids) == 1, "one append belongs to one organization"
        stored = [
            StoredEvent(
                originator_id=p.stream_id,
                originator_version=p.version,
                topic=type(p.event).__name__,
                state=encode_event(p.event),
            )
            for p in pending
        ]
        try:
            ids = self.recorder.insert_events(stored, org_id=org_ids.pop())
        except IntegrityError as exc:
            raise StreamConflict(str(exc)) from exc
        assert ids
        return max(ids)

    def load(self, stream_id: uuid.UUID) -> list[Recorded]:
        return [
            Recorded(0, s.originator_id, s.originator_version, decode_event(s.state))
            for s in self.recorder.select_events(stream_id)
        ]

    def read(self, after: int, limit: int, until: int | None = None) -> Sequence[Recorded]:
        return [
            Recorded(n.id, n.originator_id, n.originator_version, decode_event(n.state))
            for n in self.recorder.select_notifications(
                after, limit, stop=until, inclusive_of_start=False
            )
        ]

    def head(self) -> int:
        return self.recorder.max_notification_id() or 0

    def org_position(self, org_id: uuid.UUID) -> int:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute("SELECT position FROM parley_org_positions WHERE org_id = %s", (org_id,))
            row = curs.fetchone()
        return row["position"] if row else 0

    def close(self) -> None:
        self.datastore.close()
