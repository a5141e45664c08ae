"""The JetStream stream that fans the notification log out to consumers, and the relay that fills it.

The relay publishes the log in order with `Nats-Msg-Id` set to the position, so a crash between commit
and publish only re-publishes (JetStream drops the duplicate). Each message also names the position
published before it, so a consumer can tell a gap (a wiped or trimmed stream, a lost publish) from a
normal jump, and catches up from the store.
Only one relay runs at a time across all processes: it holds the `relay` lease (`events.leadership`), and
checks it before each publish, so a relay that wakes from a freeze after another took over publishes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import AsyncIterator, Awaitable, Callable, TypeVar

import msgspec
import nats
import psycopg
from nats.js import JetStreamContext
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import ConsumerConfig, DeliverPolicy, DiscardPolicy, StorageType, StreamConfig
from nats.errors import ConnectionClosedError
from nats.js.errors import NotFoundError

from events.store import (EVENTS_TABLE, NOTIFY_CHANNEL, RELAY_LISTENING, SELECT_LOG, STREAM_WARNINGS, EventStore, Recorded,
                          decode_event)
from events.leadership import DEFAULT_LEASE_SECONDS, Fence, Lease
from events.supervision import keep_running

log = logging.getLogger("parley.relay")
tail_log = logging.getLogger("parley.stream")
T = TypeVar("T")

DEFAULT_STREAM = "PARLEY_EVENTS"
POSITION = "Nats-Msg-Id"  # the event's position: the id JetStream deduplicates on is the position itself
PREVIOUS = "Parley-Previous-Position"
STREAM_ID = "Parley-Stream"
BATCH = 500
# The relay lets events gather in proportion to the load: after a batch of n events it reads the next at
# most PACE_SECONDS * min(1, n / PACE_FILL) after the last read. Under load (PACE_FILL events or more a
# read) it reads once per PACE_SECONDS, and each batch's fixed costs (a query, a publish round trip, a
# transaction in every consumer, the position notices to every API process) are shared by more events: at
# 4 writing clients, 8 ms rather than 3 cut the CPU a message costs in all by a third, for at most 8 ms
# more on a write's way to the read models. At a few events per pace, latency wins: the wait shrinks with
# the batches, and an event after a quiet moment goes at once.
PACE_SECONDS = 0.008
PACE_FILL = 4
# Under load appends do not notify the relay (see RELAY_LISTENING): it reads at its pace until the log
# runs dry, then waits for notices again, and reads on its own only this often, should one never come.
IDLE_READ_SECONDS = 1.0
ACK_SECONDS = 5.0  # longest the relay waits for the stream to acknowledge a batch
# How many of the latest events the stream keeps (older ones are discarded). It carries the log onward;
# the store holds all of it, and a consumer further behind fills the gap from the store, so an unbounded
# stream would only grow NATS's memory and disk with the whole history (a 12-minute soak: +40%).
STREAM_MAX_MESSAGES = 100_000


# A connection attempt to a NATS that is down gives up after this long (a refused one at once).
CONNECT_SECONDS = 1.0


async def _quiet(_: Exception) -> None:
    """nats-py logs every failed attempt by default; an outage is logged once by whoever notices it."""


async def connect(url: str, **callbacks) -> nats.NATS:
    """A connection that fails rather than retries: with NATS down, `connect` raises at once (refused) or
    within two CONNECT_SECONDS (no answer), and a lost connection closes for good. Its users fall back on
    the event store meanwhile and connect again later (see `Tail`), or restart (the relay).

    `allow_reconnect=False` alone does not do it: nats-py still tries each server again inside `connect`,
    `reconnect_time_wait` (2 s) apart, until it has failed `max_reconnect_attempts` times (60 by default,
    0 or less meaning forever). One retry, at once, is the least it allows.

    `url` may name several servers of a cluster, comma-separated: the connection is made to any of them."""
    servers = [server.strip() for server in url.split(",") if server.strip()]
    return await nats.connect(servers, allow_reconnect=False, connect_timeout=CONNECT_SECONDS,
                              max_reconnect_attempts=1, reconnect_time_wait=0, name="parley",
                              error_cb=_quiet, **callbacks)


def subject_of(stream: str) -> str:
    return f"parley.{stream.lower()}"


async def ensure_stream(js: JetStreamContext, stream: str, max_messages: int | None = None,
                        replicas: int | None = None) -> list[str]:
    """Creates the stream when it is missing. The relay, which owns it, passes its limit and replicas, which
    are then also set on a stream made before (consumers only make sure it exists, so they never undo the
    relay's). An update never weakens the stream: more replicas than asked for, or file storage, are kept,
    and the mismatches are returned (and logged)."""
    config = StreamConfig(name=stream, subjects=[subject_of(stream)], storage=StorageType.FILE,
                          max_msgs=max_messages or STREAM_MAX_MESSAGES, discard=DiscardPolicy.OLD,
                          num_replicas=replicas or 1)
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(config)
        return []
    if max_messages is None:
        return []
    existing, mismatches = info.config, []
    if (existing.num_replicas or 1) > config.num_replicas:
        mismatches.append(f"the stream {stream} has {existing.num_replicas} replicas, more than the "
                          f"{config.num_replicas} asked for: kept")
        config.num_replicas = existing.num_replicas
    if existing.storage != config.storage:
        mismatches.append(f"the stream {stream} is stored in {existing.storage}, not in {config.storage}: kept "
                          "(a stream's storage cannot change)")
        config.storage = existing.storage
    for mismatch in mismatches:
        log.warning("%s", mismatch)
    if existing.max_msgs != config.max_msgs or (existing.num_replicas or 1) != config.num_replicas:
        await js.update_stream(config)
    return mismatches


def position_of(msg: Msg) -> int:
    return int(msg.headers[POSITION])


def previous_of(msg: Msg) -> int:
    """The position published before this message's: one a consumer has not seen is a gap."""
    return int(msg.headers[PREVIOUS])


def recorded_of(msg: Msg) -> Recorded:
    return Recorded(position_of(msg), uuid.UUID(msg.headers[STREAM_ID]), 0, decode_event(msg.data))


class _Kind(msgspec.Struct):
    """An event's type alone: read past the rest of its JSON, which a tail that wants few kinds never decodes."""

    type: str


_kind_decoder = msgspec.json.Decoder(_Kind)


def kind_of(msg: Msg) -> str:
    return _kind_decoder.decode(msg.data).type


async def position_at(js: JetStreamContext, stream: str, seq: int) -> int:
    return position_of(await js.get_msg(stream, seq))


async def last_published(js: JetStreamContext, stream: str) -> int:
    info = await js.stream_info(stream)
    if info.state.messages == 0:
        return 0
    return await position_at(js, stream, info.state.last_seq)


async def first_seq_after(js: JetStreamContext, stream: str, position: int) -> int:
    """The stream sequence of the first message whose position is greater than `position`.

    Positions grow along the stream, so a binary search over sequences finds it in a few reads."""
    info = await js.stream_info(stream)
    lo, hi = info.state.first_seq, info.state.last_seq + 1
    if info.state.messages == 0:
        return hi
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            found = await position_at(js, stream, mid)
        except NotFoundError:  # a deleted message: step past it
            lo = mid + 1
            continue
        if found > position:
            hi = mid
        else:
            lo = mid + 1
    return lo


async def follow(js: JetStreamContext, stream: str, after: int,
                 arrived: asyncio.Queue | None = None) -> tuple[Subscription, asyncio.Queue]:
    """An ordered consumer of the stream from the first message past position `after`, and the queue its
    messages arrive on (`arrived`, or a new one), in stream order."""
    await ensure_stream(js, stream)
    arrived = asyncio.Queue() if arrived is None else arrived

    async def enqueue(msg: Msg) -> None:
        arrived.put_nowait(msg)

    start = await first_seq_after(js, stream, after)
    sub = await js.subscribe(
        subject_of(stream), stream=stream, cb=enqueue, ordered_consumer=True,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start))
    return sub, arrived


def message_headers(position: int, stream_id: uuid.UUID, previous: int) -> dict[str, str]:
    return {POSITION: str(position), PREVIOUS: str(previous), STREAM_ID: str(stream_id)}


class Relay:
    def __init__(self, database_url: str, nats_url: str, stream: str = DEFAULT_STREAM,
                 max_messages: int = STREAM_MAX_MESSAGES, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                 replicas: int = 1):
        self.database_url = database_url
        self.nats_url = nats_url
        self.stream = stream
        self.max_messages = max_messages
        self.replicas = replicas
        self.lease = Lease(database_url, "relay", lease_seconds)

    async def run(self) -> None:
        await keep_running("relay", self._run_once, log)

    async def _run_once(self) -> None:
        await self.lease.lead(self._relay)

    async def _relay(self, fence: Fence) -> None:
        """Publishes the log while it leads. A batch read before a freeze and published after a takeover
        could only repeat positions the stream holds: `fence.check` refuses it before it leaves, and were
        it to slip through, JetStream drops a repeated `Nats-Msg-Id` and consumers skip a passed position."""
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            nc = await connect(self.nats_url)
            try:
                js = nc.jetstream()
                await conn.execute(f"INSERT INTO {STREAM_WARNINGS} VALUES (%s, %s) ON CONFLICT (stream) DO UPDATE "
                                   "SET warnings = excluded.warnings",
                                   (self.stream, await ensure_stream(js, self.stream, self.max_messages,
                                                                     self.replicas)))
                published = await last_published(js, self.stream)
                loop = asyncio.get_running_loop()
                read_at, batch, listening = 0.0, [], None  # whether appends notify: unknown at first
                while True:
                    pace = PACE_SECONDS * min(1.0, len(batch) / PACE_FILL)
                    if (early := read_at + pace - loop.time()) > 0:
                        await asyncio.sleep(early)
                    read_at = loop.time()
                    batch = await self._read(conn, published)
                    if not batch and listening is not True:
                        batch, listening = await self._listen(conn, published), True
                    elif len(batch) >= PACE_FILL and listening is not False:
                        await conn.execute(f"UPDATE {RELAY_LISTENING} SET listening = false")
                        listening = False
                    if batch:
                        fence.check()
                        published = await self._publish(nc, js, batch, published)
                    if listening and len(batch) < BATCH:
                        async for _ in conn.notifies(timeout=IDLE_READ_SECONDS, stop_after=1):
                            pass
            finally:
                await close(nc)

    @staticmethod
    async def _listen(conn: psycopg.AsyncConnection, published: int) -> list[tuple[int, uuid.UUID, bytes]]:
        """Turns the appends' notices on and reads the log once more, under a share lock of the events
        table: an append committed before the lock is read here, and one after it sees the switch on. The
        lock holds appends back meanwhile, so the commit does not wait for the disk: the switch is seen as
        soon as it commits, and a relay starting after a crash sets it again."""
        async with conn.transaction():
            await conn.execute("SET LOCAL synchronous_commit = off")
            await conn.execute(f"LOCK TABLE {EVENTS_TABLE} IN SHARE MODE")
            await conn.execute(f"UPDATE {RELAY_LISTENING} SET listening = true")
            return await Relay._read(conn, published)

    @staticmethod
    async def _read(conn: psycopg.AsyncConnection, published: int) -> list[tuple[int, uuid.UUID, bytes]]:
        """The log past `published`: the stored bytes are the encoded event, published as they are, never
        decoded here."""
        return await (await conn.execute(SELECT_LOG, (published, BATCH), prepare=True)).fetchall()

    async def _publish(self, nc: nats.NATS, js: JetStreamContext, batch: list[tuple[int, uuid.UUID, bytes]],
                       previous: int) -> int:
        """Sent one after another on one connection, the batch reaches the server in order, so the stream
        has taken all of it once it acknowledges the last: only that one asks for an acknowledgement (each
        one is a message more for NATS to send and for the relay to read). Should one before it be lost all
        the same, its successor names it as the previous position and consumers fill the gap from the
        store."""
        subject = subject_of(self.stream)
        *leading, (last, last_stream_id, last_data) = batch
        for position, stream_id, data in leading:
            await nc.publish(subject, data, headers=message_headers(position, stream_id, previous))
            previous = position
        acknowledged = await js.publish_async(subject, last_data, stream=self.stream,
                                              headers=message_headers(last, last_stream_id, previous))
        # nats-py never fails this wait when the connection closes under it: bounded, the relay restarts
        await asyncio.wait_for(acknowledged, ACK_SECONDS)
        return last


# --- following the log: from the stream while it works, from the store while it does not

TAIL_BATCH = 500
# The stream is not relied on once it has said nothing this long while the store holds events past the
# consumer's position (the relay cannot publish, or the consumer lost its subscription unnoticed).
STALL_SECONDS = 2.0
STORE_POLL_SECONDS = 0.1  # how often the store is read while the stream is unavailable
STREAM_RETRY_SECONDS = 1.0  # how often the stream is tried again meanwhile
WAKE = object()  # put in a tail's inbox by `Tail.wake`


class Lost:
    """Put in a tail's inbox when a NATS connection closes: the one it names, not necessarily the current."""

    def __init__(self, connection: nats.NATS):
        self.connection = connection


class StreamUnavailable(Exception):
    """The stream cannot be followed now: NATS is down, the connection was lost, or the stream stalled."""


class Tail:
    """The event log past a position, in order, in batches: followed on the JetStream stream while it
    works, read from the event store (the source of truth) while it does not, and followed on the stream
    again once it is back. Each event is yielded once, whichever way it came: the tail skips what it has
    passed, and fills from the store a gap the stream shows (a message naming a previous position past
    the tail's).

    A consumer applies each batch before it asks for the next and records its own position with what it
    applied (so a restart resumes there); a batch may be empty when `wake` was called, for consumers that
    keep work for a quiet moment, or after messages passed over: with `wanted`, a stream message is
    passed over undecoded while it returns False (nobody to tell), and with `kinds`, one whose event is
    of no kind named (a campaign's thousands of messages, for a read model of documents); `position`
    still moves past it."""

    def __init__(self, store: EventStore, nats_url: str, stream_name: str, *, batch: int = TAIL_BATCH,
                 name: str = "tail", wanted: Callable[[], bool] | None = None, kinds: frozenset[str] | None = None):
        self.store = store
        self.nats_url = nats_url
        self.stream = stream_name
        self.batch = batch
        self.name = name
        self.wanted = wanted
        self.kinds = kinds
        self.position = 0
        self.from_stream = False  # how events arrive now (what /readyz and the tests observe)
        self._inbox: asyncio.Queue = asyncio.Queue()

    def wake(self) -> None:
        self._inbox.put_nowait(WAKE)

    async def batches(self, after: int) -> AsyncIterator[list[Recorded]]:
        """Use with `contextlib.aclosing`, so that the NATS connection closes with the consumer."""
        self.position = after
        while True:
            try:
                async for batch in self._from_stream():
                    yield batch
            except StreamUnavailable as exc:
                tail_log.warning("%s: the stream is unavailable (%s); reading the event store from position %s",
                            self.name, exc, self.position)
            self.from_stream = False
            async for batch in self._from_store():
                yield batch
            tail_log.info("%s: following the stream again from position %s", self.name, self.position)

    def _passed(self, batch: list[Recorded]) -> list[Recorded]:
        if batch:
            self.position = batch[-1].position
        return batch

    async def _read(self, until: int | None = None) -> list[Recorded]:
        return list(await asyncio.to_thread(self.store.read, self.position, self.batch, until))

    async def _from_store(self) -> AsyncIterator[list[Recorded]]:
        """Reads the store until the stream is worth trying again (a steady load never lets the store run
        dry, so that is not waited for: the stream takes over from wherever the tail is)."""
        loop = asyncio.get_running_loop()
        retry_at = loop.time() + STREAM_RETRY_SECONDS
        while True:
            if loop.time() >= retry_at:
                return
            if batch := await self._read():
                yield self._passed(batch)
                continue
            try:
                item = await asyncio.wait_for(self._inbox.get(), STORE_POLL_SECONDS)
            except TimeoutError:
                continue
            if item is WAKE:
                yield []

    async def _from_stream(self) -> AsyncIterator[list[Recorded]]:
        inbox, connection, closed_now = self._inbox, [], asyncio.Event()

        async def closed() -> None:
            closed_now.set()
            inbox.put_nowait(Lost(connection[0]))

        try:
            nc = await connect(self.nats_url, closed_cb=closed)
            connection.append(nc)
        except Exception as exc:  # noqa: BLE001 - refused, timed out, no server: all mean the same here
            raise StreamUnavailable(f"cannot connect: {type(exc).__name__}") from None
        try:
            try:
                sub, _ = await _unless_closed(follow(nc.jetstream(), self.stream, self.position, inbox), closed_now)
            except Exception as exc:  # noqa: BLE001 - JetStream not ready, the connection lost meanwhile
                raise StreamUnavailable(f"cannot subscribe: {type(exc).__name__}") from None
            self.from_stream = True
            loop = asyncio.get_running_loop()
            quiet_since = loop.time()  # a wake-up is not a message: it does not put the stall check off
            while True:
                try:
                    items = [await asyncio.wait_for(inbox.get(), quiet_since + STALL_SECONDS - loop.time())]
                except TimeoutError:
                    if await self._store_is_ahead():
                        raise StreamUnavailable(f"no message for {STALL_SECONDS:g} s while the store has more")
                    quiet_since = loop.time()
                    continue
                while len(items) < self.batch and not inbox.empty():
                    items.append(inbox.get_nowait())
                if any(item is not WAKE for item in items):
                    quiet_since = loop.time()
                async for batch in self._batches_of(items, nc):
                    yield batch
        finally:
            await close(nc)

    async def _store_is_ahead(self) -> bool:
        return bool(await asyncio.to_thread(self.store.read, self.position, 1))

    async def _batches_of(self, items: list, nc: nats.NATS) -> AsyncIterator[list[Recorded]]:
        batch: list[Recorded] = []
        woken = passed_over = False
        for item in items:
            if isinstance(item, Lost):
                if item.connection is not nc:
                    continue  # an earlier connection's, closed when the tail left it
                if batch:
                    yield self._passed(batch)
                raise StreamUnavailable("the connection was lost")
            if item is WAKE:
                woken = True
                continue
            at = position_of(item)
            if at <= self.position:
                continue
            if previous_of(item) > self.position:
                tail_log.warning("%s: stream gap before position %s; reading it from the store", self.name, at)
                if batch:
                    yield self._passed(batch)
                    batch = []
                while self.position < previous_of(item) and (filled := await self._read(previous_of(item))):
                    yield self._passed(filled)
                if at <= self.position:
                    continue
            if (self.wanted is not None and not self.wanted()) or (
                    self.kinds is not None and kind_of(item) not in self.kinds):
                if batch:
                    yield self._passed(batch)
                    batch = []
                self.position = at
                passed_over = True
                continue
            batch.append(recorded_of(item))
            self.position = at  # provisional: a gap check against the next message needs it
        if batch or woken or passed_over:
            yield batch  # empty after a wake-up, or when all was passed over (`position` moved)


async def _unless_closed(work: Awaitable[T], closed: asyncio.Event) -> T:
    """`work`'s result, or ConnectionClosedError as soon as the connection closes: nats-py leaves a request
    waiting out its whole time-out (5 s for JetStream's) when the connection closes under it."""
    task, watch = asyncio.ensure_future(work), asyncio.ensure_future(closed.wait())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
    if not task.done():
        task.cancel()
        raise ConnectionClosedError
    return task.result()


async def close(nc: nats.NATS) -> None:
    try:
        await asyncio.wait_for(nc.close(), CONNECT_SECONDS)
    except Exception:  # noqa: BLE001 - closing a connection that is already gone
        pass
