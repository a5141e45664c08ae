"""Sending campaigns: ordinary conversations and messages (with `campaignId`) that webhooks see, the
stats, exactly once per recipient while the workers and PostgreSQL connections are killed mid-send, a
cancel that stops the send, and a scheduled campaign that starts on time after a restart."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from commands.deciders.chat_session import identity_signature
from commands.streams import now
from events import types as ev
from events.store import Pending
from events.ids import new_id
from tests.support.servers import make_server, make_tenant
from tests.support.receivers import Receiver

ENV = dict(PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_CAMPAIGN_BATCH_SIZE="25")


def eventually(condition, timeout: float = 120, every: float = 0.05, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(every)
    raise AssertionError(f"{what} did not hold within {timeout} s")


@pytest.fixture(scope="module")
def sender(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("campaigns"), **ENV).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(sender):
    with sender.client() as c:
        yield c


def seed_customers(server, tenant, website: uuid.UUID, count: int, **fields) -> list[uuid.UUID]:
    ids = [new_id() for _ in range(count)]
    store = server.store()
    try:
        position = store.append(*[Pending(i, 1, ev.CustomerCreated(org_id=tenant.org_id, at=now(), customer_id=i,
                                                                   website_id=website, **fields)) for i in ids])
    finally:
        store.close()
    server.wait_projected(position)
    return ids


def campaign(client, tenant, website: uuid.UUID, **audience) -> dict:
    response = client.post("/api/campaigns", headers=tenant.operator, json={
        "websiteId": str(website), "name": "Launch", "content": "We launched!", "audience": audience})
    assert response.status_code == 200, response.text
    return response.json()


def read(client, tenant, campaign_id: str) -> dict:
    """The campaign; asked again after a failed read (the server's connections may have just been cut)."""
    last = []

    def answered():
        last[:] = [client.get(f"/api/campaigns/{campaign_id}", headers=tenant.operator)]
        return last[0].status_code == 200 and last[0].json()
    try:
        return eventually(answered, 60, 0.1, "a read of the campaign")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the last answer: {last[0].status_code} {last[0].text}") from None


def finished(client, tenant, campaign_id: str, timeout: float = 240) -> dict:
    return eventually(lambda: (c := read(client, tenant, campaign_id))["status"] in ("sent", "cancelled") and c,
                      timeout, 0.2, "the send's end")


EVENT_JSON = "convert_from(state, 'UTF8')::jsonb"


def sent_per_customer(server, campaign_id: str) -> dict[uuid.UUID, int]:
    """Campaign messages per customer, counted in the event store itself."""
    with psycopg.connect(server.database_url) as conn:
        return dict(conn.execute(
            f"WITH m AS (SELECT ({EVENT_JSON}->>'conversation_id')::uuid AS conversation FROM parley_events "
            f"           WHERE topic = 'MessageCreated' AND {EVENT_JSON}->>'campaign_id' = %s), "
            f"c AS (SELECT ({EVENT_JSON}->>'conversation_id')::uuid AS conversation, "
            f"             ({EVENT_JSON}->>'customer_id')::uuid AS customer FROM parley_events "
            f"      WHERE topic = 'ConversationCreated') "
            "SELECT c.customer, count(*) FROM m JOIN c USING (conversation) GROUP BY c.customer",
            (campaign_id,)).fetchall())


def stream_of(server, campaign_id: str) -> list[ev.Event]:
    store = server.store()
    try:
        return [r.event for r in store.load(uuid.UUID(campaign_id))]
    finally:
        store.close()


def batches_recorded(server, campaign_id: str) -> int:
    """How many batches the campaign's stream records: one small query, for polling while a send runs."""
    with psycopg.connect(server.database_url) as conn:
        return conn.execute("SELECT count(*) FROM parley_events WHERE originator_id = %s AND topic = 'CampaignBatchSent'",
                            (campaign_id,)).fetchone()[0]


def test_a_campaign_opens_one_conversation_per_recipient_and_counts_who_replied(server, http, tenant):
    website, secret = tenant.add_website()
    visitor = http.post("/api/chat/sessions", json={"websiteId": str(website), "userId": "u-1",
                                                     "signature": identity_signature(secret, "u-1")}).json()
    http.put(f"/api/customers/{visitor['customerId']}", json={"language": "en"}, headers=tenant.operator)
    english = http.post("/api/customers", json={"websiteId": str(website), "language": "en-US"},
                        headers=tenant.operator).json()
    french = http.post("/api/customers", json={"websiteId": str(website), "language": "fr"},
                       headers=tenant.operator).json()
    draft = campaign(http, tenant, website, language=["en"])
    assert http.get(f"/api/campaigns/{draft['_id']}/preview", headers=tenant.operator).json()["recipients"] == 2
    assert http.post(f"/api/campaigns/{draft['_id']}/send", headers=tenant.operator).json()["status"] in (
        "sending", "sent")
    done = finished(http, tenant, draft["_id"])
    assert done["status"] == "sent" and done["sentAt"] is not None
    assert done["stats"] == {"recipients": 2, "sent": 2, "replied": 0}
    for customer_id in (visitor["customerId"], english["_id"]):
        conversations = http.get("/api/conversations", params={"customerId": customer_id},
                                 headers=tenant.operator).json()
        assert len(conversations) == 1
        messages = http.get("/api/messages", params={"conversationId": conversations[0]["_id"]},
                            headers=tenant.operator).json()
        assert [(m["from"], m["content"], m["campaignId"]) for m in messages] == [
            ("operator", "We launched!", draft["_id"])]
    assert http.get("/api/conversations", params={"customerId": french["_id"]}, headers=tenant.operator).json() == []

    session = {"Authorization": f"ChatSession {visitor['sessionToken']}"}
    own = http.get("/api/chat/conversations", headers=session).json()
    assert len(own) == 1
    for text in ("Nice!", "Tell me more"):
        reply = http.post("/api/chat/messages", json={"conversationId": own[0]["_id"], "content": text},
                          headers=session)
        assert reply.status_code == 200, reply.text
    assert eventually(lambda: read(http, tenant, draft["_id"])["stats"]["replied"] == 1, 30)
    assert read(http, tenant, draft["_id"])["stats"] == {"recipients": 2, "sent": 2, "replied": 1}
    assert sent_per_customer(server, draft["_id"]) == {uuid.UUID(visitor["customerId"]): 1,
                                                        uuid.UUID(english["_id"]): 1}


def test_an_empty_audience_is_sent_to_nobody(http, tenant):
    draft = campaign(http, tenant, tenant.website_id, emailDomain=["nobody.invalid"])
    http.post(f"/api/campaigns/{draft['_id']}/send", headers=tenant.operator)
    assert finished(http, tenant, draft["_id"])["stats"] == {"recipients": 0, "sent": 0, "replied": 0}


def test_webhooks_see_the_campaigns_conversations_and_messages(sender, client):
    tenant = make_tenant(sender)
    website, _ = tenant.add_website()
    customers = seed_customers(sender, tenant, website, 3)
    with Receiver() as receiver:
        subscription = client.post("/api/webhooksubscriptions", headers=tenant.operator, json={
            "websiteId": str(website), "url": receiver.url, "events": ["conversation.created", "message.created"]})
        assert subscription.status_code == 200, subscription.text
        draft = campaign(client, tenant, website)
        client.post(f"/api/campaigns/{draft['_id']}/send", headers=tenant.operator)
        assert finished(client, tenant, draft["_id"])["stats"]["sent"] == 3
        bodies = [json.loads(r.body) for r in receiver.wait_for(6)]
    conversations = {b["data"]["_id"]: b["data"]["customerId"] for b in bodies if b["event"] == "conversation.created"}
    messages = [b["data"] for b in bodies if b["event"] == "message.created"]
    assert sorted(conversations.values()) == sorted(str(c) for c in customers)
    assert sorted(m["conversationId"] for m in messages) == sorted(conversations)
    assert {(m["campaignId"], m["from"], m["content"]) for m in messages} == {(draft["_id"], "operator", "We launched!")}


def kill_workers(server) -> None:
    workers = server.workers_processes()
    assert workers, "no workers process to kill:\n" + "".join(server.output[-40:])
    for process in workers:
        process.kill()


def cut_connections(server) -> int:
    """Ends every PostgreSQL connection to the server's database but this one, as a PostgreSQL restart would."""
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        return len(conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall())


def test_a_send_to_2000_customers_is_exactly_once_across_killed_workers_and_connections(sender, client):
    tenant = make_tenant(sender)
    website, _ = tenant.add_website()
    customers = seed_customers(sender, tenant, website, 2000)
    draft = campaign(client, tenant, website)
    client.post(f"/api/campaigns/{draft['_id']}/send", headers=tenant.operator)
    progress = []
    for disrupt in (kill_workers, cut_connections, kill_workers):
        reached = eventually(lambda: (n := batches_recorded(sender, draft["_id"])) > (progress[-1] if progress else 0)
                             and n, 120, 0.01, "a batch after the last disruption")
        disrupt(sender)
        progress.append(reached)
        assert not any(isinstance(e, ev.CampaignCompleted) for e in stream_of(sender, draft["_id"])), \
            "the send ended before the disruption: nothing was tested"
    done = finished(client, tenant, draft["_id"])
    assert done["status"] == "sent"
    assert done["stats"] == {"recipients": 2000, "sent": 2000, "replied": 0}
    per_customer = sent_per_customer(sender, draft["_id"])
    assert set(per_customer) == set(customers)
    assert set(per_customer.values()) == {1}
    with psycopg.connect(sender.database_url) as conn:  # and the read models agree
        assert conn.execute(
            "SELECT count(*), count(DISTINCT c.customer_id) FROM rm_messages m JOIN rm_conversations c "
            "ON c.id = m.conversation_id WHERE m.campaign_id = %s", (draft["_id"],)).fetchone() == (2000, 2000)
    recorded = [e for e in stream_of(sender, draft["_id"]) if isinstance(e, ev.CampaignBatchSent)]
    assert [b.first for b in recorded] == list(range(0, 2000, 25))  # each batch once, in order


def test_a_cancel_stops_the_send_and_what_was_sent_stays(sender, client):
    tenant = make_tenant(sender)
    website, _ = tenant.add_website()
    seed_customers(sender, tenant, website, 2000)
    draft = campaign(client, tenant, website)
    client.post(f"/api/campaigns/{draft['_id']}/send", headers=tenant.operator)
    eventually(lambda: batches_recorded(sender, draft["_id"]) >= 2, 120, 0.01, "two batches")
    cancelled = client.post(f"/api/campaigns/{draft['_id']}/cancel", headers=tenant.operator)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"

    def quiet() -> bool:  # nothing more appended to the campaign for a second
        before = len(stream_of(sender, draft["_id"]))
        time.sleep(1)
        return len(stream_of(sender, draft["_id"])) == before
    eventually(quiet, 60, 0, "a quiet campaign stream")
    events = stream_of(sender, draft["_id"])
    assert isinstance(events[-1], ev.CampaignCancelled)  # no step landed after the cancel
    sent = events[-2].first + events[-2].count if isinstance(events[-2], ev.CampaignBatchSent) else 0
    assert 0 < sent < 2000
    assert sum(sent_per_customer(sender, draft["_id"]).values()) == sent
    assert eventually(lambda: (c := read(client, tenant, draft["_id"]))["stats"]["sent"] == sent and c)["status"] == \
        "cancelled"


def test_a_scheduled_campaign_starts_on_time_after_a_restart(sender, client):
    tenant = make_tenant(sender)
    website, _ = tenant.add_website()
    seed_customers(sender, tenant, website, 3)
    draft = campaign(client, tenant, website)
    at = datetime.now(timezone.utc) + timedelta(seconds=45)  # a loaded machine restarts slowly
    assert client.post(f"/api/campaigns/{draft['_id']}/schedule", json={"at": at.isoformat()},
                       headers=tenant.operator).json()["status"] == "scheduled"
    sender.kill()  # the whole server, workers and all, as a power cut would
    sender.start()
    assert datetime.now(timezone.utc) < at, "the restart took longer than the schedule's lead: nothing was tested"
    with sender.client() as fresh:
        done = finished(fresh, tenant, draft["_id"])
    assert done["status"] == "sent" and done["stats"]["sent"] == 3
    started = next(e for e in stream_of(sender, draft["_id"]) if isinstance(e, ev.CampaignStarted))
    assert started.at >= at  # never early
    print(f"started {(started.at - at).total_seconds():.3f} s after its scheduled time")
