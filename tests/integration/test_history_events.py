"""`GET /api/events`: the organization's history as NDJSON, its filters and their refusals, pinned keys,
following live across a new write, and resuming with `after`."""

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from events import types as ev
from events.store import Pending
from tests.support.servers import basic
from tests.support.history_seed import ndjson, post, story
from tests.support.visitors import start_session, visitor_with_conversation


def events(http, headers, **params):
    return ndjson(http.get("/api/events", headers=headers, params=params))


def test_the_organizations_history_in_position_order_and_nothing_else(http, tenant, other_tenant):
    told = story(http, tenant)
    story(http, other_tenant)
    lines, trailer = events(http, tenant.operator)
    positions = [line["position"] for line in lines]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert set(lines[0]) == {"position", "type", "at", "streamId", "data"}
    kinds = [line["type"] for line in lines]
    assert kinds[:3] == ["OrganizationCreated", "WebsiteCreated", "OperatorCreated"]
    assert "NameReserved" not in kinds and trailer["omitted"]["NameReserved"] == 2  # the vanity id, the e-mail
    assert trailer["lastPosition"] >= positions[-1]
    assert lines[0]["data"] == {"name": lines[0]["data"]["name"]} and lines[0]["streamId"] == str(tenant.org_id)
    assert all(str(other_tenant.website_id) not in json.dumps(line) for line in lines)
    assert any(str(tenant.website_id) in json.dumps(line) for line in lines)
    answer = next(line for line in lines if line["type"] == "MessageCreated"
                  and line["data"]["messageId"] == told.answer["_id"])
    expected = {"messageId": told.answer["_id"], "conversationId": told.conversation_id,
                "websiteId": str(tenant.website_id), "content": "Hello!", "sender": "operator", "replyTo": None,
                "internal": False}  # and whatever later fields the shape adds (the operator's id, a campaign's)
    assert {name: answer["data"][name] for name in expected} == expected
    assert answer["streamId"] == told.answer["_id"]
    assert datetime.fromisoformat(answer["at"]).tzinfo is not None


def test_filters(http, tenant):
    told = story(http, tenant)
    everything, trailer = events(http, tenant.operator)
    middle = everything[len(everything) // 2]
    after, _ = events(http, tenant.operator, after=middle["position"])
    assert after == [line for line in everything if line["position"] > middle["position"]]
    until, until_trailer = events(http, tenant.operator, until=middle["position"])
    assert until == [line for line in everything if line["position"] <= middle["position"]]
    assert until_trailer["lastPosition"] == middle["position"]
    at = datetime.fromisoformat(middle["at"])
    since, _ = events(http, tenant.operator, since=middle["at"])
    assert since == [line for line in everything if datetime.fromisoformat(line["at"]) >= at]
    until_time, _ = events(http, tenant.operator, until=middle["at"])
    assert until_time == [line for line in everything if datetime.fromisoformat(line["at"]) <= at]
    typed, _ = events(http, tenant.operator, types="MessageRated, ConversationUpdated")
    assert [line["type"] for line in typed] == ["MessageRated", "ConversationUpdated", "ConversationUpdated"]
    conversation, _ = events(http, tenant.operator, conversationId=told.conversation_id)
    assert conversation == [line for line in everything if line["data"].get("conversationId") == told.conversation_id]
    # created, 3 messages, a receipt and the reading operator's read mark, a rating, a reaction, resolved, reopened
    assert len(conversation) == 10
    limited, limited_trailer = events(http, tenant.operator, limit=3)
    assert limited == everything[:3] and limited_trailer["lastPosition"] == everything[2]["position"]
    resumed, _ = events(http, tenant.operator, after=limited_trailer["lastPosition"])
    assert limited + resumed == everything
    later = (datetime.fromisoformat(everything[-1]["at"]) + timedelta(hours=1)).isoformat()
    assert events(http, tenant.operator, since=later)[0] == []


@pytest.mark.parametrize("params, field", [
    ({"after": "-1"}, "after"), ({"after": "ten"}, "after"), ({"limit": "x"}, "limit"),
    ({"until": "yesterday"}, "until"), ({"since": "2026-01-01T00:00:00"}, "since"), ({"since": "soon"}, "since"),
    ({"types": "MessageCreated,Nope"}, "types"), ({"websiteId": "nope"}, "websiteId"),
    ({"conversationId": "nope"}, "conversationId"), ({"follow": "maybe"}, "follow"),
    ({"follow": "true", "until": "5"}, "until"),
])
def test_refusals_name_the_parameter(http, tenant, params, field):
    response = http.get("/api/events", headers=tenant.operator, params=params)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == field


def test_credentials_and_scope(http, tenant):
    assert http.get("/api/events").status_code == 401
    assert http.get("/api/events", headers=basic("nope")).status_code == 401
    assert http.get("/api/events", headers=tenant.key("messages:read")).status_code == 403
    visitor, _ = visitor_with_conversation(http, tenant)
    assert http.get("/api/events", headers=visitor.headers).status_code == 403
    lines, _ = events(http, tenant.key("events:read"))
    assert lines and lines[0]["type"] == "OrganizationCreated"


def test_a_pinned_key_gets_only_its_websites_events(http, tenant):
    other_website, _ = tenant.add_website()
    story(http, tenant)
    stranger = start_session(http, other_website)
    post(http, "/api/chat/conversations", stranger.headers)
    headers = tenant.key("events:read", website=tenant.website_id)
    lines, _ = events(http, headers)
    everything, _ = events(http, tenant.operator)
    assert str(other_website) in json.dumps(everything)
    assert str(other_website) not in json.dumps(lines)
    assert {line["type"] for line in lines} >= {"ConversationCreated", "MessageCreated", "MessageRead", "MessageRated",
                                                "MessageReactionsChanged", "ConversationUpdated",
                                                "CustomerCreated", "ChatSessionStarted", "WebsiteCreated"}
    assert "OrganizationCreated" not in {line["type"] for line in lines}
    assert events(http, headers, websiteId=str(tenant.website_id))[0] == lines
    assert http.get("/api/events", headers=headers, params={"websiteId": str(other_website)}).status_code == 403


def test_follow_streams_new_writes_live_and_resumes_with_after(server, http, tenant):
    told = story(http, tenant)
    history, trailer = events(http, tenant.operator)
    with server.client() as follower, follower.stream(
            "GET", "/api/events", headers=tenant.operator,
            params={"follow": "true", "after": history[-2]["position"]}) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        assert json.loads(next(lines)) == history[-1]  # the history first ...
        written = post(http, "/api/messages", tenant.operator,
                       {"conversationId": told.conversation_id, "content": "live", "from": "operator"})
        live = json.loads(next(lines))  # ... then what is written while it is open
        assert (live["type"], live["data"]["messageId"]) == ("MessageCreated", written["_id"])
        assert live["position"] > trailer["lastPosition"]
    post(http, "/api/messages", tenant.operator, {"conversationId": told.conversation_id, "content": "missed",
                                                  "from": "operator"})
    resumed, _ = events(http, tenant.operator, after=live["position"])
    assert [line["data"]["content"] for line in resumed] == ["missed"]


def test_follow_ends_at_its_limit(server, http, tenant):
    told = story(http, tenant)
    _, trailer = events(http, tenant.operator)
    with server.client() as follower, follower.stream(
            "GET", "/api/events", headers=tenant.operator,
            params={"follow": "true", "after": trailer["lastPosition"], "limit": "1"}) as response:
        post(http, "/api/messages", tenant.operator,
             {"conversationId": told.conversation_id, "content": "one", "from": "operator"})
        lines = [json.loads(line) for line in response.iter_lines()]
    assert [line["data"]["content"] for line in lines[:1]] == ["one"]
    assert lines[1]["trailer"]["lastPosition"] == lines[0]["position"]


def test_an_org_id_planted_in_a_nested_value_does_not_move_an_event_to_that_organization(server, http, tenant,
                                                                                         other_tenant):
    customer = uuid.uuid4()
    store = server.store()
    try:
        store.append(Pending(customer, 1, ev.CustomerMetadataSet(
            org_id=tenant.org_id, at=datetime.now(timezone.utc), customer_id=customer,
            values={"org_id": str(other_tenant.org_id)})))
    finally:
        store.close()
    theirs, _ = events(http, other_tenant.operator)
    assert str(customer) not in json.dumps(theirs)
    mine, _ = events(http, tenant.operator, types="CustomerMetadataSet")
    assert [line["data"]["customerId"] for line in mine] == [str(customer)]
