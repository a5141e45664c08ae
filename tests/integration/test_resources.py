"""The core REST resources through HTTP: websites, customers, conversations, messages."""

from __future__ import annotations

import uuid

import pytest


def create_customer(http, tenant, headers=None, **fields):
    body = {"websiteId": str(tenant.website_id), **fields}
    response = http.post("/api/customers", json=body, headers=headers or tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def create_conversation(http, tenant, customer_id, headers=None):
    response = http.post("/api/conversations", json={"websiteId": str(tenant.website_id), "customerId": customer_id},
                         headers=headers or tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def post_message(http, tenant, conversation_id, content="hello", sender="customer", headers=None, **extra):
    response = http.post("/api/messages", json={"conversationId": conversation_id, "content": content,
                                                "from": sender, **extra}, headers=headers or tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def conversation(http, tenant):
    customer = create_customer(http, tenant, email="visitor@example.com")
    return create_conversation(http, tenant, customer["_id"])


def test_websites_list_and_single_by_vanity_id(http, tenant):
    key = tenant.key("websites:read")
    listed = http.get("/api/websites", headers=key).json()
    assert [w["websiteName"] for w in listed] == [tenant.website_name]
    assert "identitySecret" not in listed[0]
    one = http.get(f"/api/websites/{tenant.website_name}", headers=key)
    assert one.status_code == 200 and one.json()["_id"] == str(tenant.website_id)
    assert http.get("/api/websites/no-such-site", headers=key).status_code == 404


def test_customer_create_read_update_and_filters(http, tenant):
    created = create_customer(http, tenant, email="ann@example.com", nickname="Ann", phone="+100", language="fr")
    assert created["websiteId"] == str(tenant.website_id)
    assert (created["email"], created["nickname"], created["phone"], created["language"]) == (
        "ann@example.com", "Ann", "+100", "fr")
    create_customer(http, tenant, email="bob@example.com")

    by_email = http.get("/api/customers", params={"email": "ann@example.com"}, headers=tenant.operator).json()
    assert [c["_id"] for c in by_email] == [created["_id"]]
    projected = http.get("/api/customers", params={"websiteId": str(tenant.website_id), "fields": "email"},
                         headers=tenant.operator).json()
    assert all(set(c) == {"_id", "email"} for c in projected) and len(projected) == 2

    updated = http.put(f"/api/customers/{created['_id']}", json={"nickname": "Annie", "language": "de"},
                       headers=tenant.operator)
    assert updated.status_code == 200
    assert (updated.json()["nickname"], updated.json()["language"], updated.json()["email"]) == (
        "Annie", "de", "ann@example.com")
    assert http.get(f"/api/customers/{created['_id']}", headers=tenant.operator).json()["nickname"] == "Annie"


def test_customer_update_refuses_unknown_fields_and_keeps_data(http, tenant):
    created = create_customer(http, tenant, nickname="Keep")
    response = http.put(f"/api/customers/{created['_id']}", json={"nickname": "X", "isAdmin": True},
                        headers=tenant.operator)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert http.get(f"/api/customers/{created['_id']}", headers=tenant.operator).json()["nickname"] == "Keep"


def test_customer_website_comes_from_pinned_key_or_body(http, tenant):
    other_website, _ = tenant.add_website()
    pinned = tenant.key("customers:write,customers:read", website=other_website)
    created = http.post("/api/customers", json={"email": "p@example.com"}, headers=pinned)
    assert created.status_code == 200 and created.json()["websiteId"] == str(other_website)
    unpinned = tenant.key("customers:write")
    missing = http.post("/api/customers", json={"email": "p@example.com"}, headers=unpinned)
    assert missing.status_code == 400 and missing.json()["field"] == "websiteId"
    elsewhere = http.post("/api/customers", json={"websiteId": str(tenant.website_id)}, headers=pinned)
    assert elsewhere.status_code == 400


def test_user_id_filter(http, tenant, server):
    from commands.streams import now
    from events import types as ev
    from events.store import Pending

    customer_id = uuid.uuid4()
    store = server.store()
    try:
        position = store.append(Pending(customer_id, 1, ev.CustomerCreated(
            org_id=tenant.org_id, at=now(), customer_id=customer_id, website_id=tenant.website_id, user_id="u-42")))
    finally:
        store.close()
    server.wait_projected(position)
    found = http.get("/api/customers", params={"userId": "u-42"}, headers=tenant.operator).json()
    assert [c["_id"] for c in found] == [str(customer_id)] and found[0]["userId"] == "u-42"


def test_conversation_list_filters_sort_limit_skip(http, tenant):
    customer = create_customer(http, tenant)
    first = create_conversation(http, tenant, customer["_id"])
    second = create_conversation(http, tenant, customer["_id"])
    third = create_conversation(http, tenant, create_customer(http, tenant)["_id"])
    post_message(http, tenant, first["_id"])  # moves the first to the newest lastEditTime

    newest_first = http.get("/api/conversations", params={"sortField": "lastEditTime"}, headers=tenant.operator).json()
    assert [c["_id"] for c in newest_first] == [first["_id"], third["_id"], second["_id"]]
    ascending = http.get("/api/conversations", params={"sortField": "lastEditTime", "sortDirection": "ASC"},
                         headers=tenant.operator).json()
    assert [c["_id"] for c in ascending] == [second["_id"], third["_id"], first["_id"]]
    page = http.get("/api/conversations", params={"limit": 1, "skip": 1}, headers=tenant.operator).json()
    assert [c["_id"] for c in page] == [third["_id"]]
    by_customer = http.get("/api/conversations", params={"customerId": customer["_id"]}, headers=tenant.operator).json()
    assert {c["_id"] for c in by_customer} == {first["_id"], second["_id"]}
    assert http.get("/api/conversations", params={"resolved": "true"}, headers=tenant.operator).json() == []
    assert len(http.get("/api/conversations", params={"spam": "false"}, headers=tenant.operator).json()) == 3
    one = http.get(f"/api/conversations/{first['_id']}", headers=tenant.key("conversations:read"))
    assert one.status_code == 200 and one.json()["resolved"] is False


@pytest.mark.parametrize("params, field", [
    ({"sortField": "secret"}, "sortField"), ({"sortDirection": "UP"}, "sortDirection"),
    ({"limit": "ten"}, "limit"), ({"skip": "-1"}, "skip"), ({"resolved": "maybe"}, "resolved"),
    ({"limit": str(2**63)}, "limit"), ({"skip": str(2**63)}, "skip"),
    ({"fields": "_id,passwordHash"}, "fields"),
])
def test_bad_list_parameters_name_the_parameter(http, tenant, params, field):
    response = http.get("/api/conversations", params=params, headers=tenant.operator)
    assert response.status_code == 400 and response.json().get("field") == field


@pytest.mark.parametrize("path, params", [
    ("/api/conversations", {"websiteId": ""}), ("/api/customers", {"websiteId": ""}),
    ("/api/documents", {"websiteId": ""}), ("/api/webhooksubscriptions", {"websiteId": ""}),
    ("/api/apikeys", {"websiteId": ""}), ("/api/campaigns", {"websiteId": ""}), ("/api/events", {"websiteId": ""}),
    ("/api/documents/search", {"query": "password", "websiteId": ""}),
    ("/api/conversations", {"customerId": ""}), ("/api/conversations", {"resolved": ""}),
    ("/api/messages", {"conversationId": ""}), ("/api/events", {"conversationId": ""}), ("/api/audit", {"actorId": ""}),
    ("/api/conversations", {"fields": ""}), ("/api/customers", {"fields": ""}), ("/api/documents", {"fields": ""}),
])
def test_an_empty_filter_is_refused_not_read_as_every_record(http, tenant, path, params):
    """`?websiteId=` once answered every website's records (while `?websiteId=not-a-uuid` was a 400), and an
    empty `fields` was taken for none: an empty value is malformed like any other."""
    create_conversation(http, tenant, create_customer(http, tenant, email="seen@example.com")["_id"])
    answer = http.get(path, params=params, headers=tenant.operator)
    assert answer.status_code == 400, (path, params, answer.text)
    assert answer.json()["field"] == next(name for name in params if name != "query")
    assert answer.headers["content-type"] == "application/problem+json"  # a problem, not records


def test_message_create_list_get_and_last_edit_time(http, tenant, conversation):
    before = conversation["lastEditTime"]
    first = post_message(http, tenant, conversation["_id"], "first")
    reply = post_message(http, tenant, conversation["_id"], "answer", sender="operator",
                         replyToMessageId=first["_id"])
    assert reply["replyToMessageId"] == first["_id"] and reply["from"] == "operator"
    after = http.get(f"/api/conversations/{conversation['_id']}", headers=tenant.operator).json()["lastEditTime"]
    assert after > before

    listed = http.get("/api/messages", params={"conversationId": conversation["_id"], "sortField": "creationTime",
                                               "sortDirection": "DESC"}, headers=tenant.operator).json()
    assert [m["content"] for m in listed] == ["answer", "first"]
    limited = http.get("/api/messages", params={"conversationId": conversation["_id"], "limit": 1, "skip": 1},
                       headers=tenant.operator).json()
    assert [m["content"] for m in limited] == ["answer"]
    single = http.get(f"/api/messages/{first['_id']}", headers=tenant.key("messages:read"))
    assert single.status_code == 200 and single.json()["content"] == "first"


def test_reply_to_is_ignored_unless_an_earlier_message_of_the_same_conversation(http, tenant, conversation):
    other = create_conversation(http, tenant, create_customer(http, tenant)["_id"])
    foreign = post_message(http, tenant, other["_id"], "elsewhere")
    message = post_message(http, tenant, conversation["_id"], "x", replyToMessageId=foreign["_id"])
    assert message["replyToMessageId"] is None
    unknown = post_message(http, tenant, conversation["_id"], "y", replyToMessageId=str(uuid.uuid4()))
    assert unknown["replyToMessageId"] is None
    garbage = post_message(http, tenant, conversation["_id"], "z", replyToMessageId="not-an-id")
    assert garbage["replyToMessageId"] is None


def test_read_receipt_is_idempotent(http, tenant, conversation):
    message = post_message(http, tenant, conversation["_id"])
    first = http.post(f"/api/messages/{message['_id']}/read", headers=tenant.operator)
    again = http.post(f"/api/messages/{message['_id']}/read", headers=tenant.operator)
    assert first.status_code == again.status_code == 200
    assert again.json()["read"] is True
    assert http.post(f"/api/messages/{uuid.uuid4()}/read", headers=tenant.operator).status_code == 404


@pytest.mark.parametrize("body, field", [
    ({"content": "x", "from": "customer"}, "conversationId"),
    ({"conversationId": "C", "content": "x", "from": "robot"}, "from"),
    ({"conversationId": "C", "content": 5, "from": "customer"}, "content"),
    ({"conversationId": "C", "content": "", "from": "customer"}, "content"),
    ({"conversationId": "C", "content": "x" * 20_001, "from": "customer"}, "content"),
])
def test_bad_message_bodies_are_refused_and_store_nothing(http, tenant, conversation, body, field):
    body = {k: (conversation["_id"] if v == "C" else v) for k, v in body.items()}
    response = http.post("/api/messages", json=body, headers=tenant.operator)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["field"] == field and problem["status"] == 400 and problem["type"] and problem["title"]
    assert http.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=tenant.operator).json() == []


def test_nul_characters_are_refused_and_store_nothing(http, tenant, conversation):
    """PostgreSQL text cannot hold U+0000: a message with one was once taken, then stopped every read
    model at it. Bodies and URLs holding one are refused and name the field; the text `\\u0000` is not one."""
    def refused(response, field):
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json" and response.json().get("field") == field

    messages = {"conversationId": conversation["_id"]}
    refused(http.post("/api/messages", json={**messages, "content": "a\x00b", "from": "customer"},
                      headers=tenant.operator), "content")
    customer = create_customer(http, tenant, nickname="Ann")
    refused(http.put(f"/api/customers/{customer['_id']}", json={"nickname": "A\x00nn"}, headers=tenant.operator),
            "nickname")
    refused(http.post("/api/operators/sessions", json={"email": tenant.operator_email + "\x00", "password": "x"}),
            "email")
    refused(http.get("/api/customers", params={"email": "a\x00@example.com"}, headers=tenant.operator), "email")
    refused(http.get(f"/api/websites/{tenant.website_name}%00", headers=tenant.operator), None)

    literal = post_message(http, tenant, conversation["_id"], "the text \\u0000 is not a NUL")
    assert [m["content"] for m in http.get("/api/messages", params=messages, headers=tenant.operator).json()] == [
        literal["content"]] == ["the text \\u0000 is not a NUL"]
    assert http.get(f"/api/customers/{customer['_id']}", headers=tenant.operator).json()["nickname"] == "Ann"


def test_malformed_and_oversized_bodies(http, tenant, conversation):
    malformed = http.post("/api/messages", content=b"{not json", headers=tenant.operator)
    assert malformed.status_code == 400 and malformed.headers["content-type"] == "application/problem+json"
    oversized = http.post("/api/messages", headers={**tenant.operator, "content-type": "application/json"},
                          content=b'{"content": "' + b"x" * 2_000_000 + b'"}')
    assert oversized.status_code == 413
    assert oversized.headers["API-Version"] == "1"
    assert http.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=tenant.operator).json() == []


def test_conversation_create_validates_its_references(http, tenant, other_tenant):
    foreign_customer = create_customer(http, other_tenant)
    response = http.post("/api/conversations", json={"websiteId": str(tenant.website_id),
                                                      "customerId": foreign_customer["_id"]}, headers=tenant.operator)
    assert response.status_code == 404
    key = tenant.key("messages:write")
    customer = create_customer(http, tenant)
    assert http.post("/api/conversations", json={"websiteId": str(tenant.website_id), "customerId": customer["_id"]},
                     headers=key).status_code == 200
    assert http.post("/api/conversations", json={"websiteId": str(tenant.website_id), "customerId": customer["_id"]},
                     headers=tenant.key("conversations:read")).status_code == 403
