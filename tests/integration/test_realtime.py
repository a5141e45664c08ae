"""Realtime channels: what operators and visitors are pushed, what visitors never see, presence, and
resuming with Last-Event-ID across a server restart."""

import asyncio
import time
import uuid

import psycopg
import pytest

from commands import messages
from commands.principal import Principal
from tests.support.servers import make_server, make_tenant
from tests.support.visitors import EventStream, start_session, visitor_with_conversation


def reply(http, tenant, conversation_id, content, **extra):
    response = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation_id, "content": content, "from": "operator", **extra})
    assert response.status_code == 200, response.text
    return response.json()


def until_message(stream, message_id):
    return stream.until(lambda pushed: pushed.event == "message.created" and pushed.data["_id"] == message_id)


def test_operator_stream_pushes_the_organizations_changes(server, http, tenant, other_tenant):
    with EventStream(server.base_url, "/api/realtime", tenant.operator) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        visitor, conversation_id = visitor_with_conversation(http, tenant)
        visitor_with_conversation(http, other_tenant)
        question = http.post("/api/chat/messages", headers=visitor.headers,
                             json={"conversationId": conversation_id, "content": "Hi"}).json()
        answer = reply(http, tenant, conversation_id, "Hello!")
        http.post(f"/api/messages/{answer['_id']}/rating", headers=visitor.headers,
                  json={"websiteId": str(tenant.website_id), "rating": "happy"})
        http.post(f"/api/messages/{answer['_id']}/reaction/operator", headers=tenant.operator, json={"emoji": "🎉"})
        http.post(f"/api/messages/{answer['_id']}/rating/operator", headers=tenant.operator, json={"rating": "neutral"})
        http.patch(f"/api/conversations/{conversation_id}", headers=tenant.operator, json={"resolved": True})
        # the operator's own notifications come too (test_notifications.py): not the organization's changes
        pushed = [p for p in stream.until(lambda p: p.event == "conversation.updated")
                  if not p.event.startswith("notification")]
    assert [p.event for p in pushed] == ["conversation.created", "message.created", "message.created",
                                         "MESSAGE_UPDATED_EVENT", "MESSAGE_UPDATED_EVENT", "MESSAGE_UPDATED_EVENT",
                                         "conversation.updated"]
    assert [p.id for p in pushed] == sorted({p.id for p in pushed})
    created, asked, answered, rated, reacted, team_rated, resolved = pushed
    # the team's own rating is told as such, never as the visitor's
    assert (team_rated.data["operatorRating"], "rating" in team_rated.data) == ("neutral", False)
    assert created.data["_id"] == conversation_id and created.data["websiteId"] == str(tenant.website_id)
    assert (asked.data["_id"], asked.data["from"]) == (question["_id"], "customer")
    assert (answered.data["_id"], answered.data["from"]) == (answer["_id"], "operator")
    assert (rated.data["messageId"], rated.data["rating"]) == (answer["_id"], "happy")
    assert rated.data["ratingTime"]
    assert reacted.data["messageId"] == answer["_id"]
    assert [r["emoji"] for r in reacted.data["reactions"]] == ["🎉"]
    assert resolved.data == {"conversationId": conversation_id, "resolved": True}


def test_visitor_stream_pushes_only_what_the_visitor_may_see(server, http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    _, strangers_conversation = visitor_with_conversation(http, tenant)
    with EventStream(server.base_url, "/api/chat/realtime", visitor.headers) as stream:
        # planted: a note, an operator-only conversation about the visitor, a reaction on the note,
        # another visitor's conversation, and the visitor's own rating
        note = reply(http, tenant, conversation_id, "internal: refund them", internal=True)
        hidden = http.post("/api/conversations", headers=tenant.operator, json={
            "websiteId": str(tenant.website_id), "customerId": visitor.customer_id, "operatorOnly": True}).json()
        hidden_message = reply(http, tenant, hidden["_id"], "they are upset")
        for message in (note, hidden_message):
            http.post(f"/api/messages/{message['_id']}/reaction/operator", headers=tenant.operator,
                      json={"emoji": "👀"})
        reply(http, tenant, strangers_conversation, "for someone else")
        mine = http.post("/api/chat/messages", headers=visitor.headers,
                         json={"conversationId": conversation_id, "content": "Any news?"}).json()
        answer = reply(http, tenant, conversation_id, "Shipped today.")
        http.post(f"/api/messages/{answer['_id']}/rating", headers=visitor.headers,
                  json={"websiteId": str(tenant.website_id), "rating": "happy"})
        http.post(f"/api/messages/{answer['_id']}/reaction/customer", headers=visitor.headers,
                  json={"websiteId": str(tenant.website_id), "emoji": "🙏"})
        http.post(f"/api/messages/{answer['_id']}/reaction/operator", headers=tenant.operator, json={"emoji": "🚚"})
        second = http.post("/api/chat/conversations", headers=visitor.headers).json()
        marker = reply(http, tenant, second["_id"], "A new thread")
        pushed = until_message(stream, marker["_id"])
    assert [(p.event, p.data.get("_id") or p.data.get("messageId")) for p in pushed] == [
        ("message.created", mine["_id"]),
        ("message.created", answer["_id"]),
        ("MESSAGE_UPDATED_EVENT", answer["_id"]),
        ("conversation.created", second["_id"]),
        ("message.created", marker["_id"]),
    ]
    assert pushed[2].data == {"messageId": answer["_id"]}  # id-only
    assert set(pushed[1].data) == {"_id", "conversationId", "content", "from", "replyToMessageId", "creationTime",
                                   "rating", "ratingTime", "author", "incomplete", "reactions", "operator",
                                   "attachments", "readAt", "editedAt", "deleted", "contentHtml"}
    assert set(pushed[1].data["operator"]) == {"operatorId", "displayName", "avatarUrl"}  # never the e-mail
    assert "operatorOnly" not in pushed[3].data


def test_stream_credentials(server, http, tenant):
    visitor = start_session(http, tenant.website_id)
    for path, headers, status in (("/api/realtime", visitor.headers, 403), ("/api/realtime", tenant.key(), 403),
                                  ("/api/realtime", {}, 401), ("/api/chat/realtime", tenant.operator, 403),
                                  ("/api/chat/realtime", tenant.key(), 403), ("/api/chat/realtime", {}, 401),
                                  ("/api/realtime", {**tenant.operator, "Last-Event-ID": "x"}, 400),
                                  ("/api/realtime", {**tenant.operator, "Last-Event-ID": "-1"}, 400)):
        stream = EventStream(server.base_url, path, headers)
        assert stream.status == status, (path, headers)
        stream.close()
    assert http.get("/api/chat/realtime", params={"token": visitor.token}).status_code == 400


def test_the_teams_typing_reaches_the_visitor_as_a_live_frame_and_is_never_stored(server, http, tenant,
                                                                                    other_tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    hidden = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": visitor.customer_id, "operatorOnly": True}).json()
    path = f"/api/conversations/{conversation_id}/typing"
    store = server.store()
    try:
        with EventStream(server.base_url, "/api/chat/realtime", visitor.headers) as stream:
            head = store.head()
            # an operator-only conversation: the visitor is told nothing of it
            assert http.post(f"/api/conversations/{hidden['_id']}/typing", headers=tenant.operator,
                             json={"typing": True}).status_code == 204
            for typing in (True, False):
                answer = http.post(path, headers=tenant.operator, json={"typing": typing})
                assert answer.status_code == 204 and answer.content == b"", answer.text
                assert "Parley-Position" not in answer.headers
            pushed = [stream.next(), stream.next()]
            assert store.head() == head  # ephemeral: not an event
    finally:
        store.close()
    assert [(p.id, p.event, p.data) for p in pushed] == [
        (0, "typing", {"conversationId": conversation_id, "typing": True}),
        (0, "typing", {"conversationId": conversation_id, "typing": False})]
    for headers, body, status in (
            (other_tenant.operator, {"typing": True}, 404),  # another organization's conversation
            (tenant.operator, {"typing": "yes"}, 400), (tenant.operator, {}, 400),
            (tenant.operator, {"typing": True, "who": "me"}, 400),
            ({}, {"typing": True}, 401), (visitor.headers, {"typing": True}, 403)):
        answer = http.post(path, headers=headers, json=body)
        assert answer.status_code == status, (headers, body, answer.text)
    assert http.post(f"/api/conversations/{uuid.uuid4()}/typing", headers=tenant.operator,
                     json={"typing": True}).status_code == 404
    assert http.post("/api/conversations/not-an-id/typing", headers=tenant.operator,
                     json={"typing": True}).status_code == 404


def presence(server, customer_id):
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        row = conn.execute("SELECT connections FROM parley_presence WHERE customer_id = %s",
                           (uuid.UUID(customer_id),)).fetchone()
    return row[0] if row else 0


def wait_presence(server, customer_id, expected, timeout=30):
    deadline = time.monotonic() + timeout
    while (found := presence(server, customer_id)) != expected:
        assert time.monotonic() < deadline, f"presence stayed {found}, expected {expected}"
        time.sleep(0.05)


def test_a_visitor_with_an_open_channel_is_online(server, http, tenant):
    visitor = start_session(http, tenant.website_id)
    assert presence(server, visitor.customer_id) == 0
    first = EventStream(server.base_url, "/api/chat/realtime", visitor.headers)
    assert presence(server, visitor.customer_id) == 1
    second = EventStream(server.base_url, "/api/chat/realtime", visitor.headers)
    assert presence(server, visitor.customer_id) == 2
    first.close()
    wait_presence(server, visitor.customer_id, 1)
    second.close()
    wait_presence(server, visitor.customer_id, 0)


def test_replay_from_last_event_id_then_live_without_duplicates(server, http):
    tenant = make_tenant(server)
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    first = reply(http, tenant, conversation_id, "one")
    note = reply(http, tenant, conversation_id, "a note", internal=True)
    second = reply(http, tenant, conversation_id, "two")
    with EventStream(server.base_url, "/api/realtime", {**tenant.operator, "Last-Event-ID": "0"}) as stream:
        third = reply(http, tenant, conversation_id, "three")
        pushed = until_message(stream, third["_id"])
    assert [p.event for p in pushed] == ["conversation.created"] + ["message.created"] * 4
    assert [p.data["_id"] for p in pushed[1:]] == [first["_id"], note["_id"], second["_id"], third["_id"]]
    # the visitor's replay from the very start holds neither the note nor the operator-only conversation
    hidden = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": visitor.customer_id, "operatorOnly": True}).json()
    reply(http, tenant, hidden["_id"], "about them")
    with EventStream(server.base_url, "/api/chat/realtime", {**visitor.headers, "Last-Event-ID": "0"}) as stream:
        fourth = reply(http, tenant, conversation_id, "four")
        replayed = until_message(stream, fourth["_id"])
    assert [p.data["_id"] for p in replayed] == [conversation_id, first["_id"], second["_id"], third["_id"],
                                                 fourth["_id"]]
    with EventStream(server.base_url, "/api/chat/realtime",
                     {**visitor.headers, "Last-Event-ID": str(replayed[1].id)}) as stream:
        fifth = reply(http, tenant, conversation_id, "five")
        resumed = until_message(stream, fifth["_id"])
    assert [p.data["_id"] for p in resumed] == [second["_id"], third["_id"], fourth["_id"], fifth["_id"]]


@pytest.fixture
def own_server(infra, tmp_path):
    # Short, so a crashed process's visitors go offline quickly; not so short that a heartbeat delayed
    # on a loaded machine (renewals come every third of it) lets a live process's visitors lapse.
    running = make_server(infra, tmp_path, PARLEY_PRESENCE_TTL_SECONDS="3").start()
    yield running
    running.stop()


def test_resume_with_last_event_id_across_a_restart(own_server):
    tenant = make_tenant(own_server)
    with own_server.client() as http:
        visitor, conversation_id = visitor_with_conversation(http, tenant)
        with EventStream(own_server.base_url, "/api/realtime", tenant.operator) as team, \
                EventStream(own_server.base_url, "/api/chat/realtime", visitor.headers) as mine:
            before = reply(http, tenant, conversation_id, "before the restart")
            team_seen = until_message(team, before["_id"])[-1].id
            visitor_seen = until_message(mine, before["_id"])[-1].id
            own_server.stop()  # open streams must not hold the shutdown
    # written while no API runs: only the event store has it
    store = own_server.store()
    operator = Principal("operator", tenant.org_id, uuid.uuid4(), operator_id=uuid.uuid4())

    async def write_while_down():
        await store.open_async()
        try:
            return (await messages.create_message(store, operator, messages.MessageCreate(
                conversation_id=conversation_id, content="while down", sender="operator")),
                await messages.create_message(store, operator, messages.MessageCreate(
                    conversation_id=conversation_id, content="note while down", sender="operator", internal=True)))
        finally:
            await store.close_async()

    try:
        while_down, note = asyncio.run(write_while_down())
    finally:
        store.close()
    own_server.start()
    with own_server.client() as http:
        after = reply(http, tenant, conversation_id, "after the restart")
        with EventStream(own_server.base_url, "/api/realtime",
                         {**tenant.operator, "Last-Event-ID": str(team_seen)}) as team, \
                EventStream(own_server.base_url, "/api/chat/realtime",
                            {**visitor.headers, "Last-Event-ID": str(visitor_seen)}) as mine:
            live = reply(http, tenant, conversation_id, "live again")
            team_pushed = until_message(team, live["_id"])
            visitor_pushed = until_message(mine, live["_id"])
    assert [p.data["_id"] for p in team_pushed] == [str(while_down.id), str(note.id), after["_id"], live["_id"]]
    assert [p.data["_id"] for p in visitor_pushed] == [str(while_down.id), after["_id"], live["_id"]]
    assert [p.id for p in team_pushed] == sorted(p.id for p in team_pushed)


def test_a_crashed_api_process_leaves_no_visitor_online(own_server):
    tenant = make_tenant(own_server)
    with own_server.client() as http:
        visitor = start_session(http, tenant.website_id)
        stream = EventStream(own_server.base_url, "/api/chat/realtime", visitor.headers)
        assert presence(own_server, visitor.customer_id) == 1
        own_server.kill()
        stream.close()
    wait_presence(own_server, visitor.customer_id, 0)
    own_server.start()
    with own_server.client() as http:
        stream = EventStream(own_server.base_url, "/api/chat/realtime", visitor.headers)
        assert presence(own_server, visitor.customer_id) == 1
        stream.close()
