"""The event store: the `eventsourcing` library's PostgreSQL application recorder.

An event's notification id is its global position. Each entity is a stream (the recorder's
originator id); appending at a version that is already taken raises `StreamConflict`, which is how
commands get optimistic concurrency. The same transaction that appends also records the organization's
latest position, which reads use to see their own writes.
"""

from __future__ import annotations

import threading
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
    """Adds each organization's latest write position to the append transaction."""

    def _fetch_ids_after_insert_events(self, curs, stored_events, **kwargs: Any):
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        latest: dict[uuid.UUID, int] = {}
        for org_id, position in zip(kwargs["org_ids"], ids or ()):
            latest[org_id] = max(position, latest.get(org_id, 0))
        for org_id, position in sorted(latest.items()):
            curs.execute(
                "INSERT INTO parley_org_positions (org_id, position) VALUES (%s, %s) "
                "ON CONFLICT (org_id) DO UPDATE SET position = GREATEST(parley_org_positions.position, EXCLUDED.position)",
                (org_id, position),
            )
        return ids


@dataclass
class _Append:
    stored: list[StoredEvent]
    org_id: uuid.UUID
    position: int = 0
    error: Exception | None = None
    done: bool = False


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
        self._lock = threading.Condition()
        self._queue: list[_Append] = []
        self._writing = False
        self.datastore = datastore_for(database_url, pool_size)
        self.recorder = _Recorder(self.datastore, events_table_name=EVENTS_TABLE)
        self.recorder.create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                "CREATE TABLE IF NOT EXISTS parley_org_positions (org_id uuid PRIMARY KEY, position bigint NOT NULL)"
            )

    def append(self, *pending: Pending) -> int:
        """Appends atomically and returns the position of the last event.

        The table lock that keeps positions in commit order serializes writers, so concurrent appends
        are committed together (group commit): whoever finds no write in progress writes every queued
        append in one transaction while the others wait for their result."""
        org_ids = {p.event.org_id for p in pending}
        assert len(org_ids) == 1, "one append belongs to one organization"
        request = _Append([
            StoredEvent(originator_id=p.stream_id, originator_version=p.version, topic=type(p.event).__name__,
                        state=encode_event(p.event))
            for p in pending
        ], org_ids.pop())
        with self._lock:
            self._queue.append(request)
            while self._writing and not request.done:
                self._lock.wait()
            if not request.done:
                self._writing = True
                batch, self._queue = self._queue, []
        if not request.done:
            try:
                self._write(batch)
            finally:
                with self._lock:
                    self._writing = False
                    self._lock.notify_all()
        if request.error:
            raise request.error
        return request.position

    def _write(self, batch: list[_Append]) -> None:
        stored = [event for request in batch for event in request.stored]
        org_ids = [request.org_id for request in batch for _ in request.stored]
        try:
            ids = self.recorder.insert_events(stored, org_ids=org_ids)
        except IntegrityError as exc:
            if len(batch) > 1:  # find the conflicting append: the others still go in
                for request in batch:
                    self._write([request])
                return
            batch[0].error = StreamConflict(str(exc))
        except Exception as exc:  # noqa: BLE001 - handed to every waiting caller
            for request in batch:
                request.error, request.done = exc, True
            return
        else:
            assert ids is not None
            offset = 0
            for request in batch:
                offset += len(request.stored)
                request.position = ids[offset - 1]
        for request in batch:
            request.done = True

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
