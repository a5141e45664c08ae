"""The projection runner's batches against a real PostgreSQL: events none of a group handles only move
its positions (and tell the read path), the rest are applied once, past each member's position. A
runner whose readers share its process keeps skipped positions in memory for a moment, over a real
relay and NATS stream."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import uuid
from typing import AsyncIterator

import psycopg
import pytest

from commands.streams import now
from events import types as ev
from events.store import EventStore, Pending, Recorded
from events import stream as stream_module
from events.stream import Relay
from events.ids import new_id
from projections import runner as runner_module
from projections.activity import ActivityProjection
from projections.assignment import AssignmentProjection
from projections.core import CoreProjection
from projections.inbox import InboxProjection
from projections.notifications import NotificationsProjection
from projections.reports import ReportsProjection
from projections.webhooks import WebhookProjection
from projections.runner import (NOTIFY_CHANNEL, ProjectionRunner, apply_batch, catch_up_if_idle, connect,
                                current_position, ensure_tables)
from readapi.consistency import PositionWatch


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


def test_an_event_recorded_with_a_nul_character_does_not_stop_the_read_models(infra):
    """PostgreSQL text cannot hold U+0000, and a message with one once stopped every read model at it for
    good. The API refuses it now; one recorded all the same is read with U+FFFD in its place, while the
    text `\\u0000` is kept as written, and the events after it are applied."""
    database_url = infra.new_database()
    store = EventStore(database_url, pool_size=1)
    org_id = new_id()
    contents = ["a\x00b", "the text \\u0000 and \\\x00", "after"]
    try:
        for content in contents:
            conversation_id = new_id()
            store.append(Pending(conversation_id, 1, ev.MessageCreated(
                org_id=org_id, at=now(), message_id=new_id(), conversation_id=conversation_id,
                website_id=new_id(), content=content, sender="customer")))
        for projection in (CoreProjection(), InboxProjection()):
            assert asyncio.run(catch_up_if_idle(database_url, projection, store))
    finally:
        store.close()
    with psycopg.connect(database_url) as conn:
        stored = [row[0] for row in conn.execute("SELECT content FROM rm_messages ORDER BY creation_time")]
        assert stored == ["a\ufffdb", "the text \\u0000 and \\\ufffd", "after"]
        assert conn.execute("SELECT position FROM parley_projection_positions WHERE name = 'inbox'").fetchone()[0] == 3


def test_a_run_of_messages_in_one_statement_leaves_what_one_at_a_time_leaves(infra, monkeypatch):
    """Core and inbox write a run of messages in one statement: the read models must end as they would
    applying each message alone (the latest visitor message unread until read, internal notes and their
    mentions, each conversation's last edit time), which a second database, one event per batch, gives."""
    org_id, website_id, operator_id = new_id(), new_id(), new_id()
    a, b = new_id(), new_id()
    messages = {}

    def said(conversation_id, sender, content="hi", internal=False):
        messages[len(messages)] = message_id = new_id()
        return Pending(message_id, 1, ev.MessageCreated(
            org_id=org_id, at=now(), message_id=message_id, conversation_id=conversation_id, website_id=website_id,
            content=content, sender=sender, internal=internal, operator_id=None if sender == "customer" else operator_id))

    history = [Pending(operator_id, 1, ev.OperatorCreated(org_id=org_id, at=now(), operator_id=operator_id,
                                                          email="ann@example.com", password_hash="x"))]
    history += [Pending(c, 1, ev.ConversationCreated(org_id=org_id, at=now(), conversation_id=c, website_id=website_id,
                                                     customer_id=new_id())) for c in (a, b)]
    history += [said(a, "customer"), said(a, "operator", "ask @ann@example.com", internal=True), said(b, "operator"),
                said(a, "customer"), said(a, "operator")]
    history.append(Pending(a, 2, ev.MessageRead(org_id=org_id, at=now(), message_id=messages[3], conversation_id=a)))
    history += [said(b, "customer"), said(b, "customer", "note", internal=True)]

    def project(batch_size: int) -> dict[str, list]:
        database_url = infra.new_database()
        store = EventStore(database_url, pool_size=1)
        monkeypatch.setattr(runner_module, "CATCH_UP_BATCH", batch_size)
        try:
            for pending in history:
                store.append(pending)
            for projection in (CoreProjection(), InboxProjection()):
                assert asyncio.run(catch_up_if_idle(database_url, projection, store))
        finally:
            store.close()
        with psycopg.connect(database_url) as conn:
            return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in (
                "rm_messages", "rm_conversations", "rm_inbox", "rm_inbox_counts", "rm_inbox_mentions")}

    together, alone = project(1000), project(1)
    assert together == alone
    # (unread, the latest visitor message): the columns the table was made with; the workflow's come after
    inbox = {row[0]: row[9:11] for row in together["rm_inbox"]}
    assert inbox[a] == (False, messages[3]) and inbox[b] == (True, messages[5])  # unread, latest visitor's
    assert [row[:2] for row in together["rm_inbox_mentions"]] == [(operator_id, a)]


def test_a_run_of_conversations_in_one_statement_leaves_what_one_at_a_time_leaves(infra, monkeypatch):
    """A campaign's batch opens a run of conversations, which core, inbox, activity, reports, assignment,
    webhooks and notifications each write in one statement: the read models must end as one event per batch leaves them (the
    activity's count of the day, the assignment's queue in the order the conversations came, a private
    conversation not queued, a conversation of a website that does not assign not followed)."""
    org_id, assigning, other = new_id(), new_id(), new_id()
    conversations = [(new_id(), website_id, operator_only) for website_id, operator_only in
                     [(assigning, False), (other, False), (assigning, True), (assigning, False), (other, False)]]
    at = now()
    history = [Pending(assigning, 1, ev.WebsiteAssignmentConfigured(org_id=org_id, at=at, website_id=assigning,
                                                                    mode="round-robin", capacity=5))]
    history += [Pending(c, 1, ev.ConversationCreated(org_id=org_id, at=at, conversation_id=c, website_id=website_id,
                                                     customer_id=new_id(), operator_only=operator_only,
                                                     metadata={"plan": "pro"}))
                for c, website_id, operator_only in conversations]
    tables = {"rm_conversations": "id", "rm_inbox": "id", "(SELECT id, metadata, operator_only FROM rm_conversations) c": "id", "rm_activity_conversations": "id",
              "rm_activity_days": "website_id", "rm_report_conversations": "id",
              "rm_assignment_conversations": "seq", "rm_webhook_conversations": "id",
              "rm_webhook_private_conversations": "id", "rm_notify_conversations": "id"}

    def project(batch_size: int) -> dict[str, list]:
        database_url = infra.new_database()
        store = EventStore(database_url, pool_size=1)
        monkeypatch.setattr(runner_module, "CATCH_UP_BATCH", batch_size)
        try:
            store.append(*history)
            for projection in (CoreProjection(), InboxProjection(), ActivityProjection(), ReportsProjection(),
                               AssignmentProjection(), WebhookProjection(), NotificationsProjection()):
                assert asyncio.run(catch_up_if_idle(database_url, projection, store))
        finally:
            store.close()
        with psycopg.connect(database_url) as conn:
            return {table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
                    for table, order in tables.items()}

    together, alone = project(1000), project(1)
    assert together == alone
    assert sorted((row[0], row[2]) for row in together["rm_activity_days"]) == sorted([(assigning, 3), (other, 2)])
    assert [row[0] for row in together["rm_assignment_conversations"]] == [conversations[0][0], conversations[2][0],
                                                                          conversations[3][0]]
    assert [row[-2] for row in together["rm_assignment_conversations"]] == [True, False, True]  # queued
    assert [row[0] for row in together["rm_webhook_private_conversations"]] == [conversations[2][0]]
    assert len(together["rm_webhook_conversations"]) == len(together["rm_notify_conversations"]) == 5
    assert together["(SELECT id, metadata, operator_only FROM rm_conversations) c"] == sorted(
        (c, {"plan": "pro"}, operator_only) for c, _, operator_only in conversations)


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


class FailsOnSecond(MessagesSeen):
    """Writes its first event, then fails on the second: in Python, or in psycopg before the server sees it."""

    def __init__(self, failure: str) -> None:
        super().__init__()
        self.failure = failure

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        if self.applied:
            if self.failure == "python":
                raise RuntimeError("a handler's bug")
            await conn.execute("SELECT %s", (object(),))  # psycopg cannot adapt it: a client-side error
        await super().apply(conn, recorded)


@pytest.mark.parametrize("failure", ["python", "client-side psycopg"])
def test_a_batch_that_fails_outside_the_server_commits_nothing(infra, failure):
    """The batch's writes go out in the pipeline's implicit transaction, which the closing Sync would
    commit: a failure the server did not see must still leave neither rows nor positions behind."""
    database_url = infra.new_database()
    org_id = new_id()

    async def scenario() -> None:
        projection = FailsOnSecond(failure)
        async with await connect(database_url) as conn:
            await ensure_tables(conn, projection)
            with pytest.raises((RuntimeError, psycopg.ProgrammingError)):
                await apply_batch(conn, [projection], [message(1, org_id), message(2, org_id)], {projection.name: 0})
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as check:
            assert await (await check.execute(f"SELECT position FROM {projection.name}")).fetchall() == []
            assert await current_position(check, projection.name) == 0

    asyncio.run(scenario())


async def eventually(check, timeout: float = 10.0) -> None:
    """Waits until `check()` (a bool, or an awaitable of one) holds."""
    deadline = time.monotonic() + timeout
    while not (await result if inspect.isawaitable(result := check()) else result):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def relayed(runner: ProjectionRunner) -> AsyncIterator[psycopg.AsyncConnection]:
    """`runner` running, with a relay of its store onto its stream, until the block ends; the block gets a
    connection of its own to the runner's database."""
    tasks = [asyncio.create_task(Relay(runner.database_url, runner.nats_url, runner.stream).run()),
             asyncio.create_task(runner.run())]
    try:
        async with await connect(runner.database_url) as conn:
            yield conn
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_a_runner_with_readers_in_its_process_stores_skipped_positions_later(infra, monkeypatch):
    monkeypatch.setattr(runner_module, "SKIPPED_STORE_SECONDS", 1.5)
    database_url = infra.new_database()
    stream_name = f"TEST_{uuid.uuid4().hex[:10].upper()}"
    store = EventStore(database_url, pool_size=2)
    org_id = new_id()

    def append(recorded: Recorded) -> int:
        return store.append(Pending(recorded.stream_id, 1, recorded.event))

    async def scenario() -> None:
        projection = MessagesSeen()
        told: list[int] = []

        async def on_reached(positions: dict[str, int]) -> None:
            told.append(positions[projection.name])

        runner = ProjectionRunner([projection], store, database_url, infra.nats_url, stream_name, on_reached)
        async with relayed(runner) as conn:
            async def stored() -> int:
                return await current_position(conn, projection.name)

            async def stored_at(position: int) -> bool:
                return await stored() == position

            await eventually(lambda: runner.positions != {})
            skipped = await asyncio.to_thread(append, session(0, org_id))
            await eventually(lambda: skipped in told)
            assert await stored() < skipped  # told at once, kept in memory
            await eventually(lambda: stored_at(skipped))  # and stored a moment later
            assert projection.applied == []

            again = await asyncio.to_thread(append, session(0, org_id))
            handled = await asyncio.to_thread(append, message(0, org_id))
            await eventually(lambda: handled in told)
            # the applied batch moves the position from where the table had it, past the skipped one
            assert await stored() == handled and projection.applied == [handled]
            assert told == sorted(told) and again < handled

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_a_runner_passes_over_undecoded_what_its_group_does_not_handle(infra, monkeypatch):
    """A group whose members all list what they handle (the search index: documents) never decodes the
    other events the stream brings (a campaign's thousands of messages), and still stores its position
    past them, at once when no reader shares its process."""
    database_url = infra.new_database()
    stream_name = f"TEST_{uuid.uuid4().hex[:10].upper()}"
    store = EventStore(database_url, pool_size=2)
    org_id = new_id()
    decoded: list[int] = []
    recorded_of = stream_module.recorded_of

    def counted(msg):
        recorded = recorded_of(msg)
        decoded.append(recorded.position)
        return recorded

    monkeypatch.setattr(stream_module, "recorded_of", counted)

    def append(recorded: Recorded) -> int:
        return store.append(Pending(recorded.stream_id, 1, recorded.event))

    async def scenario() -> None:
        projection = MessagesSeen()
        runner = ProjectionRunner([projection], store, database_url, infra.nats_url, stream_name)
        async with relayed(runner) as conn:
            await eventually(lambda: runner.tail is not None and runner.tail.from_stream)
            skipped = [await asyncio.to_thread(append, session(0, org_id)) for _ in range(3)]

            async def stored_at(position: int) -> bool:
                return await current_position(conn, projection.name) == position

            await eventually(lambda: stored_at(skipped[-1]))
            handled = await asyncio.to_thread(append, message(0, org_id))
            await eventually(lambda: stored_at(handled))
            assert projection.applied == [handled] and decoded == [handled]

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_the_position_watch_only_moves_forward(infra):
    database_url = infra.new_database()

    async def scenario() -> None:
        watch = PositionWatch(database_url, max_wait=0.2)
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute(runner_module.POSITIONS_DDL)
            await conn.execute("INSERT INTO parley_projection_positions VALUES ('listening', 1)")
            await watch.start()
            try:
                # the watch reads the stored positions once it listens
                await eventually(lambda: "listening" in watch.positions)
                await watch.observe({"seen": 10})
                await conn.execute("SELECT pg_notify(%s, 'seen:5,other:3')", (NOTIFY_CHANNEL,))
                await eventually(lambda: watch.positions.get("other") == 3)
                assert watch.positions["seen"] == 10  # a late notice does not take back what was told
                assert await watch.wait_for(10, ("seen",)) and not await watch.wait_for(11, ("seen",))
            finally:
                await watch.stop()

    asyncio.run(scenario())
