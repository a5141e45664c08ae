"""The projection runner's batches against a real PostgreSQL: events none of a group handles only move
its positions (and tell the read path), the rest are applied once, past each member's position."""

from __future__ import annotations

import asyncio
import uuid

import psycopg

from commands.streams import now
from events import types as ev
from events.store import Recorded
from parley.ids import new_id
from projections.runner import NOTIFY_CHANNEL, apply_batch, connect, ensure_tables


class MessagesSeen:
    """A read model of message ids; it changes on `MessageCreated` only."""

    handles = (ev.MessageCreated,)

    def __init__(self, name: str = "test_messages_seen") -> None:
        self.name = name
        self.applied: list[int] = []

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {self.name} (position bigint PRIMARY KEY)")

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(f"DROP TABLE IF EXISTS {self.name}")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        self.applied.append(recorded.position)
        await conn.execute(f"INSERT INTO {self.name} VALUES (%s)", (recorded.position,))


def message(position: int, org_id: uuid.UUID) -> Recorded:
    return Recorded(position, new_id(), 1, ev.MessageCreated(
        org_id=org_id, at=now(), message_id=new_id(), conversation_id=new_id(), website_id=new_id(),
        content="hello", sender="customer"))


def session(position: int, org_id: uuid.UUID) -> Recorded:
    return Recorded(position, new_id(), 1, ev.ChatSessionStarted(
        org_id=org_id, at=now(), session_id=new_id(), website_id=new_id(), customer_id=new_id(), token_hash="x"))


def test_a_group_batch_is_one_notice_for_every_member(infra):
    database_url = infra.new_database()
    org_id = new_id()

    async def scenario() -> None:
        group = [MessagesSeen("test_seen_a"), MessagesSeen("test_seen_b")]
        async with await connect(database_url) as conn, await psycopg.AsyncConnection.connect(
                database_url, autocommit=True) as listener:
            for projection in group:
                await ensure_tables(conn, projection)
            await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
            at = {"test_seen_a": 0, "test_seen_b": 0}
            at = await apply_batch(conn, group, [message(1, org_id)], at)
            assert at == {"test_seen_a": 1, "test_seen_b": 1}
            assert await apply_batch(conn, group, [session(2, org_id)], at) == {"test_seen_a": 2, "test_seen_b": 2}
            notices = [n.payload async for n in listener.notifies(timeout=2, stop_after=2)]
            assert [sorted(notice.split(",")) for notice in notices] == [
                ["test_seen_a:1", "test_seen_b:1"], ["test_seen_a:2", "test_seen_b:2"]]
            assert [projection.applied for projection in group] == [[1], [1]]

    asyncio.run(scenario())


def test_a_batch_nobody_handles_moves_the_positions_and_tells_readers(infra):
    database_url = infra.new_database()
    org_id = new_id()

    async def scenario() -> None:
        projection = MessagesSeen()
        async with await connect(database_url) as conn, await psycopg.AsyncConnection.connect(
                database_url, autocommit=True) as listener:
            await ensure_tables(conn, projection)
            await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")

            assert await apply_batch(conn, [projection], [session(1, org_id), session(2, org_id)],
                                     {projection.name: 0}) == {projection.name: 2}
            notices = [n.payload async for n in listener.notifies(timeout=2, stop_after=1)]
            assert notices == [f"{projection.name}:2"]
            assert projection.applied == []

            assert await apply_batch(conn, [projection], [message(3, org_id), session(4, org_id)],
                                     {projection.name: 2}) == {projection.name: 4}
            assert projection.applied == [3]
            # a batch already applied (a re-published stream) changes nothing, handled or not
            assert await apply_batch(conn, [projection], [message(3, org_id)], {projection.name: 4}) == {projection.name: 4}
            assert await apply_batch(conn, [projection], [session(4, org_id)], {projection.name: 4}) == {projection.name: 4}
            assert projection.applied == [3]
            rows = await (await conn.execute("SELECT position FROM test_messages_seen")).fetchall()
            stored = await (await conn.execute(
                "SELECT position FROM parley_projection_positions WHERE name = %s", (projection.name,))).fetchone()
            assert rows == [(3,)] and stored == (4,)

    asyncio.run(scenario())


def test_the_search_index_handles_only_document_events():
    from projections.search import SearchProjection
    from projections.runner import handles

    search = SearchProjection.__new__(SearchProjection)
    org_id = new_id()
    assert not handles(search, message(1, org_id)) and not handles(search, session(2, org_id))
    for kind in (ev.DocumentCreated, ev.DocumentUpdated, ev.DocumentDeleted):
        assert issubclass(kind, search.handles)


def test_a_batch_under_which_a_rebuild_moved_the_position_starts_again_from_there(infra):
    database_url = infra.new_database()
    org_id = new_id()

    async def scenario() -> None:
        projection = MessagesSeen()
        async with await connect(database_url) as conn:
            await ensure_tables(conn, projection)
            assert await apply_batch(conn, [projection], [message(1, org_id)], {projection.name: 0}) == {
                projection.name: 1}
            # a rebuild replayed the store up to 5 meanwhile: this runner still believes it stands at 1
            await conn.execute("UPDATE parley_projection_positions SET position = 5 WHERE name = %s",
                               (projection.name,))
            assert await apply_batch(conn, [projection], [message(2, org_id), message(6, org_id)],
                                     {projection.name: 1}) == {projection.name: 6}
            assert projection.applied == [1, 2, 6, 6]  # the rolled-back attempt, then 6 alone
            rows = await (await conn.execute(f"SELECT position FROM {projection.name} ORDER BY 1")).fetchall()
            assert rows == [(1,), (6,)]

    asyncio.run(scenario())
