"""The JetStream stream that fans the notification log out to consumers, and the relay that fills it.

The relay publishes the log in order with `Nats-Msg-Id` set to the position, so a crash between commit
and publish only re-publishes (JetStream drops the duplicate). Each message also names the position
published before it, so a consumer can tell a gap (a wiped or trimmed stream, a lost publish) from a
normal jump, and catches up from the store.
Only one relay runs at a time across all processes: it holds a PostgreSQL advisory lock.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import nats
import psycopg
from nats.js import JetStreamContext
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from events.store import EVENTS_TABLE, NOTIFY_CHANNEL, RELAY_LISTENING, SELECT_LOG, Recorded, decode_event
from parley.supervision import keep_running

log = logging.getLogger("parley.relay")

DEFAULT_STREAM = "PARLEY_EVENTS"
POSITION = "Nats-Msg-Id"  # the event's position: the id JetStream deduplicates on is the position itself
PREVIOUS = "Parley-Previous-Position"
STREAM_ID = "Parley-Stream"
RELAY_LOCK = 0x7061726C6579  # "parley"
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


async def connect(url: str) -> nats.NATS:
    return await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.25, name="parley")


def subject_of(stream: str) -> str:
    return f"parley.{stream.lower()}"


async def ensure_stream(js: JetStreamContext, stream: str) -> None:
    try:
        await js.stream_info(stream)
    except NotFoundError:
        await js.add_stream(StreamConfig(name=stream, subjects=[subject_of(stream)], storage=StorageType.FILE))


def position_of(msg: Msg) -> int:
    return int(msg.headers[POSITION])


def previous_of(msg: Msg) -> int:
    """The position published before this message's: one a consumer has not seen is a gap."""
    return int(msg.headers[PREVIOUS])


def recorded_of(msg: Msg) -> Recorded:
    return Recorded(position_of(msg), uuid.UUID(msg.headers[STREAM_ID]), 0, decode_event(msg.data))


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


async def follow(js: JetStreamContext, stream: str, after: int) -> tuple[Subscription, asyncio.Queue]:
    """An ordered consumer of the stream from the first message past position `after`, and the queue its
    messages arrive on, in stream order."""
    await ensure_stream(js, stream)
    arrived: asyncio.Queue = asyncio.Queue()

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
    def __init__(self, database_url: str, nats_url: str, stream: str = DEFAULT_STREAM):
        self.database_url = database_url
        self.nats_url = nats_url
        self.stream = stream

    async def run(self) -> None:
        await keep_running("relay", self._run_once, log)

    async def _run_once(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (RELAY_LOCK,))).fetchone())[0]:
                await asyncio.sleep(1.0)
            await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            nc = await connect(self.nats_url)
            try:
                js = nc.jetstream()
                await ensure_stream(js, self.stream)
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
                        published = await self._publish(nc, js, batch, published)
                    if listening and len(batch) < BATCH:
                        async for _ in conn.notifies(timeout=IDLE_READ_SECONDS, stop_after=1):
                            pass
            finally:
                await nc.close()

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
        await (await js.publish_async(subject, last_data, stream=self.stream,
                                      headers=message_headers(last, last_stream_id, previous)))
        return last
