"""`GET /api/conversations?inboxFilter=…&asOf=…`: the inbox page and its counts as they were at a past
position or time, equal to what the live inbox answered then; and what it refuses."""

from __future__ import annotations

import uuid

import pytest

from tests.support.visitors import Chatting


def inbox(http, tenant, **params):
    response = http.get("/api/conversations", headers=tenant.operator, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "all", **params})
    assert response.status_code == 200, response.text
    return response.json()


def ids(page):
    return [conversation["_id"] for conversation in page["conversations"]]


def test_the_inbox_as_of_a_position_before_a_resolve_is_what_it_was_then(http, tenant):
    first, second = Chatting(http, tenant), Chatting(http, tenant)
    first.say("hello")
    said = second.say("anyone there?")
    note = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": second.conversation_id, "content": f"@{tenant.operator_email} can you take this?",
        "from": "operator", "internal": True})
    assert note.status_code == 200, note.text
    before = note.headers["Parley-Position"]
    then = {tab: inbox(http, tenant, inboxFilter=tab) for tab in ("all", "unresolved", "resolved", "unread", "mentions")}
    assert then["all"]["counts"]["unresolved"] == 2 and then["all"]["counts"]["mentions"] == 1

    resolved = http.patch(f"/api/conversations/{first.conversation_id}", headers=tenant.operator,
                          json={"resolved": True})
    assert resolved.status_code == 200
    after = resolved.headers["Parley-Position"]
    assert http.patch(f"/api/conversations/{second.conversation_id}", headers=tenant.operator,
                      json={"spam": True}).status_code == 200
    now = inbox(http, tenant)
    assert (now["counts"]["unresolved"], now["counts"]["resolved"], now["counts"]["spam"]) == (0, 1, 1)

    for tab, live in then.items():  # the past, page and counts, as the live inbox answered it then
        past = inbox(http, tenant, inboxFilter=tab, asOf=before)
        assert past["counts"] == live["counts"] and (past["total"], past["filteredTotal"]) == (
            live["total"], live["filteredTotal"])
        assert past["conversations"] == live["conversations"], tab
    resolved_then = inbox(http, tenant, inboxFilter="resolved", asOf=after)
    assert ids(resolved_then) == [first.conversation_id] and resolved_then["counts"]["spam"] == 0
    # a time works as a position does: just after the visitor's question, one conversation was waiting more
    by_time = inbox(http, tenant, inboxFilter="unresolved", asOf=said["creationTime"])
    assert ids(by_time) == [second.conversation_id, first.conversation_id]
    assert by_time["counts"]["mentions"] == 0  # the note came later
    paged = inbox(http, tenant, asOf=before, limit=1, skip=1, fields="resolved")
    assert paged["conversations"] == [{"_id": first.conversation_id, "resolved": False}]


@pytest.mark.parametrize("params, status, field", [
    ({"inboxFilter": "", "asOf": "1"}, 400, "inboxFilter"),
    ({"conversationFilter": "online", "asOf": "1"}, 400, "conversationFilter"),
    ({"asOf": "yesterday"}, 400, "asOf"),
    ({"asOf": "1", "resolved": "true"}, 400, "resolved"),
    ({"asOf": "0001-01-01T00:00:00Z", "conversationFilter": "last-week"}, 400, "asOf"),
])
def test_what_the_past_inbox_refuses(http, tenant, params, status, field):
    response = http.get("/api/conversations", headers=tenant.operator, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "all", **params})
    assert response.status_code == status and response.json()["field"] == field


def test_the_past_inbox_is_the_organization_s_own(http, tenant, other_tenant):
    Chatting(http, tenant).say("private")
    params = {"websiteId": str(tenant.website_id), "inboxFilter": "all", "asOf": "999999999"}
    assert http.get("/api/conversations", headers=other_tenant.operator, params=params).status_code == 404
    assert http.get("/api/conversations", headers=tenant.key(), params=params).status_code == 403
    assert http.get("/api/conversations", headers=tenant.operator,
                    params={**params, "websiteId": str(uuid.uuid4())}).status_code == 404
    assert inbox(http, other_tenant, asOf="999999999")["counts"]["all"] == 0
