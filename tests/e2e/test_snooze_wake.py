"""Snooze: a snoozed conversation comes back exactly once when its time comes, while the workers process
(the snooze waker) is killed before and during the wakes, and after a restart of the whole server."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from tests.e2e.test_campaigns_sending import eventually, kill_workers
from tests.support.servers import make_server, make_tenant


@pytest.fixture(scope="module")
def waker(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("snooze")).start()
    yield server
    server.stop()


def wakes(server, conversations: list[str]) -> dict[str, list[str]]:
    """The ConversationWoken events of each conversation, by reason, counted in the event store itself."""
    with psycopg.connect(server.database_url) as conn:
        rows = conn.execute(
            "SELECT originator_id::text, convert_from(state, 'UTF8')::jsonb->>'reason' FROM parley_events "
            "WHERE topic = 'ConversationWoken' AND originator_id = ANY(%s::uuid[])", (conversations,)).fetchall()
    found: dict[str, list[str]] = {c: [] for c in conversations}
    for conversation_id, reason in rows:
        found[conversation_id].append(reason)
    return found


def snoozed_conversations(client, tenant, count: int, seconds: float) -> tuple[list[str], datetime]:
    """`count` conversations snoozed until `seconds` after they were all made, and that time."""
    customer = client.post("/api/customers", headers=tenant.operator,
                           json={"websiteId": str(tenant.website_id), "email": "sleepy@example.com"}).json()
    made = [client.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": customer["_id"]}).json()["_id"] for _ in range(count)]
    until = datetime.now(timezone.utc) + timedelta(seconds=seconds)
    for conversation_id in made:
        response = client.patch(f"/api/conversations/{conversation_id}", headers=tenant.operator,
                                json={"snoozedUntil": until.isoformat()})
        assert response.status_code == 200 and response.json()["snoozed"], response.text
    assert datetime.now(timezone.utc) < until, "snoozing took longer than the snooze: nothing would be tested"
    return made, until


def unresolved(client, tenant) -> set[str]:
    page = client.get("/api/conversations", headers=tenant.operator, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "unresolved", "limit": "100"}).json()
    return {c["_id"] for c in page["conversations"]}


def test_snoozed_conversations_wake_exactly_once_across_killed_workers(waker):
    tenant = make_tenant(waker)
    with waker.client() as client:
        conversations, until = snoozed_conversations(client, tenant, 20, 15)
        assert not unresolved(client, tenant) & set(conversations)
        kill_workers(waker)  # before the time: the restarted waker finds them
        time.sleep(max((until - datetime.now(timezone.utc)).total_seconds(), 0))
        for _ in range(3):  # and while it wakes them
            eventually(lambda: waker.workers_processes(), 60, 0.05, "a workers process again")
            kill_workers(waker)
            time.sleep(0.3)
        woken = eventually(lambda: all((w := wakes(waker, conversations)).values()) and w, 120, 0.2,
                           "every conversation woken")
        time.sleep(2)  # a second wake would be recorded by now
        assert wakes(waker, conversations) == {c: ["time"] for c in conversations}, woken
        assert eventually(lambda: set(conversations) <= unresolved(client, tenant), 30, 0.1, "back in the inbox")


def test_a_snooze_survives_a_restart_of_the_whole_server(waker):
    tenant = make_tenant(waker)
    with waker.client() as client:
        [conversation], until = snoozed_conversations(client, tenant, 1, 40)  # a loaded machine restarts slowly
    waker.kill()
    waker.start()
    assert datetime.now(timezone.utc) < until, "the restart took longer than the snooze: nothing was tested"
    eventually(lambda: wakes(waker, [conversation])[conversation], 120, 0.2, "the wake")
    with psycopg.connect(waker.database_url) as conn:
        at = conn.execute("SELECT (convert_from(state, 'UTF8')::jsonb->>'at')::timestamptz FROM parley_events "
                          "WHERE topic = 'ConversationWoken' AND originator_id = %s", (uuid.UUID(conversation),)
                          ).fetchone()[0]
    assert at >= until  # never early
    assert wakes(waker, [conversation]) == {conversation: ["time"]}
