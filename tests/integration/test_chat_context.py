"""What the widget's page tells the service: its context for the AI agent (`PUT /api/chat/context`), the
conversation's metadata (`PUT /api/chat/metadata`), and the visitor routes' CORS and allowed origins."""

from __future__ import annotations

import asyncio
import json
import uuid

import psycopg
import pytest
from tests.support.servers import make_server, make_tenant
from tests.support.receivers import Receiver
from tests.support.visitors import sign, start_session, visitor_with_conversation

from projections.chat import visitor_context

PAGE = "https://shop.example"


@pytest.fixture(scope="module")
def site_server(infra, tmp_path_factory):
    # webhooks to the loopback receiver are allowed here, for the metadata's webhook
    server = make_server(infra, tmp_path_factory.mktemp("chat-context"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def api(site_server):
    with site_server.client() as client:
        yield client


@pytest.fixture
def site(site_server):
    return make_tenant(site_server)


def context_of(server, tenant, customer_id, session_id=None):
    async def read():
        async with await psycopg.AsyncConnection.connect(server.database_url) as conn:
            return await visitor_context(conn, tenant.org_id, uuid.UUID(customer_id), session_id)
    return asyncio.run(read())


def stored_context(server, tenant, visitor, position):
    server.wait_projected(position, "chat")
    found = context_of(server, tenant, visitor.customer_id)
    return found and json.loads(json.dumps({"readables": [[r.user_id, r.description, r.value] for r in found.readables],
                                            "actions": [[a.user_id, a.name, a.description] for a in found.actions]}))


def put_context(api, visitor, readables=(), actions=()):
    return api.put("/api/chat/context", headers=visitor.headers,
                   json={"readables": list(readables), "actions": list(actions)})


def position(response) -> int:
    return int(response.headers["parley-position"])


def test_context_is_stored_and_a_newer_set_replaces_the_older(api, site_server, site):
    visitor = start_session(api, site.website_id)
    first = put_context(api, visitor, [{"userId": None, "description": "cart", "value": {"items": 2}}],
                        [{"userId": None, "name": "applyCoupon", "description": "Applies a coupon"}])
    assert first.status_code == 200, first.text
    assert first.json() == {"readables": 1, "actions": 1}
    assert stored_context(site_server, site, visitor, position(first)) == {
        "readables": [[None, "cart", {"items": 2}]], "actions": [[None, "applyCoupon", "Applies a coupon"]]}
    second = put_context(api, visitor, [{"description": "page", "value": "/pricing"}])
    assert stored_context(site_server, site, visitor, position(second)) == {
        "readables": [[None, "page", "/pricing"]], "actions": []}
    emptied = put_context(api, visitor)
    assert stored_context(site_server, site, visitor, position(emptied)) == {"readables": [], "actions": []}


def test_context_scoped_to_another_user_is_not_given_to_this_visitor(api, site_server, site):
    signed = start_session(api, site.website_id, userId="ada", signature=sign(site.identity_secret, "ada"))
    response = put_context(api, signed, [
        {"userId": "ada", "description": "orders", "value": [1, 2]},
        {"userId": "bob", "description": "bob's orders", "value": [3]},
        {"description": "page", "value": "/"}],
        [{"userId": "bob", "name": "refundBob", "description": ""}])
    assert stored_context(site_server, site, signed, position(response)) == {
        "readables": [["ada", "orders", [1, 2]], [None, "page", "/"]], "actions": []}
    found = context_of(site_server, site, signed.customer_id)
    assert found.user_id == "ada" and str(found.customer_id) == signed.customer_id


@pytest.mark.parametrize("body", [
    {"readables": [{"description": "x", "value": "v"}] * 51},
    {"actions": [{"name": "a", "description": ""}] * 51},
    {"readables": [{"description": "big", "value": "x" * 9000}]},
    {"readables": [{"description": "", "value": 1}]},
    {"readables": [{"description": "no value"}]},
    {"actions": [{"name": "x" * 101}]},
    {"actions": [{"name": "a", "handler": "function () {}"}]},
    {"readables": "nope"},
])
def test_bad_or_oversized_context_is_400_and_keeps_the_stored_set(api, site_server, site, body):
    visitor = start_session(api, site.website_id)
    kept = put_context(api, visitor, [{"description": "kept", "value": 1}])
    response = api.put("/api/chat/context", headers=visitor.headers, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert stored_context(site_server, site, visitor, position(kept)) == {
        "readables": [[None, "kept", 1]], "actions": []}


def nested(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize("value", [
    nested(100_000),  # deeper than the decoder recurses
    nested(900, '"a\\u0000b"'),  # a NUL deep down, where a recursive search for it would overflow
    nested(62),  # 65 levels with the body's own three: one past the bound, though small enough to decode
], ids=["100000-levels", "900-levels-and-a-nul", "65-levels"])
def test_deeply_nested_context_is_400(api, site_server, site, value):
    visitor = start_session(api, site.website_id)
    body = '{"readables": [{"description": "deep", "value": ' + value + "}]}"
    response = api.put("/api/chat/context", headers={**visitor.headers, "Content-Type": "application/json"},
                       content=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert "nests deeper than 64 levels" in response.json()["detail"]
    assert put_context(api, visitor, [{"description": "shallow", "value": json.loads(nested(61))}]).status_code == 200


def test_context_accepts_only_the_chat_session(api, site):
    for headers in (site.operator, site.key(), {}):
        response = api.put("/api/chat/context", headers=headers, json={"readables": []})
        assert response.status_code in (401, 403)


def conversation(api, tenant, conversation_id):
    response = api.get(f"/api/conversations/{conversation_id}", headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def test_metadata_set_before_a_conversation_goes_to_the_next_one_and_its_webhook(api, site):
    with Receiver() as receiver:
        api.post("/api/webhooksubscriptions", headers=site.operator, json={
            "websiteId": str(site.website_id), "url": receiver.url, "events": ["conversation.created"]})
        visitor = start_session(api, site.website_id)
        held = api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": {"plan": "pro", "x": "1"}})
        assert held.json() == {"conversationId": None, "metadata": {"plan": "pro", "x": "1"}}
        api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": {"x": None, "seats": "3"}})
        started = api.post("/api/chat/conversations", headers=visitor.headers).json()
        [delivery] = receiver.wait_for(1)
    expected = {"plan": "pro", "seats": "3"}
    assert conversation(api, site, started["_id"])["metadata"] == expected
    assert json.loads(delivery.body)["data"]["metadata"] == expected
    # taken: the visitor's next conversation starts without it
    assert api.patch(f"/api/conversations/{started['_id']}", headers=site.operator,
                     json={"resolved": True}).status_code == 200
    later = api.post("/api/chat/conversations", headers=visitor.headers).json()
    assert conversation(api, site, later["_id"])["metadata"] == {}


def test_metadata_lands_on_the_current_conversation_and_no_other_visitor_sees_it(api, site):
    visitor, conversation_id = visitor_with_conversation(api, site)
    stranger, strangers_conversation = visitor_with_conversation(api, site)
    response = api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": {"order": "A-17"}})
    assert response.json() == {"conversationId": conversation_id, "metadata": {"order": "A-17"}}
    api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": {"tier": "gold", "order": None}})
    assert conversation(api, site, conversation_id)["metadata"] == {"tier": "gold"}
    assert conversation(api, site, strangers_conversation)["metadata"] == {}
    for who in (visitor, stranger):
        listed = api.get("/api/chat/conversations", headers=who.headers).text
        assert "gold" not in listed and "metadata" not in listed
    assert "gold" not in api.get("/api/chat/profile", headers=stranger.headers).text
    # operators' lists stay lean: metadata is on the record only
    assert all("metadata" not in c for c in api.get("/api/conversations", headers=site.operator).json())


@pytest.mark.parametrize("body", [{"metadata": {"k": 1}}, {"metadata": {"": "v"}}, {"metadata": {"k" * 65: "v"}},
                                  {"metadata": {f"k{i}": "v" for i in range(51)}}, {"plan": "pro"}, {}])
def test_bad_metadata_is_400_and_changes_nothing(api, site, body):
    visitor, conversation_id = visitor_with_conversation(api, site)
    api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": {"kept": "yes"}})
    response = api.put("/api/chat/metadata", headers=visitor.headers, json=body)
    assert response.status_code == 400
    assert conversation(api, site, conversation_id)["metadata"] == {"kept": "yes"}


def test_metadata_past_the_key_limit_in_total_is_400(api, site):
    visitor, conversation_id = visitor_with_conversation(api, site)
    first = {f"a{i}": "v" for i in range(30)}
    assert api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": first}).status_code == 200
    more = {f"b{i}": "v" for i in range(30)}
    assert api.put("/api/chat/metadata", headers=visitor.headers, json={"metadata": more}).status_code == 400
    assert conversation(api, site, conversation_id)["metadata"] == first


def preflight(api, path, origin=PAGE, method="POST"):
    return api.options(path, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                      "Access-Control-Request-Headers": "authorization, content-type"})


@pytest.mark.parametrize("path", ["/api/chat/sessions", "/api/chat/messages", "/api/chat/realtime",
                                  "/api/chat/context", f"/api/messages/{uuid.uuid4()}/rating",
                                  f"/api/messages/{uuid.uuid4()}/reaction/customer"])
def test_visitor_routes_answer_preflights_and_browser_calls(api, site, path):
    response = preflight(api, path)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == PAGE
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    assert "last-event-id" in response.headers["access-control-allow-headers"].lower()
    visitor = start_session(api, site.website_id)
    call = api.get("/api/chat/conversations", headers={**visitor.headers, "Origin": PAGE})
    assert call.status_code == 200 and call.headers["access-control-allow-origin"] == PAGE
    refused = api.get("/api/chat/conversations", headers={"Origin": PAGE})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == PAGE


@pytest.mark.parametrize("path", ["/api/conversations", "/api/messages", "/api/websites", "/api/realtime",
                                  f"/api/messages/{uuid.uuid4()}/rating/operator", "/api/webhooksubscriptions"])
def test_no_other_route_opens_cors(api, site, path):
    response = preflight(api, path, method="GET")
    assert "access-control-allow-origin" not in response.headers
    call = api.get(path, headers={"Origin": PAGE})  # refused (no credential): the realtime stream would not end
    assert call.status_code in (401, 405) and "access-control-allow-origin" not in call.headers


def test_a_website_restricted_to_its_origins_refuses_other_pages(api, site):
    settings = api.put(f"/api/websites/{site.website_name}", headers=site.operator,
                       json={"allowedOrigins": [PAGE + "/", "http://localhost:8080"]})
    assert settings.status_code == 200, settings.text
    assert settings.json()["allowedOrigins"] == [PAGE, "http://localhost:8080"]
    customers = len(api.get("/api/customers", headers=site.operator).json())
    body = {"websiteId": str(site.website_id)}
    assert api.post("/api/chat/sessions", json=body, headers={"Origin": "https://evil.example"}).status_code == 403
    assert len(api.get("/api/customers", headers=site.operator).json()) == customers
    visitor = start_session(api, site.website_id)  # no Origin: not a browser page
    conversation_id = api.post("/api/chat/conversations", headers=visitor.headers).json()["_id"]
    attack = api.post("/api/chat/messages", headers={**visitor.headers, "Origin": "https://evil.example"},
                      json={"conversationId": conversation_id, "content": "canary-7f3"})
    assert attack.status_code == 403 and attack.headers["content-type"] == "application/problem+json"
    assert "canary-7f3" not in api.get("/api/messages", params={"conversationId": conversation_id},
                                       headers=site.operator).text
    allowed_call = api.post("/api/chat/messages", headers={**visitor.headers, "Origin": PAGE},
                            json={"conversationId": conversation_id, "content": "hello"})
    assert allowed_call.status_code == 200
    assert api.post("/api/chat/sessions", json=body, headers={"Origin": "http://localhost:8080"}).status_code == 200
