"""Webhook subscriptions, signed deliveries, retries, auto-disable and the delivery log, against a real
server process and real HTTP receivers on loopback."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import httpx
import psycopg
import pytest
from tests.support.servers import basic, make_server, make_tenant, token
from tests.support.receivers import Answer, Receiver

from commands.webhooks import FAILURE_LIMIT
from commands.addresses import RefusedTarget, check_addresses, parse_target, resolve_sync
from delivery.webhooks import WebhookSettings, retry_delay
from events import types as ev
from events.store import Pending
from parley.settings import Settings, narrowed
from projections.runner import rebuild
from projections.webhooks import WebhookProjection

# Fast retries so a test sees many attempts in a second or two; timeouts of one second.
HOOK_ENV = dict(PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_WEBHOOK_RETRY_BASE_SECONDS="0.05",
                PARLEY_WEBHOOK_RETRY_CAP_SECONDS="0.2", PARLEY_WEBHOOK_TIMEOUT_SECONDS="1",
                PARLEY_WEBHOOK_RETRY_WINDOW_SECONDS="300")
EVENT_NAMES = {"message.created", "conversation.created", "customer.created"}


@pytest.fixture(scope="module")
def hooks(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("hooks"), **HOOK_ENV).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def hc(hooks):
    with hooks.client() as client:
        yield client


@pytest.fixture
def site(hooks):
    return make_tenant(hooks)


def subscribe(client: httpx.Client, tenant, url: str, events=(), website: uuid.UUID | None = None) -> dict:
    response = client.post("/api/webhooksubscriptions", headers=tenant.operator, json={
        "websiteId": str(website or tenant.website_id), "url": url, "events": list(events)})
    assert response.status_code == 200, response.text
    return response.json()


def create_customer(client: httpx.Client, tenant, website: uuid.UUID | None = None, **fields) -> dict:
    response = client.post("/api/customers", headers=tenant.operator,
                           json={"websiteId": str(website or tenant.website_id), **fields})
    assert response.status_code == 200, response.text
    return response.json()


def create_conversation(client: httpx.Client, tenant, customer: dict, operator_only: bool = False) -> dict:
    response = client.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": customer["websiteId"], "customerId": customer["_id"], "operatorOnly": operator_only})
    assert response.status_code == 200, response.text
    return response.json()


def create_message(client: httpx.Client, tenant, conversation: dict, content: str = "hello",
                   internal: bool = False) -> dict:
    response = client.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation["_id"], "content": content, "from": "operator", "internal": internal})
    assert response.status_code == 200, response.text
    return response.json()


def delivery_log(client: httpx.Client, tenant, subscription_id: str) -> list[dict]:
    items, cursor = [], None
    while True:
        params = {"pagination": "cursor", "limit": "2", **({"cursor": cursor} if cursor else {})}
        response = client.get(f"/api/webhooksubscriptions/{subscription_id}/deliveries", headers=tenant.operator,
                              params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        if not (cursor := page["nextCursor"]):
            return items


def eventually(check, timeout: float = 30):
    """Polls `check` until it returns something truthy (a wait, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout} s; last result {result!r}")
        time.sleep(0.05)


def get_subscription(client: httpx.Client, tenant, subscription_id: str) -> dict:
    listed = client.get("/api/webhooksubscriptions", headers=tenant.operator).json()
    return next(s for s in listed if s["_id"] == subscription_id)


def expected_signature(secret: str, headers: dict[str, str], body: bytes) -> tuple[int, str, str]:
    parts = dict(item.split("=", 1) for item in headers["x-service-signature"].split(","))
    timestamp = int(parts["t"])
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return timestamp, parts["v1"], mac


# --- subscriptions -----------------------------------------------------------------------------------


def test_create_list_update_delete_and_the_secret_is_returned_once(hc, site):
    created = subscribe(hc, site, "http://127.0.0.1:9/a", ["customer.created"])
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert created["websiteId"] == str(site.website_id) and created["url"] == "http://127.0.0.1:9/a"
    assert created["events"] == ["customer.created"] and created["active"] is True

    listed = hc.get("/api/webhooksubscriptions", headers=site.operator)
    assert listed.status_code == 200
    assert [s["_id"] for s in listed.json()] == [created["_id"]]
    assert "secret" not in listed.json()[0] and created["secret"] not in listed.text

    updated = hc.put(f"/api/webhooksubscriptions/{created['_id']}", headers=site.operator,
                     json={"url": "http://127.0.0.1:9/b", "events": [], "active": False})
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert (body["url"], body["events"], body["active"]) == ("http://127.0.0.1:9/b", [], False)
    assert "secret" not in body and created["secret"] not in updated.text

    # the website may be repeated unchanged (a client PUTting back what it read)
    same = hc.put(f"/api/webhooksubscriptions/{created['_id']}", headers=site.operator,
                  json={"websiteId": str(site.website_id), "active": True})
    assert same.status_code == 200 and same.json()["active"] is True

    deleted = hc.delete(f"/api/webhooksubscriptions/{created['_id']}", headers=site.operator)
    assert deleted.status_code == 200
    assert hc.get("/api/webhooksubscriptions", headers=site.operator).json() == []
    again = hc.delete(f"/api/webhooksubscriptions/{created['_id']}", headers=site.operator)
    assert again.status_code == 404


def test_every_subscription_change_is_an_event(hc, hooks, site):
    created = subscribe(hc, site, "http://127.0.0.1:9/a")
    sid = created["_id"]
    hc.put(f"/api/webhooksubscriptions/{sid}", headers=site.operator, json={"events": ["message.created"]})
    hc.put(f"/api/webhooksubscriptions/{sid}", headers=site.operator, json={"active": False})
    hc.put(f"/api/webhooksubscriptions/{sid}", headers=site.operator, json={"active": True})
    hc.delete(f"/api/webhooksubscriptions/{sid}", headers=site.operator)
    store = hooks.store()
    try:
        history = [type(r.event) for r in store.load(uuid.UUID(sid))]
    finally:
        store.close()
    assert history == [ev.WebhookSubscribed, ev.WebhookUpdated, ev.WebhookDisabled, ev.WebhookEnabled,
                       ev.WebhookDeleted]


def test_only_an_operator_token_is_accepted(hc, site):
    sid = subscribe(hc, site, "http://127.0.0.1:9/a")["_id"]
    key = site.key()
    requests = [("GET", "/api/webhooksubscriptions", None),
                ("POST", "/api/webhooksubscriptions", {"websiteId": str(site.website_id), "url": "http://127.0.0.1:9/x"}),
                ("PUT", f"/api/webhooksubscriptions/{sid}", {"active": False}),
                ("DELETE", f"/api/webhooksubscriptions/{sid}", None),
                ("GET", f"/api/webhooksubscriptions/{sid}/deliveries", None),
                ("POST", f"/api/webhooksubscriptions/{sid}/recover", {"since": "2020-01-01T00:00:00Z"})]
    for method, path, body in requests:
        assert hc.request(method, path, headers=key, json=body).status_code == 403, (method, path)
        assert hc.request(method, path, json=body).status_code == 401, (method, path)
        assert hc.request(method, path, headers=token("not-a-token"), json=body).status_code == 401
        assert hc.request(method, path, headers=basic("not-a-key"), json=body).status_code == 401
    assert [s["_id"] for s in hc.get("/api/webhooksubscriptions", headers=site.operator).json()] == [sid]
    assert get_subscription(hc, site, sid)["active"] is True


def test_another_organizations_subscription_is_404(hc, hooks, site):
    theirs = subscribe(hc, site, "http://127.0.0.1:9/a")
    attacker = make_tenant(hooks)
    sid = theirs["_id"]
    assert hc.put(f"/api/webhooksubscriptions/{sid}", headers=attacker.operator, json={"active": False}).status_code == 404
    assert hc.delete(f"/api/webhooksubscriptions/{sid}", headers=attacker.operator).status_code == 404
    assert hc.get(f"/api/webhooksubscriptions/{sid}/deliveries", headers=attacker.operator).status_code == 404
    assert hc.post(f"/api/webhooksubscriptions/{sid}/recover", headers=attacker.operator,
                   json={"since": "2020-01-01T00:00:00Z"}).status_code == 404
    assert hc.get("/api/webhooksubscriptions", headers=attacker.operator).json() == []
    # nor can a subscription be made on another organization's website
    stolen = hc.post("/api/webhooksubscriptions", headers=attacker.operator,
                     json={"websiteId": str(site.website_id), "url": "http://127.0.0.1:9/x"})
    assert stolen.status_code == 404
    assert get_subscription(hc, site, sid)["active"] is True


@pytest.mark.parametrize("body, field", [
    ({"url": "http://127.0.0.1:9/a", "events": ["message.exploded"]}, "events"),
    ({"url": "http://127.0.0.1:9/a", "events": "message.created"}, "events"),
    ({"events": []}, None),
    ({"url": "ftp://127.0.0.1/a"}, "url"),
    ({"url": "not a url"}, "url"),
    ({"url": "http://127.0.0.1:9/a", "secret": "mine"}, None),  # the service makes the secret
])
def test_invalid_subscriptions_are_refused_and_nothing_is_stored(hc, site, body, field):
    response = hc.post("/api/webhooksubscriptions", headers=site.operator,
                       json={"websiteId": str(site.website_id), **body})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    if field:
        assert response.json().get("field") == field
    assert hc.get("/api/webhooksubscriptions", headers=site.operator).json() == []


def test_missing_website_is_refused(hc, site):
    response = hc.post("/api/webhooksubscriptions", headers=site.operator, json={"url": "http://127.0.0.1:9/a"})
    assert response.status_code == 400
    assert hc.get("/api/webhooksubscriptions", headers=site.operator).json() == []


@pytest.mark.parametrize("change, field", [
    ({"secret": "whsec_mine"}, "secret"),
    ({"websiteId": str(uuid.uuid4())}, "websiteId"),
    ({"events": ["customer.deleted"]}, "events"),
    ({"url": "gopher://127.0.0.1/"}, "url"),
    ({"url": "http://127.0.0.1:9/new", "secret": "whsec_mine"}, "secret"),
])
def test_immutable_or_invalid_changes_answer_400_and_change_nothing(hc, site, change, field):
    created = subscribe(hc, site, "http://127.0.0.1:9/a", ["customer.created"])
    response = hc.put(f"/api/webhooksubscriptions/{created['_id']}", headers=site.operator, json=change)
    assert response.status_code == 400, response.text
    assert response.json().get("field") == field
    now = get_subscription(hc, site, created["_id"])
    assert {k: now[k] for k in ("url", "events", "active", "websiteId")} == \
           {k: created[k] for k in ("url", "events", "active", "websiteId")}


# --- SSRF ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://example.com/hook",  # not https
    "https://user:pass@example.com/hook",  # user-info
    "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]/hook", "https://10.1.2.3/hook",
    "https://192.168.0.10/hook", "https://172.16.5.4/hook", "https://169.254.169.254/latest/meta-data",
    "https://[fd00:ec2::254]/hook", "https://0.0.0.0/hook", "https://100.64.0.1/hook",
    "https://[::ffff:127.0.0.1]/hook", "https://name.invalid/hook",
])
def test_private_and_unsafe_urls_are_refused(http, tenant, url):
    """The shared server runs without PARLEY_WEBHOOK_ALLOW_PRIVATE, as production does."""
    response = http.post("/api/webhooksubscriptions", headers=tenant.operator,
                         json={"websiteId": str(tenant.website_id), "url": url})
    assert response.status_code == 400, (url, response.text)
    assert response.json()["field"] == "url"
    assert http.get("/api/webhooksubscriptions", headers=tenant.operator).json() == []


def test_the_delivery_time_check_refuses_names_that_resolve_inside():
    """At delivery the name is resolved again and every address must be public; we then connect to it."""
    with pytest.raises(RefusedTarget):
        resolve_sync(parse_target("https://localhost:8443/x", allow_private=False), allow_private=False)
    target = parse_target("https://hooks.example.com/x", allow_private=False)
    with pytest.raises(RefusedTarget):  # a rebinding answer mixing a public and an internal address
        check_addresses(target, ["93.184.216.34", "10.0.0.7"], allow_private=False)
    assert check_addresses(target, ["93.184.216.34"], allow_private=False) == "93.184.216.34"


# --- delivery ------------------------------------------------------------------------------------------


def test_deliveries_are_signed_and_carry_the_resource_as_the_api_returns_it(hc, site):
    with Receiver() as receiver:
        sub = subscribe(hc, site, receiver.url)
        customer = create_customer(hc, site, email="ada@example.com", nickname="Ada")
        conversation = create_conversation(hc, site, customer)
        message = create_message(hc, site, conversation, "Hi there")
        received = receiver.wait_for(3)
    resources = {"customer.created": customer, "conversation.created": conversation, "message.created": message}

    def all_recorded():  # the log is written once the answers are back, after the receiver has the requests
        found = {d["_id"]: d for d in delivery_log(hc, site, sub["_id"])}
        return found if len(found) == 3 and all(d["status"] == "succeeded" for d in found.values()) else None

    log = eventually(all_recorded)
    positions = []
    for request in received:
        h = request.headers
        assert h["content-type"] == "application/json"
        event = h["x-service-event"]
        timestamp, signature, expected = expected_signature(sub["secret"], h, request.body)
        assert hmac.compare_digest(signature, expected)
        assert abs(time.time() - timestamp) < 300
        body = json.loads(request.body)
        assert set(body) == {"event", "timestamp", "data"} and body["event"] == event
        assert isinstance(body["timestamp"], int)
        created = resources[event]
        assert body["data"] == created  # the resource exactly as the API answered its creation
        assert log[h["x-service-delivery"]]["event"] == event
        assert log[h["x-service-delivery"]]["status"] == "succeeded"
        positions.append(int(h["x-service-position"]))
    assert [r.header("X-Service-Event") for r in sorted(received, key=lambda r: int(r.header("X-Service-Position")))] \
        == ["customer.created", "conversation.created", "message.created"]
    assert len(set(positions)) == 3
    assert sub["secret"] not in json.dumps(list(log.values()))


def test_a_reply_delivers_its_authors_display_name_never_their_email_address(hc, site):
    ada = site.add_operator("agent")
    assert hc.patch("/api/operators/me", headers=ada.headers, json={"displayName": "Ada"}).status_code == 200
    with Receiver() as receiver:
        subscribe(hc, site, receiver.url, ["message.created"])
        conversation = create_conversation(hc, site, create_customer(hc, site))
        answered = hc.post("/api/messages", headers=ada.headers, json={
            "conversationId": conversation["_id"], "content": "Hello", "from": "operator"})
        assert answered.status_code == 200, answered.text
        [delivered] = receiver.wait_for(1)
    data = json.loads(delivered.body)["data"]
    assert data == answered.json()
    assert data["from"] == "operator"
    assert data["operator"]["operatorId"] == str(ada.id) and data["operator"]["displayName"] == "Ada"
    assert ada.email.encode() not in delivered.body


def test_an_edit_and_a_deletion_are_delivered_without_the_original_and_never_for_a_note(hc, site):
    with Receiver() as receiver:
        subscribe(hc, site, receiver.url, ["message.updated", "message.deleted"])
        conversation = create_conversation(hc, site, create_customer(hc, site))
        note = create_message(hc, site, conversation, "note: the original", internal=True)
        reply = create_message(hc, site, conversation, "the original reply")
        assert hc.patch(f"/api/messages/{note['_id']}", headers=site.operator,
                        json={"content": "note edited"}).status_code == 200
        assert hc.patch(f"/api/messages/{reply['_id']}", headers=site.operator,
                        json={"content": "the *edited* reply"}).status_code == 200
        assert hc.delete(f"/api/messages/{reply['_id']}", headers=site.operator).status_code == 200
        updated, deleted = receiver.wait_for(2)  # the note's edit, had it been delivered, came first
    bodies = [json.loads(r.body) for r in (updated, deleted)]
    assert sorted(b["event"] for b in bodies) == ["message.deleted", "message.updated"]
    by_name = {b["event"]: b["data"] for b in bodies}
    assert by_name["message.updated"]["_id"] == reply["_id"]
    assert (by_name["message.updated"]["content"], by_name["message.updated"]["contentHtml"]) == (
        "the *edited* reply", "<p>the <em>edited</em> reply</p>")
    assert by_name["message.deleted"] == {**by_name["message.deleted"], "_id": reply["_id"], "content": "",
                                          "deleted": True}
    assert b"original" not in updated.body + deleted.body and b"note" not in updated.body + deleted.body


def test_events_filter_and_website_scope(hc, site):
    other_website, _ = site.add_website()
    with Receiver() as only_customers, Receiver() as everything, Receiver() as other_site:
        subscribe(hc, site, only_customers.url, ["customer.created"])
        subscribe(hc, site, everything.url, [])
        subscribe(hc, site, other_site.url, [], website=other_website)
        customer = create_customer(hc, site)
        create_message(hc, site, create_conversation(hc, site, customer))
        marker = create_customer(hc, site, website=other_website)
        everything.wait_for(3)
        [first] = other_site.wait_for(1)
        assert json.loads(first.body)["data"]["_id"] == marker["_id"]
        create_customer(hc, site)
        only_customers.wait_for(2)
        assert only_customers.events() == ["customer.created", "customer.created"]
        assert sorted(everything.events()[:3]) == sorted(EVENT_NAMES)
        assert other_site.events() == ["customer.created"]


def test_internal_notes_and_operator_only_conversations_are_never_delivered(hc, site):
    with Receiver() as receiver:
        subscribe(hc, site, receiver.url)
        customer = create_customer(hc, site)
        private = create_conversation(hc, site, customer, operator_only=True)
        create_message(hc, site, private, "between operators")
        public = create_conversation(hc, site, customer)
        create_message(hc, site, public, "a note", internal=True)
        marker = create_message(hc, site, public, "visible")
        received = receiver.wait_for(3)
        create_customer(hc, site)
        receiver.wait_for(4)
    assert [r.header("X-Service-Event") for r in received] == ["customer.created", "conversation.created",
                                                               "message.created"]
    assert json.loads(received[1].body)["data"]["_id"] == public["_id"]
    assert json.loads(received[2].body)["data"]["_id"] == marker["_id"]
    assert all(b"between operators" not in r.body and b"a note" not in r.body for r in receiver.requests)


def test_subscription_changes_apply_from_the_next_event(hc, hooks, site):
    """The outbox projection keeps the subscriptions in memory: every change must reach it at once."""
    sid = subscribe(hc, site, "http://127.0.0.1:9/a", ["customer.created"])["_id"]

    def recorded_after(change: dict | None) -> int:
        """Applies the change, creates a customer, and counts the subscription's recorded deliveries."""
        if change == {"delete": True}:
            assert hc.delete(f"/api/webhooksubscriptions/{sid}", headers=site.operator).status_code == 200
        elif change is not None:
            assert hc.put(f"/api/webhooksubscriptions/{sid}", headers=site.operator, json=change).status_code == 200
        response = hc.post("/api/customers", headers=site.operator, json={"websiteId": str(site.website_id)})
        hooks.wait_projected(int(response.headers["Parley-Position"]), "webhooks")
        with psycopg.connect(hooks.database_url) as conn:
            return conn.execute("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = %s",
                                (uuid.UUID(sid),)).fetchone()[0]

    assert recorded_after(None) == 1
    assert recorded_after({"events": ["message.created"]}) == 1
    assert recorded_after({"events": []}) == 2
    assert recorded_after({"active": False}) == 2
    assert recorded_after({"active": True}) == 3
    assert recorded_after({"delete": True}) == 3


FAIL_THEN_OK = {
    "500": Answer(500, body=b"boom"),
    "503": Answer(503),
    "408": Answer(408),
    "429": Answer(429, headers={"Retry-After": "1"}),
}


@pytest.mark.parametrize("kind", [*FAIL_THEN_OK, "timeout"])
def test_retryable_failures_are_retried_with_the_same_delivery_id(hc, site, kind):
    release = threading.Event()
    first = FAIL_THEN_OK.get(kind) or Answer(200, hold=release)
    with Receiver(lambda n: first if n == 0 else Answer()) as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        failed, succeeded = receiver.wait_for(2)
        release.set()
    assert failed.body == succeeded.body
    assert failed.header("X-Service-Delivery") == succeeded.header("X-Service-Delivery")
    [delivery] = eventually(lambda: [d for d in delivery_log(hc, site, sub["_id"]) if d["status"] == "succeeded"])
    first_attempt, second_attempt = delivery["attempts"]
    assert first_attempt["nextRetryTime"] is not None and second_attempt["nextRetryTime"] is None
    if kind == "timeout":
        assert first_attempt["responseStatus"] is None and "timed out" in first_attempt["error"]
    else:
        assert first_attempt["responseStatus"] == int(kind)
    if kind == "429":  # Retry-After is honoured
        waited = (datetime.fromisoformat(first_attempt["nextRetryTime"])
                  - datetime.fromisoformat(first_attempt["at"])).total_seconds()
        assert waited >= 1
    if kind == "500":
        assert first_attempt["responseBody"] == "boom"
    assert get_subscription(hc, site, sub["_id"])["consecutiveFailures"] == 0  # the success reset the count


def test_connection_errors_are_retried(hc, site):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    sub = subscribe(hc, site, f"http://127.0.0.1:{port}/hook")
    create_customer(hc, site)
    [delivery] = eventually(lambda: [d for d in delivery_log(hc, site, sub["_id"]) if len(d["attempts"]) >= 3])
    assert delivery["status"] == "pending"
    assert all(a["responseStatus"] is None and "Connect" in a["error"] for a in delivery["attempts"])
    hc.delete(f"/api/webhooksubscriptions/{sub['_id']}", headers=site.operator)


@pytest.mark.parametrize("answer", [
    Answer(400), Answer(401), Answer(404), Answer(410), Answer(422),
    Answer(301, headers={"Location": "http://127.0.0.1:9/elsewhere"}),
    Answer(307, headers={"Location": "http://127.0.0.1:9/elsewhere"}),
], ids=lambda a: str(a.status))
def test_other_answers_and_redirects_fail_without_retry(hc, site, answer):
    with Receiver(lambda n: answer) as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        receiver.wait_for(1)
        [delivery] = eventually(lambda: [d for d in delivery_log(hc, site, sub["_id"]) if d["status"] == "failed"])
    assert len(delivery["attempts"]) == 1 and delivery["nextRetryTime"] is None
    assert delivery["attempts"][0]["responseStatus"] == answer.status
    assert delivery["attempts"][0]["nextRetryTime"] is None
    assert len(receiver.requests) == 1
    assert get_subscription(hc, site, sub["_id"])["consecutiveFailures"] == 1


def test_twenty_failures_in_a_row_disable_and_put_active_reenables(hc, hooks, site):
    healthy = threading.Event()
    since = datetime.now(timezone.utc).isoformat()
    with Receiver(lambda n: Answer(200) if healthy.is_set() else Answer(500)) as receiver:
        sub = subscribe(hc, site, receiver.url)
        sid = sub["_id"]
        create_customer(hc, site)
        receiver.wait_for(FAILURE_LIMIT)
        disabled = eventually(lambda: [s for s in [get_subscription(hc, site, sid)] if not s["active"]])[0]
        assert f"{FAILURE_LIMIT} failed deliveries in a row" in disabled["disabledReason"]
        store = hooks.store()
        try:
            [disabling] = [r.event for r in store.load(uuid.UUID(sid)) if isinstance(r.event, ev.WebhookDisabled)]
        finally:
            store.close()
        assert "HTTP 500" in disabling.reason
        # the pending retry is stopped, not lost
        [stopped] = eventually(lambda: [d for d in delivery_log(hc, site, sid) if d["status"] == "stopped"])
        assert len(stopped["attempts"]) == FAILURE_LIMIT
        attempts_when_disabled = len(receiver.requests)

        # no new deliveries while disabled
        response = hc.post("/api/customers", headers=site.operator, json={"websiteId": str(site.website_id)})
        hooks.wait_projected(int(response.headers["Parley-Position"]), "webhooks")
        assert [d["_id"] for d in delivery_log(hc, site, sid)] == [stopped["_id"]]
        assert hc.post(f"/api/webhooksubscriptions/{sid}/deliveries/{stopped['_id']}/retry",
                       headers=site.operator).status_code == 409

        healthy.set()
        enabled = hc.put(f"/api/webhooksubscriptions/{sid}", headers=site.operator, json={"active": True})
        assert enabled.status_code == 200
        assert enabled.json()["active"] is True and enabled.json()["consecutiveFailures"] == 0
        assert enabled.json()["disabledReason"] is None
        recovered = hc.post(f"/api/webhooksubscriptions/{sid}/recover", headers=site.operator, json={"since": since})
        assert recovered.status_code == 200 and recovered.json() == {"redelivering": 1}
        redelivered = receiver.wait_for(attempts_when_disabled + 1)[-1]
        assert redelivered.header("X-Service-Delivery") == stopped["_id"]
        eventually(lambda: delivery_log(hc, site, sid)[0]["status"] == "succeeded")
        # deliveries resume for new events
        create_customer(hc, site)
        receiver.wait_for(attempts_when_disabled + 2)


def test_the_log_keeps_only_the_start_of_a_large_answer(hc, site):
    with Receiver(lambda n: Answer(200, body=b"x" * 200_000)) as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        receiver.wait_for(1)
        [delivery] = eventually(lambda: [d for d in delivery_log(hc, site, sub["_id"]) if d["status"] == "succeeded"])
    assert delivery["attempts"][0]["responseBody"] == "x" * 1024


def test_a_delivery_can_be_redelivered_from_the_log(hc, site):
    with Receiver() as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        [original] = receiver.wait_for(1)
        [delivery] = eventually(lambda: [d for d in delivery_log(hc, site, sub["_id"]) if d["status"] == "succeeded"])
        response = hc.post(f"/api/webhooksubscriptions/{sub['_id']}/deliveries/{delivery['_id']}/retry",
                           headers=site.operator)
        assert response.status_code == 200 and response.json()["_id"] == delivery["_id"]
        again = receiver.wait_for(2)[1]
    assert again.header("X-Service-Delivery") == original.header("X-Service-Delivery")
    assert again.body == original.body
    missing = hc.post(f"/api/webhooksubscriptions/{sub['_id']}/deliveries/{uuid.uuid4()}/retry", headers=site.operator)
    assert missing.status_code == 404
    bad = hc.post(f"/api/webhooksubscriptions/{sub['_id']}/recover", headers=site.operator, json={"since": "yesterday"})
    assert bad.status_code == 400


def test_a_slow_endpoint_never_delays_the_others(hc, site):
    release = threading.Event()
    with Receiver(lambda n: Answer(200, hold=release)) as slow, Receiver() as fast:
        subscribe(hc, site, slow.url)
        subscribe(hc, site, fast.url)
        for _ in range(12):
            create_customer(hc, site)
        fast.wait_for(12)  # all of them, while the slow endpoint still holds its first requests
        assert len(slow.requests) <= 4  # PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY's default
        release.set()
        slow.wait_for(12)


def test_the_process_wide_limit_holds_and_its_freed_slots_are_used(infra, tmp_path):
    """With two deliveries in flight per process, an endpoint that holds its answers never has more than
    two open, and the others go out as soon as slots free."""
    # held answers stay in flight until released (not timed out and retried, which makes the counts move)
    server = make_server(infra, tmp_path, **{**HOOK_ENV, "PARLEY_WEBHOOK_TIMEOUT_SECONDS": "60"},
                         PARLEY_WEBHOOK_CONCURRENCY="2").start()
    release = threading.Event()
    try:
        tenant = make_tenant(server)
        with Receiver(lambda n: Answer(200, hold=release)) as held, server.client() as client:
            sid = subscribe(client, tenant, held.url)["_id"]
            for _ in range(6):
                create_customer(client, tenant)

            def leased_and_due():  # the claimed (in flight) and the waiting deliveries
                with psycopg.connect(server.database_url) as conn:
                    return conn.execute(
                        "SELECT count(*) FILTER (WHERE next_attempt_at > now()), "
                        "count(*) FILTER (WHERE next_attempt_at <= now()) FROM webhook_deliveries "
                        "WHERE subscription_id = %s AND status = 'pending'", (uuid.UUID(sid),)).fetchone()

            eventually(lambda: leased_and_due() == (2, 4))  # the six are recorded, and two claimed
            assert len(held.wait_for(2)) == 2 and held.most_held == 2
            release.set()
            received = held.wait_for(6)
        assert held.most_held == 2
        assert len({r.header("X-Service-Delivery") for r in received}) == 6
    finally:
        release.set()
        server.stop()


def test_a_held_endpoints_backlog_never_fills_the_claims(infra, tmp_path):
    """An endpoint with all its slots in flight is left out of the claims: its backlog, older than anything
    else due, does not fill the window of due deliveries a claim looks at (four per free slot), so another
    endpoint's deliveries still go out while it waits."""
    server = make_server(infra, tmp_path, **{**HOOK_ENV, "PARLEY_WEBHOOK_TIMEOUT_SECONDS": "60"},
                         PARLEY_WEBHOOK_CONCURRENCY="6").start()
    release = threading.Event()
    try:
        tenant = make_tenant(server)
        with Receiver(lambda n: Answer(200, hold=release)) as held, Receiver() as fast, \
                server.client() as client:
            subscribe(client, tenant, held.url)
            for _ in range(30):
                create_customer(client, tenant)
            held.wait_for(4)  # its four slots taken; 26 deliveries wait, due before any of the next
            subscribe(client, tenant, fast.url)
            for _ in range(3):
                create_customer(client, tenant)
            fast.wait_for(3)
            assert held.most_held == 4
            release.set()
            assert len({r.header("X-Service-Delivery") for r in held.wait_for(33)}) == 33
    finally:
        release.set()
        server.stop()


def test_delivery_log_pages_by_cursor(hc, site):
    with Receiver() as receiver:
        sub = subscribe(hc, site, receiver.url, ["customer.created"])
        for _ in range(5):
            create_customer(hc, site)
        receiver.wait_for(5)
    items = delivery_log(hc, site, sub["_id"])  # pages of two
    assert len(items) == 5 and [d["_id"] for d in items] == sorted(d["_id"] for d in items)
    positions = [d["position"] for d in items]
    assert positions == sorted(positions)
    bad = hc.get(f"/api/webhooksubscriptions/{sub['_id']}/deliveries", headers=site.operator,
                 params={"cursor": "!!"})
    assert bad.status_code == 400


def test_rebuilding_the_webhook_read_model_redelivers_nothing(hc, hooks, site):
    with Receiver() as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        create_customer(hc, site)
        receiver.wait_for(2)
        def all_succeeded():
            log = delivery_log(hc, site, sub["_id"])
            return log if all(d["status"] == "succeeded" for d in log) else None

        before = eventually(all_succeeded)
        store = hooks.store()
        try:
            asyncio.run(rebuild(hooks.database_url, WebhookProjection(), store))
        finally:
            store.close()
        assert [(d["_id"], d["status"]) for d in delivery_log(hc, site, sub["_id"])] == \
               [(d["_id"], d["status"]) for d in before]
        rebuilt = get_subscription(hc, site, sub["_id"])
        assert rebuilt["active"] and rebuilt["url"] == receiver.url
        create_customer(hc, site)
        receiver.wait_for(3)
        assert len(delivery_log(hc, site, sub["_id"])) == 3
        assert len({r.header("X-Service-Delivery") for r in receiver.requests}) == len(receiver.requests) == 3


def test_production_retries_span_more_than_a_day():
    settings = narrowed(Settings(), WebhookSettings)
    elapsed, attempt = 0.0, 1
    while True:
        delay = retry_delay(settings, attempt)
        if elapsed + delay > settings.webhook_retry_window_seconds:
            break
        elapsed += delay
        attempt += 1
    assert elapsed >= 24 * 3600
    assert settings.webhook_timeout_seconds == 10
    assert retry_delay(settings, 1, retry_after=600) >= 600


# --- the receiver example --------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "verify_webhook.py"


def load_example():
    spec = importlib.util.spec_from_file_location("verify_webhook", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_receiver_accepts_a_real_delivery_and_rejects_replays_and_tampering(hc, site, tmp_path):
    example = load_example()
    with Receiver() as receiver:
        sub = subscribe(hc, site, receiver.url)
        create_customer(hc, site)
        [delivery] = receiver.wait_for(1)
    signature = delivery.header("X-Service-Signature")
    assert example.verify(sub["secret"], signature, delivery.body)["event"] == "customer.created"
    for secret, body, now in [("whsec_wrong", delivery.body, None),
                              (sub["secret"], delivery.body.replace(b"customer", b"kustomer"), None),
                              (sub["secret"], delivery.body, time.time() + example.TOLERANCE_SECONDS + 60)]:
        with pytest.raises(example.Rejected):
            example.verify(secret, signature, body, now)

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(EXAMPLE), "--port", str(port)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PARLEY_WEBHOOK_SECRET": sub["secret"]})
    try:
        assert process.stdout.readline().startswith("listening on")
        headers = {k: v for k, v in delivery.headers.items() if k.startswith("x-service-") or k == "content-type"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            tampered = client.post("/hook", content=delivery.body.replace(b"customer", b"kustomer"), headers=headers)
            assert tampered.status_code == 400 and "signature mismatch" in tampered.text
            assert client.post("/hook", content=delivery.body, headers=headers).status_code == 200
            assert "accepted customer.created" in process.stdout.readline()
            replayed = client.post("/hook", content=delivery.body, headers=headers)
            assert replayed.status_code == 400 and "replayed" in replayed.text
    finally:
        process.terminate()
        process.wait(10)


def test_an_empty_list_means_the_events_known_when_made_and_star_every_event_now_and_later(hooks, hc, site):
    """docs/decisions.md: a subscription made with `events: []` before the workflow's events existed keeps
    getting the three it meant then; one made now gets every event there is now; `"*"` gets every event,
    those added later included."""
    workflow = ["conversation.assigned", "conversation.labeled", "conversation.resolved", "conversation.reopened"]
    with Receiver() as old, Receiver() as empty_now, Receiver() as star, Receiver() as assigned_only:
        store = hooks.store()
        try:
            old_id = uuid.uuid4()
            position = store.append(Pending(old_id, 1, ev.WebhookSubscribed(  # as recorded by an earlier version
                org_id=site.org_id, at=datetime.now(timezone.utc), subscription_id=old_id, website_id=site.website_id,
                url=old.url, events=[], secret=hooks.sealer.seal("whsec_" + "0" * 64))))
        finally:
            store.close()
        hooks.wait_projected(position, "webhooks")
        assert get_subscription(hc, site, str(old_id))["events"] == []
        assert subscribe(hc, site, empty_now.url, [])["events"] == []
        assert subscribe(hc, site, star.url, ["*"])["events"] == ["*"]
        subscribe(hc, site, assigned_only.url, ["conversation.assigned"])
        customer = create_customer(hc, site)
        conversation = create_conversation(hc, site, customer)
        label = hc.post("/api/labels", headers=site.operator, json={"name": f"l-{uuid.uuid4().hex[:6]}"}).json()
        me = hc.get("/api/operators/me", headers=site.operator).json()["_id"]
        for change in ({"assigneeId": me}, {"labels": [label["name"]]}, {"resolved": True}, {"resolved": False}):
            response = hc.patch(f"/api/conversations/{conversation['_id']}", headers=site.operator, json=change)
            assert response.status_code == 200, response.text
        everything = ["customer.created", "conversation.created", *workflow]
        for receiver in (star, empty_now):
            receiver.wait_for(len(everything))
            assert sorted(receiver.events()) == sorted(everything)
        [assigned] = assigned_only.wait_for(1)
        data = json.loads(assigned.body)["data"]
        assert (data["conversationId"], data["websiteId"], data["assigneeId"]) == (
            conversation["_id"], str(site.website_id), me)
        labeled = next(json.loads(r.body) for r in star.requests if r.header("X-Service-Event") == "conversation.labeled")
        assert labeled["data"]["added"] == [{"_id": label["_id"], "name": label["name"]}]
        old.wait_for(2)
        time.sleep(1)  # the workflow's deliveries went out to the others already: none is coming here
        assert sorted(old.events()) == ["conversation.created", "customer.created"]
        assert assigned_only.events() == ["conversation.assigned"]


def test_star_is_a_known_event_name_and_others_are_refused(hc, site):
    refused = hc.post("/api/webhooksubscriptions", headers=site.operator, json={
        "websiteId": str(site.website_id), "url": "http://127.0.0.1:9/hook", "events": ["conversation.snoozed"]})
    assert refused.status_code == 400 and refused.json()["field"] == "events"
