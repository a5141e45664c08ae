"""GET /api/search: words, parts of words and e-mail addresses, customers, notes for operators only, the
filters, cursor pages, highlighted snippets, and the organization's isolation."""

from __future__ import annotations

import uuid

import pytest

from commands import conversations, labels
from commands.conversations import ConversationChange
from commands.principal import Principal


def create_customer(http, tenant, website_id=None, **fields) -> str:
    response = http.post("/api/customers", headers=tenant.operator,
                         json={"websiteId": str(website_id or tenant.website_id), **fields})
    assert response.status_code == 200, response.text
    return response.json()["_id"]


def create_conversation(http, tenant, customer_id=None, website_id=None) -> str:
    response = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(website_id or tenant.website_id),
        "customerId": customer_id or create_customer(http, tenant, website_id)})
    assert response.status_code == 200, response.text
    return response.json()["_id"]


def post(http, tenant, conversation_id, content, sender="customer", **extra) -> str:
    response = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation_id, "content": content, "from": sender, **extra})
    assert response.status_code == 200, response.text
    return response.json()["_id"]


def search(http, headers, q, status=200, **params):
    response = http.get("/api/search", headers=headers, params={"q": q, **params})
    assert response.status_code == status, response.text
    return response.json()


def message_ids(page) -> list[str]:
    return [item["messageId"] for item in page["items"]]


def unique_word() -> str:
    return "zq" + uuid.uuid4().hex[:10]


def test_a_word_a_word_start_and_the_snippet(http, tenant):
    word = unique_word()
    customer = create_customer(http, tenant, nickname="Ada", email="ada@example.com")
    conversation = create_conversation(http, tenant, customer)
    found = post(http, tenant, conversation, f"My {word} order <b>never</b> came & I want a refund")
    post(http, tenant, conversation, "nothing to see here")

    page = search(http, tenant.operator, word)
    assert message_ids(page) == [found]
    item = page["items"][0]
    assert item["conversationId"] == conversation
    assert item["customer"] == {"_id": customer, "nickname": "Ada", "email": "ada@example.com"}
    assert item["snippet"] == (f"My <mark>{word}</mark> order &lt;b&gt;never&lt;/b&gt; came &amp; I want a refund")
    assert page["nextCursor"] is None
    # the start of a word, in any case, with another word of the message
    assert message_ids(search(http, tenant.operator, f"{word[:6].upper()} refu")) == [found]
    # every word must be there
    assert search(http, tenant.operator, f"{word} elephant")["items"] == []


def test_parts_of_words_and_e_mail_addresses_are_found_by_trigrams(http, tenant):
    middle = uuid.uuid4().hex[:12]
    conversation = create_conversation(http, tenant)
    found = post(http, tenant, conversation, f"write to billing-{middle}@shop.example please")
    assert message_ids(search(http, tenant.operator, f"billing-{middle}@shop.example")) == [found]
    page = search(http, tenant.operator, middle[2:9])  # the middle of a word
    assert message_ids(page) == [found]
    assert f"<mark>{middle[2:9]}</mark>" in page["items"][0]["snippet"]


def test_customers_by_name_e_mail_address_and_phone_number(http, tenant):
    tag = uuid.uuid4().hex[:8]
    customer = create_customer(http, tenant, nickname=f"Grace{tag} Hopper", email=f"grace.{tag}@navy.example",
                               phone=f"+1 555 {tag[:4]}")
    first, second = create_conversation(http, tenant, customer), create_conversation(http, tenant, customer)
    for query in (f"grace{tag}", f"grace.{tag}@navy", f"555 {tag[:4]}"):
        page = search(http, tenant.operator, query)
        assert {item["conversationId"] for item in page["items"]} == {first, second}, query
        assert all(item["messageId"] is None and item["customer"]["_id"] == customer for item in page["items"])
        assert "<mark>" in page["items"][0]["snippet"]


def test_notes_are_found_by_operators_only(http, tenant):
    word = unique_word()
    conversation = create_conversation(http, tenant)
    reply = post(http, tenant, conversation, f"{word} in a reply", sender="operator")
    note = post(http, tenant, conversation, f"{word} in a note", sender="operator", internal=True)
    assert set(message_ids(search(http, tenant.operator, word))) == {reply, note}
    reader = tenant.key("conversations:read,messages:read")
    assert message_ids(search(http, reader, word)) == [reply]


def test_an_api_key_needs_both_scopes(http, tenant):
    for scopes in ("conversations:read", "messages:read"):
        search(http, tenant.key(scopes), "anything", status=403)


def test_another_organization_sees_nothing(http, tenant, other_tenant):
    word = unique_word()
    post(http, tenant, create_conversation(http, tenant), word)
    customer = create_customer(http, tenant, nickname=word)
    create_conversation(http, tenant, customer)
    assert len(search(http, tenant.operator, word)["items"]) == 2
    assert search(http, other_tenant.operator, word)["items"] == []
    assert search(http, other_tenant.key("conversations:read,messages:read"), word)["items"] == []
    # nor by naming the website
    assert search(http, other_tenant.operator, word, websiteId=str(tenant.website_id))["items"] == []


def test_filters_website_resolved_and_period(http, tenant):
    word = unique_word()
    other_website, _ = tenant.add_website()
    here = create_conversation(http, tenant)
    there = create_conversation(http, tenant, website_id=other_website)
    in_here, in_there = post(http, tenant, here, word), post(http, tenant, there, word)
    assert message_ids(search(http, tenant.operator, word, websiteId=str(other_website))) == [in_there]
    response = http.patch(f"/api/conversations/{here}", headers=tenant.operator, json={"resolved": True})
    assert response.status_code == 200, response.text
    assert message_ids(search(http, tenant.operator, word, resolved="true")) == [in_here]
    assert message_ids(search(http, tenant.operator, word, resolved="false")) == [in_there]
    assert search(http, tenant.operator, word, since="2999-01-01T00:00:00Z")["items"] == []
    assert len(search(http, tenant.operator, word, until="2999-01-01T00:00:00Z")["items"]) == 2
    # a key pinned to a website finds that website's only, and may not name another
    pinned = tenant.key("conversations:read,messages:read", website=tenant.website_id)
    assert message_ids(search(http, pinned, word)) == [in_here]
    search(http, pinned, word, status=403, websiteId=str(other_website))


def test_cursor_pages_walk_every_match_once_newest_first(http, tenant):
    word = unique_word()
    conversation = create_conversation(http, tenant)
    posted = [post(http, tenant, conversation, f"{word} number {n}") for n in range(7)]
    seen, cursor = [], None
    while True:
        page = search(http, tenant.operator, word, limit=3, **({"cursor": cursor} if cursor else {}))
        seen += message_ids(page)
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == posted[::-1]
    # a cursor belongs to its query
    first = search(http, tenant.operator, word, limit=3)
    problem = search(http, tenant.operator, "other", status=400, cursor=first["nextCursor"])
    assert "cursor" in problem["detail"]
    search(http, tenant.operator, word, status=400, cursor=first["nextCursor"][:-2] + "AA")


@pytest.mark.parametrize("params", [{"q": ""}, {"q": "x" * 201}, {"q": "a", "since": "yesterday"},
                                    {"q": "a", "websiteId": "not-an-id"}, {"q": "a", "resolved": "maybe"},
                                    {"q": "a", "limit": "-1"}])
def test_malformed_requests_are_refused(http, tenant, params):
    response = http.get("/api/search", headers=tenant.operator, params=params)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


def test_filters_assignee_and_labels(http, tenant):
    """Assigned and labelled through the workflow's commands (the foundation's), then searched by them."""
    word = unique_word()
    colleague = tenant.add_operator("agent")
    me = http.get("/api/operators/me", headers=tenant.operator).json()
    owner = Principal("operator", tenant.org_id, uuid.uuid4(), operator_id=uuid.UUID(me["_id"]), role="owner")
    first, second, third = (create_conversation(http, tenant) for _ in range(3))
    found = {conversation: post(http, tenant, conversation, word) for conversation in (first, second, third)}
    store = tenant.server.store()
    try:
        for name in ("Billing", "VIP"):
            labels.create_label(store, owner, labels.LabelBody(name=name))
        for conversation, change in (
                (first, ConversationChange(assignee_id=str(colleague.id), labels=["Billing", "VIP"])),
                (second, ConversationChange(assignee_id=str(colleague.id), labels=["Billing"])),
                (third, ConversationChange(labels=["VIP"]))):
            conversations.update_conversation(store, owner, uuid.UUID(conversation), change)
    finally:
        store.close()
    assert set(message_ids(search(http, tenant.operator, word, assigneeId=str(colleague.id)))) == {
        found[first], found[second]}
    assert set(message_ids(search(http, tenant.operator, word, labels="billing"))) == {found[first], found[second]}
    assert message_ids(search(http, tenant.operator, word, labels="VIP,Billing")) == [found[first]]
    assert message_ids(search(http, tenant.operator, word, labels="VIP", assigneeId=str(colleague.id))) == [
        found[first]]
    assert search(http, tenant.operator, word, labels="VIP,no such label")["items"] == []
    search(http, tenant.operator, word, status=400, assigneeId="nobody")


@pytest.mark.parametrize("q", ["'", "\\", "a\\b", "C:\\Users\\ada", "foo:*", "!", "a & b | c", "(", "o'brien",
                               "ünïcödé", "http://x.example/a?b=c", "-1", "::", "%_%", "<mark>", "😀 emoji"])
def test_any_text_is_searched_never_an_error(http, tenant, q):
    conversation = create_conversation(http, tenant)
    found = post(http, tenant, conversation, f"before {q} after")
    page = search(http, tenant.operator, q)
    if len(q.strip()) >= 3 or any(ch.isalnum() for ch in q):
        assert found in message_ids(page), q
