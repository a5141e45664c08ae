"""The inbox mode of GET /api/conversations: tabs, counts, scopes, paging and refusals."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
import pytest

from events import types as ev
from events.store import EventStore
from tests.support.inbox_seed import Seeder
from events.ids import new_id
from projections.inbox import InboxProjection
from projections.runner import rebuild
from projections.views.inbox import DEFAULT_PAGE, MAX_PAGE, Walk, scope_of, walk_tab


@pytest.fixture
def seed(server, tenant) -> Seeder:
    return Seeder(server, tenant.org_id, tenant.website_id)


def inbox(http, tenant, headers=None, **params):
    response = http.get("/api/conversations", headers=headers or tenant.operator,
                        params={"websiteId": str(tenant.website_id), **params})
    assert response.status_code == 200, response.text
    return response.json()


def post_message(http, tenant, conversation_id, content, sender="customer", **extra):
    response = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": str(conversation_id), "content": content, "from": sender, **extra})
    assert response.status_code == 200, response.text
    return response.json()["_id"]


def mark_read(http, tenant, message_id):
    response = http.post(f"/api/messages/{message_id}/read", headers=tenant.operator)
    assert response.status_code == 200, response.text


def ids(page):
    return [c["_id"] for c in page["conversations"]]


def test_every_tab_and_count_on_a_seeded_website(http, tenant, seed):
    colleague_email, colleague = seed.operator()
    c = {name: str(seed.conversation()) for name in
         ("unread", "read", "resolved_unread", "quiet", "spam", "mention", "colleague", "spam_mention")}
    post_message(http, tenant, c["unread"], "hello?")
    mark_read(http, tenant, post_message(http, tenant, c["read"], "thanks"))
    post_message(http, tenant, c["resolved_unread"], "still broken")
    seed.flags(c["resolved_unread"], resolved=True)
    post_message(http, tenant, c["spam"], "cheap pills")
    seed.flags(c["spam"], spam=True)
    post_message(http, tenant, c["mention"], f"can you take this, @{tenant.operator_email.upper()}?",
                 sender="operator", internal=True)
    post_message(http, tenant, c["colleague"], f"for @{colleague_email}.", sender="operator", internal=True)
    post_message(http, tenant, c["spam_mention"], f"@{tenant.operator_email} spam?", sender="operator", internal=True)
    seed.flags(c["spam_mention"], spam=True)
    # a mention in a message that is not an internal note does not count
    post_message(http, tenant, c["quiet"], f"@{tenant.operator_email}", sender="operator")

    expected = {
        "all": {"unread", "read", "resolved_unread", "quiet", "mention", "colleague"},
        "unread": {"unread", "resolved_unread"},
        "unresolved": {"unread", "read", "quiet", "mention", "colleague"},
        "resolved": {"resolved_unread"},
        "mentions": {"mention"},
        "spam": {"spam", "spam_mention"},
        "mine": set(),
        "unassigned": {"unread", "read", "quiet", "mention", "colleague"},
        "snoozed": set(),
    }
    counts = {tab: len(names) for tab, names in expected.items()}
    for tab, names in expected.items():
        page = inbox(http, tenant, inboxFilter=tab)
        assert page["counts"] == counts
        assert page["total"] == 8
        assert page["filteredTotal"] == len(names)
        assert set(ids(page)) == {c[name] for name in names}
        times = [conv["lastEditTime"] for conv in page["conversations"]]
        assert times == sorted(times, reverse=True)
    unread_page = inbox(http, tenant, inboxFilter="unread")["conversations"]
    assert all(conv["unread"] for conv in unread_page)

    # the colleague sees their own mention, not ours
    theirs = inbox(http, tenant, headers=colleague, inboxFilter="mentions")
    assert ids(theirs) == [c["colleague"]] and theirs["counts"]["mentions"] == 1


def test_unread_follows_the_latest_visitor_message(http, tenant, seed):
    conversation = seed.conversation()
    first = post_message(http, tenant, conversation, "one")
    assert inbox(http, tenant, inboxFilter="unread")["filteredTotal"] == 1
    second = post_message(http, tenant, conversation, "two")
    mark_read(http, tenant, first)  # an older message's receipt leaves the newer one unread
    assert inbox(http, tenant, inboxFilter="unread")["filteredTotal"] == 1
    mark_read(http, tenant, second)
    mark_read(http, tenant, second)
    assert inbox(http, tenant, inboxFilter="unread")["counts"]["unread"] == 0
    post_message(http, tenant, conversation, "operator reply", sender="operator")
    assert inbox(http, tenant, inboxFilter="unread")["filteredTotal"] == 0
    post_message(http, tenant, conversation, "three")
    assert ids(inbox(http, tenant, inboxFilter="unread")) == [str(conversation)]


def test_paging_limit_skip_direction_and_fields(http, tenant, seed):
    now = datetime.now(timezone.utc)
    newest_first = [str(seed.conversation(at=now - timedelta(minutes=m))) for m in range(5)]
    page = inbox(http, tenant, inboxFilter="all", limit="2", skip="1")
    assert ids(page) == newest_first[1:3]
    assert page["filteredTotal"] == 5 and page["total"] == 5
    assert ids(inbox(http, tenant, inboxFilter="all", sortField="lastEditTime", sortDirection="ASC")) == \
        newest_first[::-1]
    projected = inbox(http, tenant, inboxFilter="all", fields="resolved,unread")["conversations"]
    assert projected[0].keys() == {"_id", "resolved", "unread"}


def test_limit_is_capped_and_defaults_to_a_bounded_page(http, tenant, seed):
    now = datetime.now(timezone.utc)
    assert inbox(http, tenant, inboxFilter="all")["conversations"] == []
    assert DEFAULT_PAGE == 20 and MAX_PAGE == 100
    for m in range(DEFAULT_PAGE + 1):
        seed.conversation(at=now - timedelta(seconds=m))
    assert len(inbox(http, tenant, inboxFilter="all")["conversations"]) == DEFAULT_PAGE
    assert len(inbox(http, tenant, inboxFilter="all", limit="100000")["conversations"]) == DEFAULT_PAGE + 1


def test_time_windows(http, tenant, seed):
    now = datetime.now(timezone.utc)
    recent = str(seed.conversation(at=now - timedelta(minutes=30)))
    this_week = str(seed.conversation(at=now - timedelta(days=3)))
    seed.conversation(at=now - timedelta(days=10))
    hour = inbox(http, tenant, inboxFilter="all", conversationFilter="last-hour")
    assert ids(hour) == [recent] and hour["total"] == 1 and hour["counts"]["all"] == 1
    week = inbox(http, tenant, inboxFilter="unresolved", conversationFilter="last-week")
    assert ids(week) == [recent, this_week] and week["total"] == 2
    assert inbox(http, tenant, inboxFilter="all", conversationFilter="all")["total"] == 3


@pytest.mark.parametrize("zone_name", ["Pacific/Kiritimati", "America/Los_Angeles"])
def test_today_starts_at_midnight_in_the_given_timezone(http, tenant, seed, zone_name):
    zone = ZoneInfo(zone_name)
    midnight = datetime.now(zone).replace(hour=0, minute=0, second=0, microsecond=0).astimezone(timezone.utc)
    before = seed.conversation(at=midnight - timedelta(seconds=1))
    at_midnight = seed.conversation(at=midnight)
    after = seed.conversation(at=midnight + timedelta(minutes=1))
    page = inbox(http, tenant, inboxFilter="all", conversationFilter="today", timezone=zone_name)
    assert set(ids(page)) == {str(at_midnight), str(after)}
    assert page["counts"]["all"] == 2 and page["total"] == 2
    # the same seconds seen from UTC: the boundary moves with the zone
    utc_midnight = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    in_utc_today = {str(c) for c, at in ((before, midnight - timedelta(seconds=1)), (at_midnight, midnight),
                                         (after, midnight + timedelta(minutes=1))) if at >= utc_midnight}
    assert set(ids(inbox(http, tenant, inboxFilter="all", conversationFilter="today"))) == in_utc_today


def test_online_follows_the_visitor_stream(http, tenant, seed):
    visitor = seed.customer()
    online_conversation = str(seed.conversation(customer_id=visitor))
    post_message(http, tenant, online_conversation, "anyone there?")
    seed.conversation()  # a visitor without an open stream
    assert inbox(http, tenant, inboxFilter="all", conversationFilter="online")["total"] == 0
    stream = seed.open_stream(visitor)
    second_tab = seed.open_stream(visitor)
    page = inbox(http, tenant, inboxFilter="unread", conversationFilter="online")
    assert ids(page) == [online_conversation]
    assert page["total"] == 1 and page["counts"]["unread"] == 1 and page["counts"]["all"] == 1
    seed.close_stream(stream)
    assert inbox(http, tenant, inboxFilter="all", conversationFilter="online")["total"] == 1
    seed.close_stream(second_tab)
    page = inbox(http, tenant, inboxFilter="all", conversationFilter="online")
    assert page["total"] == 0 and page["conversations"] == []


def test_plain_list_is_unchanged(http, tenant, seed):
    conversation = str(seed.conversation())
    response = http.get("/api/conversations", headers=tenant.operator, params={"websiteId": str(tenant.website_id)})
    assert response.status_code == 200 and [c["_id"] for c in response.json()] == [conversation]


@pytest.mark.parametrize("params, field", [
    ({"inboxFilter": "starred"}, "inboxFilter"),
    ({"inboxFilter": "all", "conversationFilter": "yesterday"}, "conversationFilter"),
    ({"inboxFilter": "all", "sortField": "color"}, "sortField"),
    ({"inboxFilter": "all", "sortDirection": "SIDEWAYS"}, "sortDirection"),
    ({"inboxFilter": "all", "conversationFilter": "today", "timezone": "Mars/Olympus_Mons"}, "timezone"),
    ({"inboxFilter": "all", "timezone": "../../etc/passwd"}, "timezone"),
    ({"inboxFilter": "all", "fields": "secret"}, "fields"),
    ({"inboxFilter": "all", "limit": "-1"}, "limit"),
    ({"inboxFilter": "all", "spam": "true"}, "spam"),
    ({"conversationFilter": "today"}, "conversationFilter"),
])
def test_bad_parameters_answer_400_naming_them(http, tenant, params, field):
    response = http.get("/api/conversations", headers=tenant.operator,
                        params={"websiteId": str(tenant.website_id), **params})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == field


def test_website_is_required_and_must_be_the_operators(http, tenant, other_tenant):
    missing = http.get("/api/conversations", headers=tenant.operator, params={"inboxFilter": "all"})
    assert missing.status_code == 400 and missing.json()["field"] == "websiteId"
    foreign = http.get("/api/conversations", headers=tenant.operator,
                       params={"inboxFilter": "all", "websiteId": str(other_tenant.website_id)})
    assert foreign.status_code == 404
    nonsense = http.get("/api/conversations", headers=tenant.operator,
                        params={"inboxFilter": "all", "websiteId": "not-an-id"})
    assert nonsense.status_code == 404


def test_api_keys_get_403(http, tenant):
    response = http.get("/api/conversations", headers=tenant.key(),
                        params={"inboxFilter": "all", "websiteId": str(tenant.website_id)})
    assert response.status_code == 403
    assert http.get("/api/conversations", params={"inboxFilter": "all"}).status_code == 401


def test_mentions_need_an_operator_of_the_same_organization(http, tenant, other_tenant, seed):
    conversation = seed.conversation()
    post_message(http, tenant, conversation, f"@{other_tenant.operator_email} look", sender="operator",
                 internal=True)
    other = http.get("/api/conversations", headers=other_tenant.operator,
                     params={"inboxFilter": "mentions", "websiteId": str(other_tenant.website_id)})
    assert other.json()["counts"]["mentions"] == 0
    assert inbox(http, tenant, inboxFilter="mentions")["filteredTotal"] == 0


def test_rebuilt_projection_gives_the_same_answer(http, tenant, seed, server):
    conversation = seed.conversation()
    post_message(http, tenant, conversation, "hi")
    seed.flags(conversation, resolved=True)
    before = inbox(http, tenant, inboxFilter="resolved")
    store = EventStore(server.database_url, pool_size=1)
    try:
        asyncio.run(rebuild(server.database_url, InboxProjection(), store))
    finally:
        store.close()
    assert inbox(http, tenant, inboxFilter="resolved") == before


def test_mentions_follow_the_conversation_into_a_window_and_out_of_spam(http, tenant, seed):
    conversation = seed.conversation(at=datetime.now(timezone.utc) - timedelta(days=3))
    seed.append(ev.MessageCreated(
        org_id=tenant.org_id, at=datetime.now(timezone.utc) - timedelta(days=3), message_id=new_id(),
        conversation_id=conversation, website_id=tenant.website_id, content=f"@{tenant.operator_email}",
        sender="operator", internal=True))
    assert inbox(http, tenant, inboxFilter="mentions", conversationFilter="last-week")["filteredTotal"] == 1
    assert inbox(http, tenant, inboxFilter="mentions", conversationFilter="last-hour")["filteredTotal"] == 0
    post_message(http, tenant, conversation, "back again")
    hour = inbox(http, tenant, inboxFilter="mentions", conversationFilter="last-hour")
    assert ids(hour) == [str(conversation)] and hour["counts"]["mentions"] == 1
    seed.flags(conversation, spam=True)
    assert inbox(http, tenant, inboxFilter="mentions")["counts"]["mentions"] == 0
    seed.flags(conversation, spam=False)
    assert ids(inbox(http, tenant, inboxFilter="mentions")) == [str(conversation)]


def rest_walk(http, tenant, page_size: int, **params) -> Walk:
    """What a client meets paging through the listing with `limit` and `skip` until a page is not full."""
    seen, pages = [], 0
    while True:
        page = ids(inbox(http, tenant, limit=page_size, skip=len(seen), **params))
        seen += page
        pages += bool(page) or not pages
        if len(page) < page_size:
            return Walk(conversations=len(set(seen)), pages=pages)


def test_walking_a_tab_meets_what_paging_through_the_listing_meets(http, tenant, seed, server):
    seed.conversations(23)  # at one time: the walk must order ties as the listing does
    seed.conversations(9, at=datetime.now(timezone.utc) - timedelta(hours=3))
    seed.conversations(4, resolved=True)
    seed.conversations(2, spam=True)
    for _ in range(3):  # three visitors online now, one of them with a conversation resolved
        visitor = seed.customer()
        seed.open_stream(visitor)
        online = seed.conversation(customer_id=visitor)
    seed.flags(online, resolved=True)

    async def walk(page_size: int, inbox_filter: str, conversation_filter: str) -> Walk:
        async with await psycopg.AsyncConnection.connect(server.database_url, autocommit=True) as conn:
            scope = await scope_of(conn, tenant.website_id, conversation_filter, ZoneInfo("UTC"))
            return await walk_tab(conn, scope, inbox_filter, page_size)

    for page_size, inbox_filter, conversation_filter, expected in (
            (1, "unresolved", "all", Walk(34, 34)), (5, "unresolved", "all", Walk(34, 7)),
            (17, "unresolved", "all", Walk(34, 2)), (34, "unresolved", "all", Walk(34, 1)),
            (35, "unresolved", "all", Walk(34, 1)), (5, "unresolved", "last-hour", Walk(25, 5)),
            (1, "unresolved", "online", Walk(2, 2)), (3, "resolved", "all", Walk(5, 2)),
            (2, "spam", "all", Walk(2, 1)), (4, "all", "all", Walk(39, 10)), (MAX_PAGE, "unread", "all", Walk(0, 1))):
        walked = asyncio.run(walk(page_size, inbox_filter, conversation_filter))
        assert walked == expected == rest_walk(http, tenant, page_size, inboxFilter=inbox_filter,
                                               conversationFilter=conversation_filter), (page_size, inbox_filter)


def test_a_database_from_before_memberships_keeps_its_operators_mentionable(server):
    org_id, operator_id = new_id(), new_id()
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE rm_inbox_operators (email text PRIMARY KEY, operator_id uuid NOT NULL, "
                     "org_id uuid NOT NULL)")
        conn.execute("INSERT INTO rm_inbox_operators VALUES ('old@example.com', %s, %s)", (operator_id, org_id))

    async def create() -> None:
        async with await psycopg.AsyncConnection.connect(server.database_url, autocommit=True) as conn:
            await InboxProjection().create(conn)
    asyncio.run(create())

    with psycopg.connect(server.database_url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('rm_inbox_operators')").fetchone()[0] is None
        assert conn.execute("SELECT operator_id FROM rm_inbox_members WHERE org_id = %s AND email = %s",
                            (org_id, "old@example.com")).fetchone() == (operator_id,)
