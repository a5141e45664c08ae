"""The event store against a real PostgreSQL: positions in order, optimistic concurrency, group commit
from many concurrent appends (synchronous and on the event loop), and each organization's position."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid

import msgspec
import psycopg
import pytest

from commands.streams import now
from events import types as ev
from events.store import (EVENTS_TABLE, AppendBatch, AppendedEvent, Appender, CredentialsChanged, EventStore, Pending,
                          StreamConflict, encode_event)
from events.ids import new_id


def organization(org_id: uuid.UUID, name: str = "Acme") -> ev.OrganizationCreated:
    return ev.OrganizationCreated(org_id=org_id, at=now(), name=name)


@pytest.fixture
def store(infra):
    store = EventStore(infra.new_database(), pool_size=4)
    yield store
    store.close()


def test_sync_appends_take_positions_in_order_and_refuse_a_taken_version(store):
    first, second = new_id(), new_id()
    a = store.append(Pending(first, 1, organization(first)))
    b = store.append(Pending(second, 1, organization(second)), Pending(second, 2, organization(second, "Renamed")))
    assert b > a
    with pytest.raises(StreamConflict):
        store.append(Pending(first, 1, organization(first, "again")))
    assert [r.event.name for r in store.load(second)] == ["Acme", "Renamed"]
    assert [r.version for r in store.load(second)] == [1, 2]
    assert [(r.position, r.stream_id, r.version) for r in store.read(0, 10)] == [
        (a, first, 1), (b - 1, second, 1), (b, second, 2)]
    assert store.org_position(second) == b and store.org_position(first) == a


def test_concurrent_sync_appends_commit_together_and_a_conflict_fails_only_its_own(store):
    taken = new_id()
    store.append(Pending(taken, 1, organization(taken)))
    streams = [new_id() for _ in range(20)]
    results: dict[int, object] = {}

    def append(i: int) -> None:
        stream = taken if i == 7 else streams[i]
        try:
            results[i] = store.append(Pending(stream, 1, organization(streams[i])))
        except StreamConflict as exc:
            results[i] = exc

    threads = [threading.Thread(target=append, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert isinstance(results.pop(7), StreamConflict)
    assert len(set(results.values())) == 19
    in_position_order = [streams[i] for i, _ in sorted(results.items(), key=lambda item: item[1])]
    assert [r.stream_id for r in store.read(0, 100)][1:] == in_position_order


def test_async_appends_group_commit_record_positions_and_conflicts(store):
    org_id = new_id()
    taken = new_id()

    async def scenario() -> None:
        await store.open_async()
        try:
            first = await store.append_async(Pending(taken, 1, organization(org_id)))
            streams = [new_id() for _ in range(30)]
            outcomes = await asyncio.gather(
                *(store.append_async(Pending(stream, 1, organization(org_id))) for stream in streams),
                store.append_async(Pending(taken, 1, organization(org_id, "late"))), return_exceptions=True)
            *positions, conflict = outcomes
            assert isinstance(conflict, StreamConflict)
            assert len(set(positions)) == 30 and min(positions) > first
            assert store.org_position(org_id) == max(positions)
            assert [r.version for r in store.load(taken)] == [1]
            assert [r.event.name for r in store.load(taken)] == ["Acme"]
        finally:
            await store.close_async()

    asyncio.run(scenario())


def test_an_append_after_its_connection_was_lost_opens_another(store):
    """The writer keeps one connection; a server that ends it (a restart, an administrator) fails the
    appends in flight at most, never the ones after."""
    org_id = new_id()

    async def scenario() -> None:
        await store.open_async()
        try:
            await store.append_async(Pending(new_id(), 1, organization(org_id)))
            with psycopg.connect(store.database_url, autocommit=True) as admin_conn:
                ended = admin_conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'SELECT parley_append%%' "
                    "AND pid <> pg_backend_pid()").fetchall()
            assert ended == [(True,)]
            with contextlib.suppress(psycopg.OperationalError):
                await store.append_async(Pending(new_id(), 1, organization(org_id)))
            later = new_id()
            position = await store.append_async(Pending(later, 1, organization(org_id)))
            assert store.org_position(org_id) == position
            assert [r.event.org_id for r in store.load(later)] == [org_id]
        finally:
            await store.close_async()

    asyncio.run(scenario())


def test_an_append_cut_off_midway_closes_its_connection(store):
    """Cancelled while the server still owes its answer, an append leaves that answer on the connection,
    where the next append would take it for its own: the connection is closed instead."""
    org_id, stream_id = new_id(), new_id()
    argument = msgspec.json.encode(AppendBatch([AppendedEvent(
        stream_id, 1, "OrganizationCreated", encode_event(organization(org_id)), org_id)], []))

    async def scenario() -> None:
        appender = await Appender.connect(store.database_url)
        with psycopg.connect(store.database_url) as holder:
            holder.execute(f"LOCK TABLE {EVENTS_TABLE} IN EXCLUSIVE MODE")  # the append waits on the server
            cut = asyncio.create_task(appender.append(argument))
            await asyncio.sleep(0.3)
            assert not cut.done()
            cut.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await cut
        assert appender.conn.closed

    asyncio.run(scenario())


def test_a_grouped_append_records_each_organizations_last_position_and_keeps_events_byte_for_byte(store):
    orgs = [new_id() for _ in range(3)]
    names = ['Ünïcödé 🎉 "quoted" \\ back\nslash', "", "x" * 5000]

    async def scenario() -> list[int]:
        await store.open_async()
        try:
            return await asyncio.gather(*(
                store.append_async(Pending(org_id, 1, organization(org_id, name)),
                                   Pending(org_id, 2, organization(org_id, name + "!")))
                for org_id, name in zip(orgs, names)))
        finally:
            await store.close_async()

    positions = asyncio.run(scenario())
    for org_id, name, position in zip(orgs, names, positions):
        assert store.org_position(org_id) == position
        assert [(r.version, r.event.name) for r in store.load(org_id)] == [(1, name), (2, name + "!")]
    assert [r.position for r in store.read(0, 10)] == sorted(p - d for p in positions for d in (1, 0))


def test_a_streams_first_event_is_kept_once_read_but_a_missing_stream_is_not(store):
    org_id, stream = new_id(), new_id()

    async def scenario() -> None:
        await store.open_async()
        try:
            assert await store.first_async(stream) is None  # not remembered as missing: it may be created next
            store.append(Pending(stream, 1, organization(org_id)))
            first = await store.first_async(stream)
            assert first is not None and first.version == 1 and first.event.name == "Acme"
            store.append(Pending(stream, 2, organization(org_id, "later")))
            assert (await store.first_async(stream)).event.name == "Acme"
            await store.close_async()  # kept: served without the database
            assert await store.first_async(stream) is first
        finally:
            await store.close_async()

    asyncio.run(scenario())


def test_an_append_checked_before_a_revocation_is_refused_and_the_others_go_in(store):
    """A credential generation older than the store's (a revocation came since the credential was
    checked) refuses that append whole; appends grouped with it still commit."""
    org_id = new_id()
    stale, unchecked, current = new_id(), new_id(), new_id()

    async def scenario() -> None:
        await store.open_async()
        try:
            with store.datastore.transaction(commit=True) as curs:
                curs.execute("UPDATE parley_credential_generation SET generation = generation + 1 RETURNING generation")
                generation = curs.fetchone()["generation"]
            outcomes = await asyncio.gather(
                store.append_async(Pending(stale, 1, organization(org_id)), credential_generation=generation - 1),
                store.append_async(Pending(unchecked, 1, organization(org_id))),
                store.append_async(Pending(current, 1, organization(org_id)), credential_generation=generation),
                return_exceptions=True)
            assert isinstance(outcomes[0], CredentialsChanged)
            assert all(isinstance(position, int) for position in outcomes[1:])
            assert store.load(stale) == []
            assert [len(store.load(s)) for s in (unchecked, current)] == [1, 1]
        finally:
            await store.close_async()

    asyncio.run(scenario())
