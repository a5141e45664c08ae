"""The event store: the `eventsourcing` library's PostgreSQL application recorder.

An event's notification id is its global position. Each entity is a stream (the recorder's
originator id); appending at a version that is already taken raises `StreamConflict`, which is how
commands get optimistic concurrency. The same transaction that appends also records the organization's
latest position, which reads use to see their own writes.
"""

from __future__ import annotations

import asyncio
import re
import threading
import typing
import uuid
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence
from urllib.parse import unquote, urlsplit

import msgspec
import psycopg
from psycopg import pq
from eventsourcing.persistence import IntegrityError as RecorderIntegrityError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg_pool import AsyncConnectionPool
from psycopg_pool.base import AttemptWithBackoff

from events import origin
from events.types import EVENT_TYPES, Event

EVENTS_TABLE = "parley_events"
NOTIFY_CHANNEL = EVENTS_TABLE  # the recorder NOTIFYs on a channel named after its table
# A counter the read model moves on in the transaction that revokes a credential (an API key, an
# operator token), so a process that keeps credentials it looked up can tell they may be stale.
CREDENTIAL_GENERATION = "parley_credential_generation"
CREDENTIALS_CHANGED = "PC001"  # SQLSTATE of parley_append refusing an append for that reason
# Whether the relay waits for appends' notices. Under load it reads at its own pace instead, and appends
# skip the notice: each one woke the relay's server process, once per append. The relay turns it on
# under a share lock of the events table, then reads the log once more (see `Relay`), so no append can
# commit unseen and unannounced.
RELAY_LISTENING = "parley_relay_listening"
# What the relay found different in an existing stream's configuration and kept (replicas, storage), one
# row per stream, so every API process's /readyz reports it, not only the relay's log.
STREAM_WARNINGS = "parley_stream_warnings"


class StreamConflict(Exception):
    """Another writer appended to the stream first."""


class CredentialsChanged(Exception):
    """A credential was revoked after the append's was checked, so the append was refused: check the
    credential again before writing."""


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
# U+0000 as JSON writes it. Finding these bytes is cheap, and most texts lack them; they may still be the
# text `\\u0000`, so ESCAPED_NUL tells: the escape whose backslash is not itself escaped.
JSON_NUL = rb"\u0000"
ESCAPED_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> Event:
    """PostgreSQL text cannot hold U+0000, so a read model could never store an event with one, and would
    stop at it for good. The API refuses it; an event recorded with one all the same (before that check,
    or by a path around it) is read with U+FFFD in its place."""
    global _decoder
    if _decoder is None:
        _decoder = msgspec.json.Decoder(typing.Union[EVENT_TYPES])  # type: ignore[valid-type]
    if JSON_NUL in data:
        data = ESCAPED_NUL.sub(rb"\1\\ufffd", data)
    return _decoder.decode(data)


# The append protocol of the `eventsourcing` application recorder, on its table, as one server-side
# function that the synchronous and the asynchronous appends both call (one round trip, one implicit
# transaction): the table lock makes insert order commit order, so a reader following positions never
# passes a gap that fills in later; the NOTIFY wakes the relay when it listens (see RELAY_LISTENING: read
# under the lock, so the relay's switch, made under a share lock, is seen); each organization's latest
# position commits with its events, for reads that wait to see their writes.
# The batch travels as one JSON document (`AppendBatch`): psycopg adapts a list parameter by inspecting
# its elements on every call, which cost more than the rest of the append's client side together.
# Its `generations` are the credential generations at which the appends' credentials were checked (see
# CREDENTIAL_GENERATION); a revocation since then refuses the whole append, before it writes anything.
APPEND_FUNCTION = f"""
DROP FUNCTION IF EXISTS parley_append(uuid[], bigint[], text[], bytea[], uuid[]);
DROP FUNCTION IF EXISTS parley_append(uuid[], bigint[], text[], bytea[], uuid[], bigint[]);
CREATE OR REPLACE FUNCTION parley_append(batch json) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    positions bigint[];
    generation bigint;
    listening boolean;
BEGIN
    LOCK TABLE {EVENTS_TABLE} IN EXCLUSIVE MODE;
    SELECT g.generation, l.listening INTO generation, listening FROM {CREDENTIAL_GENERATION} g, {RELAY_LISTENING} l;
    IF NOT (batch->'generations')::jsonb <@ jsonb_build_array(generation) THEN
        RAISE EXCEPTION 'a credential was revoked since it was checked' USING ERRCODE = '{CREDENTIALS_CHANGED}';
    END IF;
    IF listening THEN
        NOTIFY {NOTIFY_CHANNEL};
    END IF;
    WITH appended AS (
        SELECT * FROM json_to_recordset(batch->'events') AS e(stream uuid, version bigint, topic text, state text,
                                                              org uuid)),
    inserted AS (
        INSERT INTO {EVENTS_TABLE} (originator_id, originator_version, topic, state)
        SELECT stream, version, topic, decode(state, 'base64') FROM appended
        RETURNING notification_id, originator_id, originator_version),
    latest AS (
        INSERT INTO parley_org_positions (org_id, position)
        SELECT appended.org, max(inserted.notification_id)
        FROM inserted JOIN appended ON appended.stream = inserted.originator_id
                                   AND appended.version = inserted.originator_version
        GROUP BY appended.org
        ON CONFLICT (org_id) DO UPDATE SET position = GREATEST(parley_org_positions.position, EXCLUDED.position))
    SELECT array_agg(notification_id ORDER BY notification_id) INTO positions FROM inserted;
    RETURN positions;
END $$"""
APPEND = "SELECT parley_append(%s::json)"
SCHEMA_LOCK = 0x70617273  # serializes the store's DDL between processes starting together
SELECT_LOG = (f"SELECT notification_id, originator_id, state FROM {EVENTS_TABLE} WHERE notification_id > %s "
              "ORDER BY notification_id LIMIT %s")
# A stream version taken already: psycopg's error, or the library's translation of it on its connections.
VERSION_TAKEN = (psycopg.IntegrityError, RecorderIntegrityError)
SELECT_STREAM = (f"SELECT originator_version, state FROM {EVENTS_TABLE} WHERE originator_id = %s "
                 "ORDER BY originator_version")
SELECT_FIRST = SELECT_STREAM + " LIMIT 1"
# Streams whose first event a process keeps (a conversation's, for every message posted to it).
CACHED_FIRST_EVENTS = 20_000


@dataclass
class _Append:
    """One caller's append, waiting to be written with whatever else is queued (group commit)."""

    pending: Sequence[Pending]
    org_id: uuid.UUID
    credential_generation: int | None = None
    position: int = 0
    error: Exception | None = None
    done: bool = False


class AppendedEvent(msgspec.Struct):
    """One event of an append, as `parley_append` reads it (its JSON carries `state` in base64)."""

    stream: uuid.UUID
    version: int
    topic: str
    state: bytes
    org: uuid.UUID


class AppendBatch(msgspec.Struct):
    """The argument of `parley_append`: the batch's events, and the generations its credentials were
    checked at."""

    events: list[AppendedEvent]
    generations: list[int]


def _argument(batch: list[_Append]) -> bytes:
    """The batch as the one parameter `parley_append` takes, as JSON text."""
    events = [AppendedEvent(p.stream_id, p.version, type(p.event).__name__, encode_event(p.event), request.org_id)
              for request in batch for p in request.pending]
    generations = sorted({r.credential_generation for r in batch if r.credential_generation is not None})
    return _encoder.encode(AppendBatch(events, generations))


def _settle(batch: list[_Append], positions: list[int]) -> None:
    """Gives each request the position of its last event."""
    offset = 0
    for request in batch:
        offset += len(request.pending)
        request.position = positions[offset - 1]


def _failed(batch: list[_Append], exc: Exception) -> bool:
    """Hands a failed write's error to its callers; True when the batch is to be written again one
    append at a time instead (a stream version taken, or a credential revoked, in a batch of several:
    the others still go in)."""
    changed = isinstance(exc, psycopg.Error) and exc.sqlstate == CREDENTIALS_CHANGED
    if (changed or isinstance(exc, VERSION_TAKEN)) and len(batch) > 1:
        return True
    for request in batch:
        request.error = (StreamConflict(str(exc)) if isinstance(exc, VERSION_TAKEN)
                         else CredentialsChanged(str(exc)) if changed else exc)
    return False


class Appender:
    """A connection that runs `parley_append` through libpq (`psycopg.pq`) directly: the append is one
    prepared statement whose answer is one array, and psycopg's cursor, adaptation and waiting around it
    cost about 60 of the append's 170 µs of client-side CPU, on the API's busiest path."""

    STATEMENT = b"parley_append_batch"

    def __init__(self, conn: psycopg.AsyncConnection):
        self.conn = conn

    @classmethod
    async def connect(cls, database_url: str, timeout: int = 5) -> "Appender":
        appender = cls(await psycopg.AsyncConnection.connect(database_url, autocommit=True, connect_timeout=timeout))
        query = APPEND.replace("%s", "$1").encode()
        try:
            appender._check(await appender._exchange(lambda pgconn: pgconn.send_prepare(cls.STATEMENT, query)),
                            pq.ExecStatus.COMMAND_OK)
        except BaseException:
            await appender.conn.close()  # refused or cut off: the writer opens another on its next batch
            raise
        return appender

    async def append(self, argument: bytes) -> list[int]:
        """The positions of the batch's events; the server's error as psycopg raises it."""
        results = await self._exchange(lambda pgconn: pgconn.send_query_prepared(self.STATEMENT, [argument]))
        self._check(results, pq.ExecStatus.TUPLES_OK)
        text = results[0].get_value(0, 0)  # a bigint[] as PostgreSQL writes it: {1,2,3}
        return [int(position) for position in text[1:-1].split(b",")]

    async def _exchange(self, send: Callable[[pq.abc.PGconn], None]) -> list[pq.abc.PGresult]:
        """Sends one command and returns its results, waiting on the event loop for the socket. Cut off
        midway (a lost connection, a cancelled task), it closes the connection: answers still due on it
        would be taken for the next command's."""
        pgconn, loop = self.conn.pgconn, asyncio.get_running_loop()
        try:
            send(pgconn)
            while pgconn.flush():
                await self._ready(loop.add_writer, loop.remove_writer)
            results = []
            while True:
                pgconn.consume_input()
                while not pgconn.is_busy():
                    if (result := pgconn.get_result()) is None:
                        return results
                    results.append(result)
                await self._ready(loop.add_reader, loop.remove_reader)
        except BaseException:
            pgconn.finish()
            raise

    async def _ready(self, watch: Callable[..., None], unwatch: Callable[[int], object]) -> None:
        ready = asyncio.get_running_loop().create_future()
        socket = self.conn.pgconn.socket
        watch(socket, ready.set_result, None)
        try:
            await ready
        finally:
            unwatch(socket)

    def _check(self, results: list[pq.abc.PGresult], expected: pq.ExecStatus) -> None:
        for result in results:
            if result.status != expected:
                raise psycopg.errors.error_from_result(result, encoding=self.conn.info.encoding)


# libpq's connect_timeout counts whole seconds and treats anything below 2 as 2.
def connect_timeout(wait_seconds: float) -> int:
    return max(2, round(wait_seconds))


class _CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's reconnection backoff doubles without bound (1, 2, 4 … s), so after an outage of some
    seconds the pool's next attempt could come half a minute after the server is back, every request
    answering 503 meanwhile. Capped, the service is back within seconds of the database."""

    MAX_DELAY = 2.0

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, self.MAX_DELAY)


class RecoveringPool(AsyncConnectionPool):
    """An autocommit pool whose checkout waits at most `wait_seconds` (the caller answers 503 then) and
    which reconnects promptly once PostgreSQL is back."""

    def __init__(self, database_url: str, min_size: int, max_size: int, wait_seconds: float):
        super().__init__(database_url, min_size=min_size, max_size=max_size, timeout=wait_seconds, open=False,
                         kwargs={"autocommit": True, "connect_timeout": connect_timeout(wait_seconds)})

    async def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        await super()._add_connection(attempt or _CappedBackoff(timeout=self.reconnect_timeout), growing)


def datastore_for(database_url: str, pool_size: int, wait_seconds: float = 5.0) -> PostgresDatastore:
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
        connect_timeout=wait_seconds,  # the library's name for how long a checkout waits for a connection
    )


class EventStore:
    """Appends and loads streams; reads the log in order. Synchronous for commands that run on a worker
    thread, asynchronous (`*_async`, after `open_async` in the running loop) for those on the event loop.
    `wait_seconds` bounds how long any of them waits for a connection while PostgreSQL is unreachable:
    then they raise (psycopg's OperationalError, or the library's) instead of hanging."""

    def __init__(self, database_url: str, *, pool_size: int = 8, wait_seconds: float = 5.0):
        self.database_url = database_url
        self.wait_seconds = wait_seconds
        self._lock = threading.Condition()
        self._queue: list[_Append] = []
        self._writing = False
        self.datastore = datastore_for(database_url, pool_size, wait_seconds)
        self.recorder = PostgresApplicationRecorder(self.datastore, events_table_name=EVENTS_TABLE)
        self.recorder.create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))  # processes start together
            curs.execute(
                "CREATE TABLE IF NOT EXISTS parley_org_positions (org_id uuid PRIMARY KEY, position bigint NOT NULL)"
            )
            curs.execute(f"CREATE TABLE IF NOT EXISTS {CREDENTIAL_GENERATION} (generation bigint NOT NULL)")
            curs.execute(f"INSERT INTO {CREDENTIAL_GENERATION} SELECT 0 WHERE NOT EXISTS "
                         f"(SELECT FROM {CREDENTIAL_GENERATION})")
            curs.execute(f"CREATE TABLE IF NOT EXISTS {RELAY_LISTENING} (listening boolean NOT NULL)")
            curs.execute(f"INSERT INTO {RELAY_LISTENING} SELECT true WHERE NOT EXISTS "
                         f"(SELECT FROM {RELAY_LISTENING})")
            curs.execute(f"CREATE TABLE IF NOT EXISTS {STREAM_WARNINGS} (stream text PRIMARY KEY, "
                         "warnings text[] NOT NULL)")
            curs.execute(APPEND_FUNCTION)
        self._pool: AsyncConnectionPool | None = None
        self._appender: Appender | None = None
        self._async_queue: list[tuple[_Append, asyncio.Future]] = []
        self._async_writer: asyncio.Task | None = None
        self._first_events: dict[uuid.UUID, Recorded] = {}

    @staticmethod
    def _request(pending: Sequence[Pending], credential_generation: int | None = None) -> _Append:
        org_ids = {p.event.org_id for p in pending}
        assert len(org_ids) == 1, "one append belongs to one organization"
        if origin.current() is not None:
            pending = [p._replace(event=event) for p, event in zip(pending, origin.stamped([p.event for p in pending]))]
        return _Append(pending, org_ids.pop(), credential_generation)

    # --- synchronous

    def append(self, *pending: Pending) -> int:
        """Appends atomically and returns the position of the last event.

        The table lock that keeps positions in commit order serializes writers, so concurrent appends
        are committed together (group commit): whoever finds no write in progress writes every queued
        append in one transaction while the others wait for their result."""
        request = self._request(pending)
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
        try:
            with self.datastore.get_connection() as conn:
                row = conn.execute(APPEND, (_argument(batch).decode(),), prepare=True).fetchone()
                _settle(batch, row["parley_append"])
        except Exception as exc:  # noqa: BLE001 - handed to the waiting callers
            if _failed(batch, exc):
                for request in batch:
                    self._write([request])
        for request in batch:
            request.done = True

    def load(self, stream_id: uuid.UUID) -> list[Recorded]:
        with self.datastore.get_connection() as conn:
            rows = conn.execute(SELECT_STREAM, (stream_id,), prepare=True).fetchall()
        return [Recorded(0, stream_id, row["originator_version"], decode_event(row["state"])) for row in rows]

    # --- asynchronous

    async def open_async(self, pool_size: int = 4) -> None:
        self._pool = RecoveringPool(self.database_url, 1, pool_size, self.wait_seconds)
        await self._pool.open(wait=True)

    async def close_async(self) -> None:
        if self._async_writer is not None:
            await asyncio.gather(self._async_writer, return_exceptions=True)
        if self._appender is not None:
            await self._appender.conn.close()
        if self._pool is not None:
            await self._pool.close()

    async def append_async(self, *pending: Pending, credential_generation: int | None = None) -> int:
        """`append` on the event loop: the same transaction, the same group commit, one writer task.
        With `credential_generation`, the generation the acting credential was checked at, it raises
        `CredentialsChanged` and writes nothing if a credential was revoked since."""
        request = self._request(pending, credential_generation)
        result = asyncio.get_running_loop().create_future()
        self._async_queue.append((request, result))
        if self._async_writer is None or self._async_writer.done():
            self._async_writer = asyncio.create_task(self._write_queued())
        return await result

    async def _write_queued(self) -> None:
        """Writes queued appends batch by batch; runs as its own task, so a caller that goes away (a
        client disconnecting) cannot cut a batch that others wait on."""
        while self._async_queue:
            queued, self._async_queue = self._async_queue, []
            batch = [request for request, _ in queued]
            await self._write_async(batch)
            for request, result in queued:
                if result.done():
                    continue
                if request.error:
                    result.set_exception(request.error)
                else:
                    result.set_result(request.position)

    async def _appending_connection(self) -> Appender:
        """The writer task's own connection, opened again once lost: one task writes, one batch at a
        time, so a pool's checkout and return around every batch bought nothing."""
        if self._appender is None or self._appender.conn.closed:
            self._appender = await Appender.connect(self.database_url, connect_timeout(self.wait_seconds))
        return self._appender

    async def _write_async(self, batch: list[_Append]) -> None:
        assert self._pool is not None, "open_async() first"
        try:
            appender = await self._appending_connection()
            _settle(batch, await appender.append(_argument(batch)))
        except Exception as exc:  # noqa: BLE001 - handed to the waiting callers
            if _failed(batch, exc):
                for request in batch:
                    await self._write_async([request])

    async def first_async(self, stream_id: uuid.UUID) -> Recorded | None:
        """A stream's first event, or None for a stream with none yet. Events never change and versions
        are never reused, so once read it is kept (the oldest kept is forgotten first)."""
        first = self._first_events.get(stream_id)
        if first is None:
            assert self._pool is not None, "open_async() first"
            async with self._pool.connection() as conn:
                row = await (await conn.execute(SELECT_FIRST, (stream_id,), prepare=True)).fetchone()
            if row is None:
                return None
            if len(self._first_events) >= CACHED_FIRST_EVENTS:
                del self._first_events[next(iter(self._first_events))]
            first = self._first_events[stream_id] = Recorded(0, stream_id, row[0], decode_event(row[1]))
        return first

    # --- the log

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
