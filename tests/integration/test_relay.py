"""The relay and the stream it fills, against a real PostgreSQL and a real NATS server: every event once,
in order, with its position as `Nats-Msg-Id` and the previous position named, across restarts and two
relays at once; and a consumer that finds a position missing from the stream fills it from the store."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import nats
import psycopg
import pytest

from events import stream
from events.store import EVENTS_TABLE, EventStore, Pending
from events.stream import Relay
from events.ids import new_id
from projections.runner import ProjectionRunner, connect, current_position
from tests.integration.test_projection_runner import MessagesSeen, eventually, message, session


class Fixture:
    def __init__(self, infra):
        self.database_url = infra.new_database()
        self.nats_url = infra.nats_url
        self.stream = f"TEST_{uuid.uuid4().hex[:10].upper()}"
        self.store = EventStore(self.database_url, pool_size=2)
        self.org_id = new_id()

    def append(self, *recorded) -> int:
        """Appends in one transaction: a relay batch then holds several events."""
        return self.store.append(*(Pending(r.stream_id, 1, r.event) for r in recorded))

    def stored(self) -> list[tuple[int, uuid.UUID, bytes]]:
        with psycopg.connect(self.database_url) as conn:
            return [(p, s, bytes(d)) for p, s, d in conn.execute(
                f"SELECT notification_id, originator_id, state FROM {EVENTS_TABLE} ORDER BY notification_id")]

    async def published(self) -> list[tuple[int, int, uuid.UUID, bytes]]:
        """(position, previous, stream id, data) of every stream message, in stream order."""
        nc = await nats.connect(self.nats_url)
        try:
            js = nc.jetstream()
            state = (await js.stream_info(self.stream)).state
            found = []
            for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
                try:
                    msg = await js.get_msg(self.stream, seq)
                except nats.js.errors.NotFoundError:  # a bounded stream dropped it since `state` was read
                    continue
                found.append((stream.position_of(msg), stream.previous_of(msg),
                              uuid.UUID(msg.headers[stream.STREAM_ID]), msg.data))
            return found
        finally:
            await nc.close()

    async def all_published(self) -> bool:
        try:
            return len(await self.published()) == len(self.stored())
        except nats.js.errors.NotFoundError:
            return False

    def relay(self) -> asyncio.Task:
        return asyncio.create_task(Relay(self.database_url, self.nats_url, self.stream).run())


@pytest.fixture
def log(infra):
    fixture = Fixture(infra)
    yield fixture
    fixture.store.close()


async def stop(*tasks: asyncio.Task) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def test_every_event_is_published_once_in_order_across_restarts_and_rival_relays(log):
    async def scenario() -> None:
        first = log.relay()
        await asyncio.to_thread(log.append, *(message(0, log.org_id) for _ in range(5)))
        await asyncio.to_thread(log.append, session(0, log.org_id))
        await eventually(log.all_published)
        await stop(first)

        rivals = [log.relay(), log.relay()]  # one holds the lock, the other waits
        for n in range(20):
            await asyncio.to_thread(log.append, *(message(0, log.org_id) for _ in range(1 + n % 4)))
        await eventually(log.all_published)
        await asyncio.sleep(0.5)  # time for a duplicate, were one coming
        await stop(*rivals)

        stored, published = log.stored(), await log.published()
        assert [(position, stream_id, data) for position, _, stream_id, data in published] == stored
        positions = [position for position, *_ in published]
        assert [previous for _, previous, *_ in published] == [0, *positions[:-1]]

    asyncio.run(scenario())


def test_appends_wake_an_idle_relay_before_and_after_a_spell_of_load(log, monkeypatch):
    """An idle relay reads only when an append notifies it (on its own once an hour, here); a batch of
    PACE_FILL events or more turns the notices off, and the relay turns them on again once the log runs
    dry."""
    monkeypatch.setattr(stream, "IDLE_READ_SECONDS", 3600.0)

    async def scenario() -> None:
        relay = log.relay()
        try:
            await asyncio.sleep(0.5)  # the relay has found the log empty and waits
            await asyncio.to_thread(log.append, message(0, log.org_id))
            await eventually(log.all_published, timeout=5.0)
            await asyncio.to_thread(log.append, *(message(0, log.org_id) for _ in range(4 * stream.PACE_FILL)))
            await eventually(log.all_published, timeout=5.0)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(log.append, message(0, log.org_id))
            await eventually(log.all_published, timeout=5.0)
        finally:
            await stop(relay)

    asyncio.run(scenario())


def test_a_position_missing_from_the_stream_is_filled_from_the_store(log):
    """A publish the stream lost (the relay asks only the last of a batch to be acknowledged) shows as a
    message whose previous position the consumer has not seen."""
    async def scenario() -> None:
        projection = MessagesSeen()
        runner = ProjectionRunner([projection], log.store, log.database_url, log.nats_url, log.stream)
        task = asyncio.create_task(runner.run())
        nc = await nats.connect(log.nats_url)
        try:
            js = nc.jetstream()
            await stream.ensure_stream(js, log.stream)  # no relay here: the test publishes as the relay does
            await eventually(lambda: runner.positions != {})
            lost = await asyncio.to_thread(log.append, message(0, log.org_id))
            kept = await asyncio.to_thread(log.append, message(0, log.org_id))
            _, stream_id, data = log.stored()[-1]
            await js.publish(stream.subject_of(log.stream), data,
                             headers=stream.message_headers(kept, stream_id, lost))

            async with await connect(log.database_url) as conn:
                async def applied() -> bool:
                    return await current_position(conn, projection.name) == kept
                await eventually(applied)
            assert projection.applied == [lost, kept]
        finally:
            await nc.close()
            await stop(task)

    asyncio.run(scenario())


def test_the_stream_keeps_the_latest_events_and_a_consumer_behind_them_reads_the_rest_from_the_store(log):
    """The relay bounds the stream (here to 5 messages), also on a stream a consumer created unbounded; a
    consumer that starts before the oldest message kept gets the older events from the store, in order."""
    async def scenario() -> None:
        nc = await nats.connect(log.nats_url)
        try:
            await stream.ensure_stream(nc.jetstream(), log.stream)  # as a consumer makes it: the default limit
        finally:
            await nc.close()
        relay = asyncio.create_task(Relay(log.database_url, log.nats_url, log.stream, max_messages=5).run())
        try:
            positions = [await asyncio.to_thread(log.append, message(0, log.org_id)) for _ in range(12)]

            async def newest_published() -> bool:
                kept = await log.published()
                return bool(kept) and kept[-1][0] == positions[-1]
            await eventually(newest_published)
            assert [position for position, *_ in await log.published()] == positions[-5:]

            tail, seen = stream.Tail(log.store, log.nats_url, log.stream, name="test tail"), []
            async with contextlib.aclosing(tail.batches(0)) as batches:
                async for batch in batches:
                    seen += [recorded.position for recorded in batch]
                    if len(seen) >= len(positions):
                        break
            assert seen == positions
        finally:
            await stop(relay)

    asyncio.run(scenario())
