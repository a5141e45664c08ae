"""Time travel (`asOf`) answers what the API answered at that moment, recorded during the test and
compared later; the audit trail shows every change and who made it, to operators only."""

import time
import uuid
from datetime import datetime, timezone

from tests.support.history_seed import ndjson, post, story
from tests.support.visitors import visitor_with_conversation


def head(http, tenant) -> int:
    return ndjson(http.get("/api/events", headers=tenant.operator, params={"types": "OrganizationCreated"}))[1][
        "lastPosition"]


def answers(http, tenant, conversation_id, **params):
    conversation = http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator, params=params)
    messages = http.get("/api/messages", headers=tenant.operator,
                        params={"conversationId": conversation_id, **params})
    assert conversation.status_code == 200 and messages.status_code == 200, (conversation.text, messages.text)
    return conversation.json(), messages.json()


def test_as_of_answers_what_the_api_answered_then(http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    steps = [
        lambda: post(http, "/api/chat/messages", visitor.headers, {"conversationId": conversation_id, "content": "Hi"}),
        lambda: post(http, "/api/messages", tenant.operator,
                     {"conversationId": conversation_id, "content": "Hello!", "from": "operator"}),
        lambda: post(http, f"/api/messages/{said[1]['_id']}/read", tenant.operator),
        lambda: post(http, f"/api/messages/{said[2]['_id']}/rating", visitor.headers,
                     {"websiteId": str(tenant.website_id), "rating": "happy"}),
        lambda: post(http, f"/api/messages/{said[2]['_id']}/reaction/operator", tenant.operator, {"emoji": "🎉"}),
        lambda: post(http, f"/api/conversations/{conversation_id}", tenant.operator, {"resolved": True}, "PATCH"),
        lambda: post(http, f"/api/conversations/{conversation_id}", tenant.operator, {"spam": True}, "PATCH"),
    ]
    said: list = [None]
    recorded = [(head(http, tenant), datetime.now(timezone.utc), answers(http, tenant, conversation_id))]
    for step in steps:
        said.append(step())
        time.sleep(0.002)  # each moment's time lies strictly between two steps' events
        moment = datetime.now(timezone.utc)
        recorded.append((head(http, tenant), moment, answers(http, tenant, conversation_id)))
        time.sleep(0.002)
    for position, moment, then in recorded:
        assert answers(http, tenant, conversation_id, asOf=str(position)) == then
        assert answers(http, tenant, conversation_id, asOf=moment.isoformat()) == then
    assert recorded[-1][2] == answers(http, tenant, conversation_id)  # the last moment is now
    first, last = recorded[0][2], recorded[-1][2]
    assert first[1] == [] and not first[0]["resolved"] and last[0]["spam"] and len(last[1]) == 2


def test_as_of_refusals(http, tenant, other_tenant):
    told = story(http, tenant)
    before = "2000-01-01T00:00:00Z"
    path = f"/api/conversations/{told.conversation_id}"
    assert http.get(path, headers=tenant.operator, params={"asOf": before}).status_code == 404
    for bad in ("yesterday", "2026-01-01T00:00:00"):
        response = http.get(path, headers=tenant.operator, params={"asOf": bad})
        assert response.status_code == 400 and response.json()["field"] == "asOf"
    response = http.get("/api/messages", headers=tenant.operator, params={"asOf": "5"})
    assert response.status_code == 400 and response.json()["field"] == "conversationId"
    now = {"asOf": datetime.now(timezone.utc).isoformat()}
    assert http.get(path, headers=other_tenant.operator, params=now).status_code == 404
    assert http.get("/api/messages", headers=other_tenant.operator,
                    params={"conversationId": told.conversation_id, **now}).json() == []
    other_website, _ = tenant.add_website()
    pinned = tenant.key("conversations:read,messages:read", website=other_website)
    assert http.get(path, headers=pinned, params=now).status_code == 404
    assert http.get(path, headers=tenant.key("messages:read"), params=now).status_code == 403
    listed = http.get("/api/messages", headers=tenant.operator,
                      params={"conversationId": told.conversation_id, "sortDirection": "DESC", "limit": 1,
                              "fields": "content", **now})
    assert listed.json() == [{"_id": told.note["_id"], "content": "VIP"}]


def test_the_audit_trail_shows_every_change_and_who_made_it(http, tenant):
    told = story(http, tenant)
    response = http.get(f"/api/conversations/{told.conversation_id}/history", headers=tenant.operator)
    assert response.status_code == 200, response.text
    trail = response.json()
    assert trail["conversationId"] == told.conversation_id and trail["omitted"] == {}
    entries = trail["entries"]
    assert [entry["type"] for entry in entries] == [
        "ConversationCreated", "MessageCreated", "MessageRead", "ConversationReadByOperator", "MessageCreated",
        "MessageCreated", "MessageRated", "MessageReactionsChanged", "ConversationUpdated", "ConversationUpdated"]
    customer = {"kind": "customer", "id": told.visitor.customer_id}
    operators = {entry["actor"]["id"] for entry in entries if entry["actor"]["kind"] == "operator"}
    assert len(operators) == 1  # the one operator did all the rest
    assert [entry["actor"]["kind"] for entry in entries] == [
        "customer", "customer", "operator", "operator", "operator", "operator", "customer", "operator", "operator",
        "operator"]
    assert entries[0]["actor"] == entries[1]["actor"] == entries[6]["actor"] == customer
    assert entries[3]["data"]["operatorId"] == entries[2]["actor"]["id"]  # the operator's own read mark
    assert entries[5]["data"]["internal"] and entries[5]["data"]["content"] == "VIP"
    assert [entry["data"]["resolved"] for entry in entries[-2:]] == [True, False]
    positions = [entry["position"] for entry in entries]
    assert positions == sorted(positions)
    events, _ = ndjson(http.get("/api/events", headers=tenant.operator,
                                params={"conversationId": told.conversation_id}))
    assert [(e["position"], e["data"]) for e in events] == [(e["position"], e["data"]) for e in entries]


def test_the_audit_trail_is_for_operators_of_the_organization(http, tenant, other_tenant):
    told = story(http, tenant)
    path = f"/api/conversations/{told.conversation_id}/history"
    assert http.get(path, headers=tenant.key()).status_code == 403
    assert http.get(path, headers=told.visitor.headers).status_code == 403
    assert http.get(path).status_code == 401
    assert http.get(path, headers=other_tenant.operator).status_code == 404
    assert http.get(f"/api/conversations/{uuid.uuid4()}/history", headers=tenant.operator).status_code == 404
    assert http.get(f"/api/conversations/{told.answer['_id']}/history", headers=tenant.operator).status_code == 404
