"""A visitor who signs in during a chat keeps the conversation: the anonymous customer becomes the identified
one (its transcript, metadata and the team's replies follow); a wrong signature or a session of another
website changes nothing; an identity that already has a customer keeps its own. And what the visitor's
stream adds for the widget: the conversation resolved (the satisfaction prompt) and "seen"; and the visitor's
typing, for the team."""

from __future__ import annotations

import uuid

from tests.support.visitors import EventStream, sign, start_session, visitor_with_conversation


def customer(http, tenant, customer_id):
    response = http.get(f"/api/customers/{customer_id}", headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def say(http, visitor, conversation_id, content):
    response = http.post("/api/chat/messages", headers=visitor.headers,
                         json={"conversationId": conversation_id, "content": content})
    assert response.status_code == 200, response.text
    return response.json()


def test_signing_in_mid_chat_makes_the_anonymous_customer_the_identified_one(http, tenant):
    anonymous, conversation_id = visitor_with_conversation(http, tenant)
    http.put("/api/chat/metadata", headers=anonymous.headers, json={"metadata": {"cart": "3 items"}})
    say(http, anonymous, conversation_id, "Where is my parcel?")
    user = f"user-{uuid.uuid4().hex[:6]}"
    signed = start_session(http, tenant.website_id, userId=user, signature=sign(tenant.identity_secret, user),
                           sessionToken=anonymous.token)
    assert signed.customer_id == anonymous.customer_id
    assert customer(http, tenant, signed.customer_id)["userId"] == user
    record = http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator).json()
    assert record["customerId"] == signed.customer_id and record["metadata"] == {"cart": "3 items"}
    # the identified session reads the transcript, and the team's reply reaches it
    with EventStream(http.base_url, "/api/chat/realtime", signed.headers) as stream:
        sent = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": conversation_id, "content": "On its way", "from": "operator"}).json()
        assert stream.until(lambda p: p.event == "message.created")[-1].data["_id"] == sent["_id"]
    texts = [m["content"] for m in http.get("/api/chat/messages", headers=signed.headers,
                                            params={"conversationId": conversation_id}).json()]
    assert texts == ["Where is my parcel?", "On its way"]
    # the same person on another device is that customer too
    phone = start_session(http, tenant.website_id, userId=user, signature=sign(tenant.identity_secret, user))
    assert phone.customer_id == signed.customer_id
    assert len(http.get("/api/conversations", headers=tenant.operator,
                        params={"websiteId": str(tenant.website_id)}).json()) == 1


def test_a_signature_for_another_user_is_refused_and_changes_nothing(http, tenant):
    anonymous, conversation_id = visitor_with_conversation(http, tenant)
    response = http.post("/api/chat/sessions", json={
        "websiteId": str(tenant.website_id), "userId": "victim", "signature": sign(tenant.identity_secret, "attacker"),
        "sessionToken": anonymous.token})
    assert response.status_code == 401, response.text
    assert customer(http, tenant, anonymous.customer_id)["userId"] is None
    # the name stays free: the real victim signing in later is a customer of their own
    victim = start_session(http, tenant.website_id, userId="victim", signature=sign(tenant.identity_secret, "victim"))
    assert victim.customer_id != anonymous.customer_id


def test_a_session_token_of_another_website_or_none_at_all_is_refused(http, tenant, other_tenant):
    elsewhere, _ = visitor_with_conversation(http, other_tenant)
    for token in (elsewhere.token, "cs_not-a-session"):
        response = http.post("/api/chat/sessions", json={
            "websiteId": str(tenant.website_id), "userId": "ada", "signature": sign(tenant.identity_secret, "ada"),
            "sessionToken": token})
        assert response.status_code == 401, response.text
        assert response.json()["field"] == "sessionToken"
    assert customer(http, other_tenant, elsewhere.customer_id)["userId"] is None


def test_an_identity_with_a_customer_already_keeps_its_own(http, tenant):
    user = f"user-{uuid.uuid4().hex[:6]}"
    earlier = start_session(http, tenant.website_id, userId=user, signature=sign(tenant.identity_secret, user))
    anonymous, _ = visitor_with_conversation(http, tenant)
    signed = start_session(http, tenant.website_id, userId=user, signature=sign(tenant.identity_secret, user),
                           sessionToken=anonymous.token)
    assert signed.customer_id == earlier.customer_id != anonymous.customer_id
    assert customer(http, tenant, anonymous.customer_id)["userId"] is None


def test_the_visitors_language_is_on_their_customer(http, tenant):
    visitor = start_session(http, tenant.website_id)
    saved = http.put("/api/chat/profile", headers=visitor.headers, json={"language": "pt-BR"})
    assert saved.status_code == 200 and saved.json()["language"] == "pt-BR"
    assert customer(http, tenant, visitor.customer_id)["language"] == "pt-BR"
    refused = http.put("/api/chat/profile", headers=visitor.headers, json={"language": "<script>"})
    assert refused.status_code == 400
    assert customer(http, tenant, visitor.customer_id)["language"] == "pt-BR"


def test_the_visitor_hears_of_the_resolve_and_sees_when_the_team_read_their_message(http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    mine = say(http, visitor, conversation_id, "Hello?")
    assert mine["readAt"] is None
    with EventStream(http.base_url, "/api/chat/realtime", visitor.headers) as stream:
        read = http.post(f"/api/messages/{mine['_id']}/read", headers=tenant.operator)
        assert read.status_code == 200, read.text
        seen = stream.until(lambda p: p.event == "message.read")[-1].data
        assert seen["messageId"] == mine["_id"] and seen["conversationId"] == conversation_id and seen["readAt"]
        http.patch(f"/api/conversations/{conversation_id}", headers=tenant.operator, json={"resolved": True})
        resolved = stream.until(lambda p: p.event == "conversation.updated")[-1].data
        assert resolved == {"conversationId": conversation_id, "resolved": True}
    [message] = http.get("/api/chat/messages", headers=visitor.headers, params={"conversationId": conversation_id}).json()
    assert message["readAt"] == seen["readAt"]


def test_the_visitors_typing_reaches_the_team_and_only_for_their_own_conversation(http, tenant, other_tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    stranger, _ = visitor_with_conversation(http, tenant)
    with EventStream(http.base_url, "/api/realtime", tenant.operator) as stream:
        typed = http.post("/api/chat/typing", headers=visitor.headers,
                          json={"conversationId": conversation_id, "typing": True})
        assert typed.status_code == 204, typed.text
        frame = stream.until(lambda p: p.event == "visitor.typing")[-1]
        assert frame.data == {"conversationId": conversation_id, "typing": True} and frame.id == 0
    for headers, body in ((stranger.headers, {"conversationId": conversation_id, "typing": True}),
                          (visitor.headers, {"conversationId": "not-an-id", "typing": True})):
        assert http.post("/api/chat/typing", headers=headers, json=body).status_code == 404
    assert http.post("/api/chat/typing", headers=visitor.headers, json={"typing": True}).status_code == 400
    assert http.post("/api/chat/typing", headers=tenant.operator,
                     json={"conversationId": conversation_id, "typing": True}).status_code == 403


def test_ending_a_session_stops_its_token_at_once_and_nothing_else(http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    other, _ = visitor_with_conversation(http, tenant)
    say(http, visitor, conversation_id, "Before signing out")  # the token is kept by the API process now
    ended = http.delete("/api/chat/session", headers=visitor.headers)
    assert ended.status_code == 200 and ended.json()["ended"] is True
    assert http.get("/api/chat/conversations", headers=visitor.headers).status_code == 401
    assert http.post("/api/chat/messages", headers=visitor.headers,
                     json={"conversationId": conversation_id, "content": "still me?"}).status_code == 401
    assert http.get("/api/chat/conversations", headers=other.headers).status_code == 200
    # the conversation stays the team's to read
    assert http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator).status_code == 200
    assert http.delete("/api/chat/session", headers=tenant.operator).status_code == 403
