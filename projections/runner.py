"""Runs projections: applies every event exactly once, in order, recording the position with the writes.

Start-up catches up from the event store (the source of truth), then follows the log with a
`stream.Tail` from just after the recorded position: the JetStream stream while it works, the store
while NATS is down. Events arrive strictly in order and one batch is applied per transaction, so a
position check is enough to drop the re-published duplicates of a relay restart; the tail fills from
the store what the stream lost (wiped, trimmed). A batch moves the positions only from
where it found them, so a concurrent rebuild is never applied on top of twice. Projections run in
groups that share the consumer and the transaction; each member still keeps its own position.
One process at a time runs a group: it holds the group's lease (`events.leadership`), and every batch it
commits names the lease's generation, so a leader that was replaced (frozen, cut off) writes nothing more.
"""

from __future__ import annotations

import asyncio
import logging
import re
import zlib
from contextlib import aclosing
from typing import Awaitable, Callable, Protocol, Sequence

import msgspec
import psycopg

from events import stream
from events.leadership import (DEFAULT_LEASE_SECONDS, LEASES, Fence, Lease, LeadershipLost, held_by_another,
                               ensure_table as ensure_leases)
from events.store import CREDENTIAL_GENERATION, EventStore, Recorded
from events.supervision import keep_running

log = logging.getLogger("parley.projections")

POSITIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS parley_projection_positions (name text PRIMARY KEY, position bigint NOT NULL)"
)
NOTIFY_CHANNEL = "parley_projection"
POSITIONS_MOVED = "PP001"  # SQLSTATE of parley_advance_projections when a position is not where expected
FENCED = "PP002"  # ... when the lease named is held by a later generation: the writer no longer leads
# Moves a group's positions by compare-and-set and sends one notice for them all on `channel`,
# "name:position,name:position", so a listener wakes once a batch. `moves` is a JSON object,
# {name: [expected, reached]}: psycopg adapts list parameters by inspecting them on every call.
# A leader names its lease and generation (the fence); a rebuild, which leads nothing, names none. The
# check takes no lock: a takeover between it and the commit is caught by the compare-and-set, since the
# new leader moves the positions from where it read them.
ADVANCE_FUNCTION = f"""
DROP FUNCTION IF EXISTS parley_advance_projections(text[], bigint[], bigint[], text);
DROP FUNCTION IF EXISTS parley_advance_projections(json, text);
CREATE OR REPLACE FUNCTION parley_advance_projections(moves json, channel text, lease text, generation bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    IF lease IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM {LEASES} AS l WHERE l.name = lease AND l.generation = parley_advance_projections.generation) THEN
        RAISE EXCEPTION 'the lease % is no longer held at generation %', lease, generation USING ERRCODE = '{FENCED}';
    END IF;
    UPDATE parley_projection_positions AS p SET position = (m.value->>1)::bigint
    FROM json_each(moves) AS m
    WHERE p.name = m.key AND p.position = (m.value->>0)::bigint;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved <> (SELECT count(*) FROM json_object_keys(moves)) THEN
        RAISE EXCEPTION 'projection positions moved under this batch' USING ERRCODE = '{POSITIONS_MOVED}';
    END IF;
    PERFORM pg_notify(channel, (SELECT string_agg(m.key || ':' || (m.value->>1), ',') FROM json_each(moves) AS m));
END $$"""
CATCH_UP_BATCH = 1000
LIVE_BATCH = 500
SKIPPED_STORE_SECONDS = 0.25  # how long a runner with `on_reached` keeps skipped positions in memory
# How often an idle runner checks its connection. Its commits do not wait for the disk, so a PostgreSQL
# crash can rewind the stored positions behind the ones it keeps in memory; without a check, a quiet
# runner would not notice (and catch up again) until the next event, and reads would wait on it meanwhile.
IDLE_CHECK_SECONDS = 2.0


class Projection(Protocol):
    name: str

    async def create(self, conn: psycopg.AsyncConnection) -> None: ...

    async def drop(self, conn: psycopg.AsyncConnection) -> None: ...

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None: ...


def lock_key(name: str) -> int:
    return zlib.crc32(f"parley-projection:{name}".encode())


async def connect(database_url: str) -> psycopg.AsyncConnection:
    """A projection connection. Its commits need not wait for the disk: the read model is rebuilt from
    the store, and the position commits atomically with the rows, so a crash only rewinds both together."""
    conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    await conn.execute("SET synchronous_commit = off")
    return conn


async def ensure_tables(conn: psycopg.AsyncConnection, *projections: Projection) -> None:
    """Creates the read models' tables and the positions they share, in one transaction; serialized,
    since concurrent CREATE IF NOT EXISTS can collide."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ddl"),))
        await conn.execute(POSITIONS_DDL)
        await ensure_leases(conn)  # the function below checks leases
        await conn.execute(ADVANCE_FUNCTION)
        for projection in projections:
            await projection.create(conn)
        await conn.execute(
            "INSERT INTO parley_projection_positions (name, position) SELECT unnest(%s::text[]), 0 "
            "ON CONFLICT DO NOTHING", ([projection.name for projection in projections],))


def plan_batch(projections: Sequence[Projection], batch: Sequence[Recorded],
               positions: dict[str, int]) -> tuple[dict[str, int], dict[str, list[Recorded]]]:
    """Where each member will stand after the batch, and the events past its position it must apply."""
    reached = dict(positions)
    handled: dict[str, list[Recorded]] = {}
    kinds = {type(recorded.event) for recorded in batch}  # asked once a kind, not once an event
    for projection in projections:
        fresh = [recorded for recorded in batch if recorded.position > positions[projection.name]]
        if fresh:
            reached[projection.name] = fresh[-1].position
        wanted = {kind for kind in kinds if handles_kind(projection, kind)}
        handled[projection.name] = [recorded for recorded in fresh if type(recorded.event) in wanted]
    return reached, handled


async def apply_batch(conn: psycopg.AsyncConnection, projections: Sequence[Projection], batch: Sequence[Recorded],
                      positions: dict[str, int], stored: dict[str, int] | None = None,
                      fence: Fence | None = None) -> dict[str, int]:
    """Applies to each projection the events past its position, all in one transaction, and returns the
    new positions by name.

    `stored` is where the positions table has the members (by default `positions`; a runner that keeps
    skipped batches in memory is ahead of it). The transaction moves them only if they still stand
    there, so a rebuild that ran meanwhile (it resets and replays a member in a transaction of its own)
    makes this batch roll back and start again from what the rebuild left. With `fence`, the batch commits
    only while that generation holds the lease: otherwise LeadershipLost."""
    reached, handled = plan_batch(projections, batch, positions)
    return await apply_plan(conn, projections, batch, reached, handled, stored or positions, fence)


async def apply_plan(conn: psycopg.AsyncConnection, projections: Sequence[Projection], batch: Sequence[Recorded],
                     reached: dict[str, int], handled: dict[str, list[Recorded]],
                     stored: dict[str, int], fence: Fence | None = None) -> dict[str, int]:
    """`apply_batch` for a batch already planned. A handler's writes go out in pipeline mode, without
    waiting for each answer, in the pipeline's implicit transaction (no BEGIN and COMMIT to send): the
    group's writes and positions commit together at its closing Sync. A batch none of the group handles
    only moves the positions, in one statement."""
    assert conn.autocommit, "the pipeline's implicit transaction needs an autocommit connection"
    names = [projection.name for projection in projections]
    try:
        if not any(handled.values()):
            await advance(conn, names, stored, reached, fence)
            return reached
        async with conn.pipeline():
            try:
                for projection in projections:
                    await apply_events(conn, projection, handled[projection.name])
                await advance(conn, names, stored, reached, fence)
            except BaseException as exc:
                if getattr(exc, "sqlstate", None) is None:
                    # The server has not aborted the transaction, and the Sync would commit a part of the
                    # batch: closing the connection first rolls it back (the runner reconnects).
                    await conn.close()
                raise
    except psycopg.Error as exc:
        if exc.sqlstate == FENCED:  # raised at the pipeline's Sync rather than by `advance` itself
            raise fenced(fence) from None
        if exc.sqlstate != POSITIONS_MOVED:
            raise
        log.info("a rebuild moved %s under a batch; applying it again", "+".join(names))
        return await apply_batch(conn, projections, batch, await current_positions(conn, names), fence=fence)
    return reached


async def advance(conn: psycopg.AsyncConnection, names: list[str], expected: dict[str, int],
                  reached: dict[str, int], fence: Fence | None = None) -> None:
    """Moves the positions from `expected` to `reached` and tells readers, or raises POSITIONS_MOVED, or
    LeadershipLost when `fence` names a generation that no longer holds its lease."""
    moves = {name: (expected[name], reached[name]) for name in names}
    try:
        await conn.execute("SELECT parley_advance_projections(%s::json, %s, %s, %s)",
                           (msgspec.json.encode(moves).decode(), NOTIFY_CHANNEL,
                            fence and fence.name, fence and fence.generation))
    except psycopg.Error as exc:
        if exc.sqlstate == FENCED:
            raise fenced(fence) from None
        raise


def fenced(fence: Fence) -> LeadershipLost:
    return LeadershipLost(f"{fence.name} generation {fence.generation} is stale: its batch was refused")


def handled_kinds(projections: Sequence[Projection]) -> frozenset[str] | None:
    """The names of the kinds of event a group changes on (subclasses included), or None when a member
    changes on every event."""
    kinds: set[str] = set()
    for projection in projections:
        listed = getattr(projection, "handles", None)
        if listed is None:
            return None
        pending = list(listed)
        while pending:
            kind = pending.pop()
            kinds.add(kind.__name__)
            pending += kind.__subclasses__()
    return frozenset(kinds)


def handles(projection: Projection, recorded: Recorded) -> bool:
    """Whether the event can change the read model. A projection that changes on a few kinds of event
    only lists them in `handles` (subclasses included); without it, every event counts."""
    return handles_kind(projection, type(recorded.event))


def handles_kind(projection: Projection, kind: type) -> bool:
    listed = getattr(projection, "handles", None)
    return listed is None or issubclass(kind, tuple(listed))


async def apply_events(conn: psycopg.AsyncConnection, projection: Projection, events: Sequence[Recorded]) -> None:
    """A projection that gains from batching (the search index embeds many passages at once) defines
    `apply_all` and takes the batch whole."""
    if not events:
        return
    apply_all = getattr(projection, "apply_all", None)
    if apply_all is not None:
        await apply_all(conn, events)
        return
    for recorded in events:
        await projection.apply(conn, recorded)


async def catch_up(conn: psycopg.AsyncConnection, projections: Sequence[Projection], store: EventStore,
                   positions: dict[str, int], fence: Fence | None = None) -> dict[str, int]:
    """Reads the store from the group's lowest position (members may differ, say after a rebuild of one)."""
    while True:
        batch = await asyncio.to_thread(store.read, min(positions.values()), CATCH_UP_BATCH)
        if not batch:
            return positions
        positions = await apply_batch(conn, projections, batch, positions, fence=fence)


async def current_positions(conn: psycopg.AsyncConnection, names: Sequence[str]) -> dict[str, int]:
    stored = dict(await (await conn.execute(
        "SELECT name, position FROM parley_projection_positions WHERE name = ANY(%s)", (list(names),))).fetchall())
    return {name: stored.get(name, 0) for name in names}


async def current_position(conn: psycopg.AsyncConnection, name: str) -> int:
    return (await current_positions(conn, [name]))[name]


async def rebuild(database_url: str, projection: Projection, store: EventStore) -> int:
    """Drops the read model and replays the whole store into it, in one transaction."""
    async with await connect(database_url) as conn:
        async with conn.transaction():
            await projection.drop(conn)
            await ensure_tables(conn, projection)
            await conn.execute("UPDATE parley_projection_positions SET position = 0 WHERE name = %s", (projection.name,))
            position = 0
            while batch := await asyncio.to_thread(store.read, position, CATCH_UP_BATCH):
                await apply_events(conn, projection, batch)
                position = batch[-1].position
            await advance(conn, [projection.name], {projection.name: 0}, {projection.name: position})
        return position


SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Marks a schema `rebuild_as_of` made, which it may replace; it refuses any other schema that exists.
REBUILT_MARK = "parley: a read model rebuilt as of a past position"


class SchemaRefused(ValueError):
    """The schema named for a rebuild as of a position is not one it may write."""


async def rebuild_as_of(database_url: str, projection: Projection, store: EventStore, until: int, schema: str) -> int:
    """Replays the store up to position `until` into `schema`, a schema of its own for an analyst's
    questions, and returns the last position applied. The live read model, its position and the readers
    waiting on it are untouched: the tables, the position (stored without the notice live readers follow)
    and the credential counter the core model moves all resolve in `schema` first; functions such as
    unaccent still resolve in public. The schema is created, or replaced when an earlier rebuild made it."""
    if not SCHEMA_NAME.match(schema) or schema == "public" or schema.startswith("pg_"):
        raise SchemaRefused(f"{schema!r} is not a schema a rebuild may write: use lower-case letters, digits and _")
    async with await connect(database_url) as conn:
        async with conn.transaction():
            found = await (await conn.execute("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace "
                                              "WHERE nspname = %s", (schema,))).fetchone()
            if found is not None and found[0] != REBUILT_MARK:
                raise SchemaRefused(f"schema {schema!r} exists and was not made by a rebuild: it is left alone")
            if found is not None:
                await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
            await conn.execute(f'CREATE SCHEMA "{schema}"')
            await conn.execute(f"COMMENT ON SCHEMA \"{schema}\" IS '{REBUILT_MARK}'")
            await conn.execute(f'SET LOCAL search_path TO "{schema}", public')
            await conn.execute(f"CREATE TABLE {CREDENTIAL_GENERATION} AS SELECT 0::bigint AS generation")
            await ensure_tables(conn, projection)
            position = 0
            while batch := await asyncio.to_thread(store.read, position, CATCH_UP_BATCH, until):
                await apply_events(conn, projection, batch)
                position = batch[-1].position
            await conn.execute("UPDATE parley_projection_positions SET position = %s WHERE name = %s",
                               (position, projection.name))
        return position


async def catch_up_if_idle(database_url: str, projection: Projection, store: EventStore) -> bool:
    """Brings the projection up to date here, unless a running worker leads it (then returns False)."""
    async with await connect(database_url) as conn:
        await ensure_tables(conn, projection)
        if await held_by_another(conn, projection.name):
            return False
        await catch_up(conn, [projection], store, await current_positions(conn, [projection.name]))
        return True


class ProjectionRunner:
    """Runs a group of projections on one connection, one stream consumer and one transaction per batch:
    the per-event cost of a consumer and a commit is paid once for the group, not once per read model.

    With `on_reached`, a reader in this process is told the group's positions after every batch, and a
    batch none of the group handles is not stored at once: its positions wait in memory (at most
    SKIPPED_STORE_SECONDS) for the next applied batch or a quiet moment. The search index, which
    handles a few kinds of event, would otherwise spend a statement and a commit on every chat message."""

    def __init__(self, projections: Sequence[Projection], store: EventStore, database_url: str, nats_url: str,
                 stream_name: str = stream.DEFAULT_STREAM,
                 on_reached: Callable[[dict[str, int]], Awaitable[None]] | None = None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.projections = list(projections)
        self.names = [projection.name for projection in self.projections]
        self.name = "+".join(self.names)
        self.store = store
        self.database_url = database_url
        self.nats_url = nats_url
        self.stream = stream_name
        self.on_reached = on_reached
        self.positions: dict[str, int] = {}  # where the group has read to
        self.stored: dict[str, int] = {}  # where the positions table has it
        self._store_by: float | None = None  # when positions kept in memory must be stored
        self.tail: stream.Tail | None = None  # how the log reaches the group (the stream, or the store)
        # One lease for the whole group, so two processes never split a group between them.
        self.lease = Lease(database_url, f"projections:{self.name}", lease_seconds)
        self.fence: Fence | None = None

    @property
    def standby(self) -> bool:
        """Another process leads the group: this one waits to take over."""
        return self.lease.standby

    async def run(self) -> None:
        await keep_running(f"projections {self.name}", self._run_once, log)

    async def _run_once(self) -> None:
        await self.lease.lead(self._lead)

    async def _lead(self, fence: Fence) -> None:
        self.fence = fence
        async with await connect(self.database_url) as conn:
            await ensure_tables(conn, *self.projections)
            self._store_by = None
            self.positions = self.stored = await catch_up(
                conn, self.projections, self.store, await current_positions(conn, self.names), fence)
            await self._follow(conn)

    async def _follow(self, conn: psycopg.AsyncConnection) -> None:
        """Applies the log as the tail brings it: from the stream, or from the store while NATS is down."""
        self.tail = stream.Tail(self.store, self.nats_url, self.stream, batch=LIVE_BATCH,
                                name=f"projections {self.name}", kinds=handled_kinds(self.projections))
        loop = asyncio.get_running_loop()
        checked_at = loop.time()
        waking = asyncio.create_task(self._wake_while_idle())
        try:
            async with aclosing(self.tail.batches(min(self.positions.values()))) as batches:
                async for batch in batches:
                    if batch:
                        await self._apply(conn, batch)
                        checked_at = loop.time()
                    if self.tail.position > min(self.positions.values()):  # events of other kinds passed over
                        await self._skip({name: max(at, self.tail.position) for name, at in self.positions.items()})
                    elif not batch and loop.time() - checked_at >= IDLE_CHECK_SECONDS:
                        await conn.execute("SELECT 1")  # raises if the server went away: start again
                        checked_at = loop.time()
                    if self._store_by is not None and loop.time() >= self._store_by:
                        await self._store_positions(conn)
        finally:
            waking.cancel()

    async def _wake_while_idle(self) -> None:
        while True:
            await asyncio.sleep(IDLE_CHECK_SECONDS)
            self.tail.wake()

    async def _apply(self, conn: psycopg.AsyncConnection, batch: list[Recorded]) -> None:
        reached, handled = plan_batch(self.projections, batch, self.positions)
        if self.on_reached is None or any(handled.values()):
            self.positions = self.stored = await apply_plan(conn, self.projections, batch, reached, handled,
                                                            self.stored, self.fence)
            self._store_by = None
            if self.on_reached is not None:
                await self.on_reached(self.positions)
        else:
            await self._skip(reached)

    async def _skip(self, reached: dict[str, int]) -> None:
        """Moves the positions past events none of the group handles: stored at the loop's next turn, or
        with `on_reached`, within SKIPPED_STORE_SECONDS (readers in this process are told at once)."""
        self.positions = reached
        if self._store_by is None:
            loop = asyncio.get_running_loop()
            self._store_by = loop.time() + (SKIPPED_STORE_SECONDS if self.on_reached else 0.0)
            loop.call_at(self._store_by, self.tail.wake)  # wakes the loop if nothing else does
        if self.on_reached is not None:
            await self.on_reached(self.positions)

    async def _store_positions(self, conn: psycopg.AsyncConnection) -> None:
        """Stores the positions kept in memory (and tells readers in other processes)."""
        if self._store_by is None:
            return
        self._store_by = None
        try:
            await advance(conn, self.names, self.stored, self.positions, self.fence)
            self.stored = self.positions
        except psycopg.Error as exc:
            if exc.sqlstate != POSITIONS_MOVED:
                raise
            log.info("a rebuild moved %s; following on from it", self.name)
            self.positions = self.stored = await current_positions(conn, self.names)
