"""Business hours over the API (validation stores nothing bad), the away reply posted once per conversation,
and the visitor's unverified e-mail address, which never identifies or merges anyone."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from commands.hours import post_away_reply
from tests.support.visitors import Chatting, sign, start_session

ALWAYS_CLOSED = {"timezone": "Europe/Paris", "weekly": {}, "holidays": [], "awayMessage": "We're away: back at 9."}


def hours_url(tenant) -> str:
    return f"/api/websites/{tenant.website_name}/hours"


def messages(http, tenant, conversation_id: str) -> list[dict]:
    response = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id})
    assert response.status_code == 200, response.text
    return response.json()


def away_replies(http, tenant, conversation_id: str) -> list[dict]:
    return [m for m in messages(http, tenant, conversation_id) if m["author"] == "away"]


def test_hours_are_read_by_operators_set_by_admins_and_refused_whole_when_bad(http, tenant, other_tenant):
    default = http.get(hours_url(tenant), headers=tenant.operator)
    assert default.status_code == 200
    assert default.json()["weekly"]["sun"] == [["00:00", "24:00"]] and default.json()["awayMessage"] is None
    body = {"timezone": "America/New_York", "weekly": {"mon": [["09:00", "17:00"]], "fri": [["22:00", "02:00"]]},
            "holidays": ["2026-12-25"], "awayMessage": "Back soon"}
    stored = http.put(hours_url(tenant), headers=tenant.operator, json=body)
    assert stored.status_code == 200, stored.text
    assert stored.json() == body
    for bad in ({**body, "timezone": "Nowhere/Special"}, {**body, "weekly": {"mon": [["9", "17"]]}},
                {**body, "weekly": {"funday": [["09:00", "17:00"]]}}, {**body, "holidays": ["2026-13-01"]},
                {**body, "weekly": {"mon": [["09:00"]]}}, {**body, "extra": 1}):
        refused = http.put(hours_url(tenant), headers=tenant.operator, json=bad)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    assert http.get(hours_url(tenant), headers=tenant.operator).json() == body
    agent = tenant.add_operator("agent")
    assert http.get(hours_url(tenant), headers=agent.headers).json() == body
    assert http.put(hours_url(tenant), headers=agent.headers, json=ALWAYS_CLOSED).status_code == 403
    assert http.get(hours_url(tenant), headers=other_tenant.operator).status_code == 404
    assert http.put(hours_url(tenant), headers=other_tenant.operator, json=ALWAYS_CLOSED).status_code == 404
    assert http.get(hours_url(tenant), headers=tenant.operator).json() == body


def test_a_visitor_writing_outside_the_hours_gets_the_away_reply_once(http, tenant, server):
    assert http.put(hours_url(tenant), headers=tenant.operator, json=ALWAYS_CLOSED).status_code == 200
    chat = Chatting(http, tenant)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(chat.say, [f"hello {n}" for n in range(4)]))
    deadline = time.monotonic() + 20
    while not away_replies(http, tenant, chat.conversation_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    chat.say("anyone?")
    time.sleep(1.0)
    [reply] = away_replies(http, tenant, chat.conversation_id)
    assert reply["content"] == "We're away: back at 9." and reply["from"] == "operator"
    # what a second worker, or this one after a kill, would do: the store refuses a second one
    store = server.store()
    try:
        assert post_away_reply(store, tenant.org_id, tenant.website_id, uuid.UUID(chat.conversation_id), "again") is None
    finally:
        store.close()
    assert len(away_replies(http, tenant, chat.conversation_id)) == 1
    visible = http.get("/api/chat/messages", headers=chat.headers, params={"conversationId": chat.conversation_id})
    assert [m["content"] for m in visible.json()].count("We're away: back at 9.") == 1


def test_no_away_reply_while_open_or_without_an_away_message(http, tenant):
    always_open = {"timezone": "UTC", "weekly": {d: [["00:00", "24:00"]] for d in
                                                 ("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
                   "awayMessage": "never shown"}
    assert http.put(hours_url(tenant), headers=tenant.operator, json=always_open).status_code == 200
    open_chat = Chatting(http, tenant)
    open_chat.say("hello")
    assert http.put(hours_url(tenant), headers=tenant.operator, json={**ALWAYS_CLOSED, "awayMessage": None}).status_code == 200
    closed_chat = Chatting(http, tenant)
    closed_chat.say("hello")
    time.sleep(2.0)
    assert away_replies(http, tenant, open_chat.conversation_id) == []
    assert away_replies(http, tenant, closed_chat.conversation_id) == []


def test_an_unsigned_email_is_stored_as_unverified_and_never_identifies_or_merges(http, tenant):
    address = f"visitor-{uuid.uuid4().hex[:8]}@example.com"
    chat = Chatting(http, tenant)
    profile = http.put("/api/chat/profile", headers=chat.headers, json={"email": address})
    assert profile.status_code == 200, profile.text
    assert profile.json()["unverifiedEmail"] == address and profile.json()["email"] is None
    for bad in ({"email": "not an address"}, {"email": "x" * 300 + "@example.com"}):
        assert http.put("/api/chat/profile", headers=chat.headers, json=bad).status_code == 400
    assert http.get("/api/chat/profile", headers=chat.headers).json()["unverifiedEmail"] == address
    customer = http.get(f"/api/customers/{chat.visitor.customer_id}", headers=tenant.operator).json()
    assert customer["unverifiedEmail"] == address and customer["email"] is None
    assert http.get("/api/customers", headers=tenant.operator, params={"email": address}).json() == []
    # a session the website's server signs for that address is someone else: nothing found, nothing merged
    signed = start_session(http, tenant.website_id, email=address, emailSignature=sign(tenant.identity_secret, address))
    assert signed.customer_id != chat.visitor.customer_id
    # and an unsigned claim of the address opens no one's session either
    fresh = start_session(http, tenant.website_id)
    assert http.put("/api/chat/profile", headers=fresh.headers, json={"email": address}).status_code == 200
    assert fresh.customer_id not in (chat.visitor.customer_id, signed.customer_id)
    assert http.get(f"/api/customers/{chat.visitor.customer_id}", headers=tenant.operator).json()["email"] is None
    signed_profile = http.get("/api/chat/profile", headers=signed.headers).json()
    assert signed_profile["email"] == address and signed_profile["unverifiedEmail"] is None
