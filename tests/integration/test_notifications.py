"""The notification centre: notifications made from the facts (a visitor's new conversation and messages, a
mention in a note, the agent's hand-off, a webhook endpoint disabled), once per recipient and kind, read and
unread, and each operator's channels per kind."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone

import httpx

from commands import agent as agent_commands
from commands import webhooks as webhook_commands
from events import types as ev
from events.ids import new_id
from events.store import Pending
from projections.notifications import NotificationsProjection
from projections.runner import rebuild
from tests.support.visitors import Chatting, EventStream

PASSWORD = "correct horse"


def notifications(http: httpx.Client, headers: dict, **params) -> dict:
    response = http.get("/api/notifications", headers=headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def kinds(page: dict) -> list[str]:
    return [item["kind"] for item in page["items"]]


def reply(http: httpx.Client, headers: dict, conversation_id: str, content: str, internal: bool = False) -> dict:
    response = http.post("/api/messages", headers=headers, json={
        "conversationId": conversation_id, "content": content, "from": "operator", "internal": internal})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_visitors_conversation_and_messages_notify_the_team_and_whoever_replied(http, tenant):
    colleague = tenant.add_operator("agent")
    chat = Chatting(http, tenant)
    chat.say("hello, anyone?")
    for headers in (tenant.operator, colleague.headers):
        page = notifications(http, headers)
        assert kinds(page) == ["conversation.new"], page
        assert page["unread"] == 1
        item = page["items"][0]
        assert item["conversationId"] == chat.conversation_id and item["read"] is False
        assert item["text"] == f"New conversation on {tenant.website_name}"
    reply(http, tenant.operator, chat.conversation_id, "Hi! How can I help?")
    chat.say("my <b>order</b> is late")
    mine = notifications(http, tenant.operator)
    assert kinds(mine) == ["message.new", "conversation.new"]
    assert mine["items"][0]["text"] == f"New message on {tenant.website_name}: my <b>order</b> is late"
    assert kinds(notifications(http, colleague.headers)) == ["conversation.new"]  # never replied there


def test_a_mention_in_a_note_notifies_the_operator_named_without_the_notes_words(http, tenant):
    colleague = tenant.add_operator("agent")
    assert http.patch("/api/operators/me", headers=colleague.headers, json={"displayName": "Bo Lee"}).status_code == 200
    other = tenant.add_operator("agent")
    chat = Chatting(http, tenant)
    reply(http, tenant.operator, chat.conversation_id, "@Bo Lee the secret refund code is 1234", internal=True)
    reply(http, tenant.operator, chat.conversation_id, "@" + other.email.split("@")[0] + ", also you", internal=True)
    reply(http, tenant.operator, chat.conversation_id, "@Bo Leeway is nobody", internal=True)
    bo = [item for item in notifications(http, colleague.headers)["items"] if item["kind"] == "mention"]
    assert len(bo) == 1
    assert "refund" not in bo[0]["text"] and "1234" not in bo[0]["text"]
    assert bo[0]["text"].endswith(f"mentioned you in a note on {tenant.website_name}")
    assert [i["kind"] for i in notifications(http, other.headers)["items"]].count("mention") == 1
    assert "mention" not in kinds(notifications(http, tenant.operator))  # the author


def test_marking_read_by_ids_and_all_and_refusing_what_is_not_yours(http, tenant, other_tenant):
    colleague = tenant.add_operator("agent")
    for _ in range(3):
        Chatting(http, tenant)
    page = notifications(http, tenant.operator)
    assert page["unread"] == 3
    theirs = notifications(http, colleague.headers)["items"][0]["_id"]
    strangers = notifications(http, other_tenant.operator)
    for body in ({"ids": [theirs]}, {"ids": [page["items"][0]["_id"], str(uuid.uuid4())]}):
        refused = http.post("/api/notifications/read", headers=tenant.operator, json=body)
        assert refused.status_code == 404 and refused.headers["content-type"] == "application/problem+json"
    for body in ({}, {"ids": []}, {"ids": [page["items"][0]["_id"]], "all": True}, {"all": False}):
        refused = http.post("/api/notifications/read", headers=tenant.operator, json=body)
        assert refused.status_code == 400, (body, refused.text)
    assert notifications(http, tenant.operator)["unread"] == 3
    assert notifications(http, colleague.headers)["unread"] == 3
    marked = http.post("/api/notifications/read", headers=tenant.operator, json={"ids": [page["items"][1]["_id"]]})
    assert marked.status_code == 200 and marked.json() == {"unread": 2}
    after = notifications(http, tenant.operator)
    assert [item["read"] for item in after["items"]] == [False, True, False]
    assert notifications(http, tenant.operator, unread="true")["unread"] == 2
    assert len(notifications(http, tenant.operator, unread="true")["items"]) == 2
    assert http.post("/api/notifications/read", headers=tenant.operator, json={"all": True}).json() == {"unread": 0}
    assert notifications(http, colleague.headers)["unread"] == 3  # each operator's own
    assert notifications(http, other_tenant.operator) == strangers
    first = notifications(http, tenant.operator, limit=2)
    assert len(first["items"]) == 2 and first["nextCursor"]
    second = notifications(http, tenant.operator, limit=2, cursor=first["nextCursor"])
    assert len(second["items"]) == 1 and second["nextCursor"] is None
    assert http.get("/api/notifications", headers=tenant.operator, params={"cursor": "nonsense"}).status_code == 400
    assert http.get("/api/notifications", headers=tenant.key()).status_code in (401, 403)


def test_preferences_per_kind_and_channel_with_the_dashboard_channel_deciding_what_is_made(http, tenant):
    colleague = tenant.add_operator("agent")
    defaults = http.get("/api/operators/me/notifications", headers=colleague.headers)
    assert defaults.status_code == 200
    assert set(defaults.json()) == set(ev.NOTIFICATION_KINDS)
    assert defaults.json()["mention"] == {"dashboard": True, "desktop": True, "email": True}
    assert defaults.json()["message.new"] == {"dashboard": True, "desktop": True, "email": False}
    for bad in ({"chat.new": {"dashboard": True, "desktop": True, "email": True}},
                {"mention": {"dashboard": "yes", "desktop": True, "email": True}}, {"mention": {"dashboard": True}}):
        refused = http.put("/api/operators/me/notifications", headers=colleague.headers, json=bad)
        assert refused.status_code == 400, refused.text
    assert http.get("/api/operators/me/notifications", headers=colleague.headers).json() == defaults.json()
    changed = http.put("/api/operators/me/notifications", headers=colleague.headers,
                       json={"conversation.new": {"dashboard": False, "desktop": False, "email": False}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["conversation.new"] == {"dashboard": False, "desktop": False, "email": False}
    assert changed.json()["mention"] == defaults.json()["mention"]
    assert http.get("/api/operators/me/notifications", headers=tenant.operator).json() == defaults.json()
    Chatting(http, tenant)
    assert kinds(notifications(http, colleague.headers)) == []
    assert kinds(notifications(http, tenant.operator)) == ["conversation.new"]


def test_the_agents_handoff_and_a_disabled_endpoint_notify_with_their_rules(http, tenant, server):
    agent = tenant.add_operator("agent")
    admin = tenant.add_operator("admin")
    chat = Chatting(http, tenant)
    store = server.store()
    try:
        agent_commands.pause(store, tenant.org_id, uuid.UUID(chat.conversation_id), "handoff")
        subscription = new_id()
        store.append(Pending(subscription, 1, ev.WebhookSubscribed(
            org_id=tenant.org_id, at=datetime.now(timezone.utc), subscription_id=subscription,
            website_id=tenant.website_id, url="https://hooks.example/x", events=[], secret="s")))
        position = webhook_commands.disable_after_failures(store, tenant.org_id, subscription, "failing for 24 hours")
    finally:
        store.close()
    server.wait_projected(position, "notifications")
    for who, expected in ((tenant.operator, ["webhook.disabled", "handoff", "conversation.new"]),
                          (admin.headers, ["webhook.disabled", "handoff", "conversation.new"]),
                          (agent.headers, ["handoff", "conversation.new"])):
        assert kinds(notifications(http, who)) == expected
    disabled = notifications(http, admin.headers)["items"][0]
    assert disabled["text"] == f"A webhook endpoint of {tenant.website_name} was disabled: failing for 24 hours"
    assert "conversationId" not in disabled


def test_a_rebuild_makes_the_same_notifications_once_with_what_was_read(http, tenant, server):
    chat = Chatting(http, tenant)
    reply(http, tenant.operator, chat.conversation_id, "hello")
    for text in ("one", "two"):
        chat.say(text)
    before = notifications(http, tenant.operator)
    marked = http.post("/api/notifications/read", headers=tenant.operator, json={"ids": [before["items"][0]["_id"]]})
    before = notifications(http, tenant.operator)
    store = server.store()
    try:
        asyncio.run(rebuild(server.database_url, NotificationsProjection(), store))
    finally:
        store.close()
    assert marked.status_code == 200
    assert notifications(http, tenant.operator) == before
    assert before["unread"] == 2 and kinds(before) == ["message.new", "message.new", "conversation.new"]


def test_new_notifications_and_reads_reach_only_their_recipients_open_streams(http, tenant, server):
    colleague = tenant.add_operator("agent")
    assert http.put("/api/operators/me/notifications", headers=colleague.headers,
                    json={"conversation.new": {"dashboard": False, "desktop": False, "email": False}}).status_code == 200
    with EventStream(server.base_url, "/api/realtime", tenant.operator) as mine, \
            EventStream(server.base_url, "/api/realtime", colleague.headers) as theirs:
        chat = Chatting(http, tenant)
        [*_, pushed] = mine.until(lambda p: p.event == "notification.created")
        assert pushed.id == 0  # not in the log: never replayed
        assert pushed.data["unread"] == 1
        assert pushed.data["notification"]["kind"] == "conversation.new"
        assert pushed.data["notification"]["conversationId"] == chat.conversation_id
        listed = notifications(http, tenant.operator)["items"][0]
        assert pushed.data["notification"] == listed
        assert http.post("/api/notifications/read", headers=tenant.operator, json={"all": True}).status_code == 200
        [*_, read] = mine.until(lambda p: p.event == "notifications.read")
        assert read.data == {"unread": 0}
        reply(http, colleague.headers, chat.conversation_id, "on it")
        chat.say("thanks")
        seen = theirs.until(lambda p: p.event == "notification.created")
        assert [p.data["notification"]["kind"] for p in seen if p.event == "notification.created"] == ["message.new"]
        assert not [p for p in seen if p.event == "notifications.read"]


def assign(server, tenant, conversation_id: str, assignee, by) -> int:
    store = server.store()
    try:
        stream = uuid.UUID(conversation_id)
        version = store.load(stream)[-1].version
        return store.append(Pending(stream, version + 1, ev.ConversationAssigned(
            org_id=tenant.org_id, at=datetime.now(timezone.utc), conversation_id=stream, assignee_id=assignee,
            team_id=None, actor=ev.Actor("operator", by))))
    finally:
        store.close()


def test_an_assignment_tells_the_assignee_who_then_gets_the_visitors_messages(http, tenant, server):
    colleague = tenant.add_operator("agent")
    me = http.get("/api/operators/me", headers=tenant.operator).json()["_id"]
    chat = Chatting(http, tenant)
    reply(http, tenant.operator, chat.conversation_id, "hello")
    assign(server, tenant, chat.conversation_id, colleague.id, uuid.UUID(me))
    assign(server, tenant, chat.conversation_id, colleague.id, colleague.id)  # the same: no change
    chat.say("is anyone there?")
    theirs = notifications(http, colleague.headers)
    assert kinds(theirs) == ["message.new", "assignment", "conversation.new"]
    assert theirs["items"][1]["text"] == f"You were assigned a conversation on {tenant.website_name}"
    assert theirs["items"][1]["conversationId"] == chat.conversation_id
    assert kinds(notifications(http, tenant.operator)) == ["conversation.new"]  # replied, but not assigned
    own = Chatting(http, tenant)
    assign(server, tenant, own.conversation_id, uuid.UUID(me), uuid.UUID(me))  # taking it yourself
    assert "assignment" not in kinds(notifications(http, tenant.operator))
