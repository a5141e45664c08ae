"""Campaigns as a resource: drafts, the list's cursor pages, each state move and refusal, every audience
filter on a seeded website with counts checked by hand, the preview's lack of side effects, and the
organization boundary."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from commands.streams import now
from events import types as ev
from events.store import Pending
from events.ids import new_id


def create(http, tenant, website=None, **fields) -> dict:
    body = {"websiteId": str(website or tenant.website_id), "name": "Spring sale", "content": "20% off today",
            **fields}
    response = http.post("/api/campaigns", json=body, headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def head(server) -> int:
    store = server.store()
    try:
        return store.head()
    finally:
        store.close()


def in_future(seconds: float = 3600) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


def test_a_draft_is_created_read_listed_edited_and_deleted(http, tenant):
    draft = create(http, tenant, audience={"language": ["EN", "fr_CA"], "identified": True})
    assert draft | {"_id": None, "createdAt": None} == {
        "_id": None, "websiteId": str(tenant.website_id), "name": "Spring sale", "content": "20% off today",
        "contentHtml": "<p>20% off today</p>",
        "audience": {"language": ["en", "fr-ca"], "identified": True}, "status": "draft", "scheduledAt": None,
        "createdAt": None, "sentAt": None, "stats": {"recipients": 0, "sent": 0, "replied": 0}}
    assert http.get(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).json() == draft
    edited = http.put(f"/api/campaigns/{draft['_id']}", json={"name": "Summer sale", "audience": {}},
                      headers=tenant.operator)
    assert edited.status_code == 200, edited.text
    assert edited.json() == draft | {"name": "Summer sale", "audience": {}}
    listed = http.get("/api/campaigns", params={"websiteId": str(tenant.website_id)}, headers=tenant.operator).json()
    assert edited.json() in listed
    assert http.delete(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).status_code == 204
    assert http.get(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).status_code == 404
    assert http.delete(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).status_code == 404


def test_only_an_operator_token_may_use_campaigns(http, tenant):
    draft = create(http, tenant)
    key = tenant.key()
    base = f"/api/campaigns/{draft['_id']}"
    for method, path, body in (("GET", "/api/campaigns", None), ("POST", "/api/campaigns", {"name": "x"}),
                               ("GET", base, None), ("PUT", base, {"name": "x"}), ("DELETE", base, None),
                               ("GET", base + "/preview", None), ("POST", base + "/schedule", {"at": in_future()}),
                               ("POST", base + "/send", None), ("POST", base + "/cancel", None)):
        assert http.request(method, path, json=body, headers=key).status_code == 403, (method, path)
        assert http.request(method, path, json=body).status_code == 401, (method, path)
    assert http.get(base, headers=tenant.operator).json() == draft


@pytest.mark.parametrize("body, field", [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"content": ""}, "content"),
    ({"content": " \n "}, "content"),
    ({"colour": "red"}, "colour"),
    ({"audience": {"country": ["fr"]}}, "audience.country"),
    ({"audience": {"language": []}}, "audience.language"),
    ({"audience": {"seenWithinDays": 0}}, "audience.seenWithinDays"),
    ({"audience": {"identified": "yes"}}, "audience.identified"),
    ({"websiteId": "not-an-id"}, "websiteId"),
])
def test_bad_drafts_are_refused_and_store_nothing(http, server, tenant, body, field):
    before = head(server)
    response = http.post("/api/campaigns", json={"websiteId": str(tenant.website_id), "name": "n", "content": "c",
                                                 **body}, headers=tenant.operator)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == field
    assert head(server) == before


def test_bad_edits_are_refused_and_change_nothing(http, tenant):
    draft = create(http, tenant)
    for body in ({"name": ""}, {"websiteId": str(tenant.website_id)}, {"status": "sent"}, {"content": "  "}):
        assert http.put(f"/api/campaigns/{draft['_id']}", json=body, headers=tenant.operator).status_code == 400
    assert http.get(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).json() == draft


def test_another_organization_sees_nothing_and_touches_nothing(http, server, tenant, other_tenant):
    draft = create(http, tenant)
    base = f"/api/campaigns/{draft['_id']}"
    before = head(server)
    for method, path, body in (("GET", base, None), ("PUT", base, {"name": "x"}), ("DELETE", base, None),
                               ("GET", base + "/preview", None), ("POST", base + "/schedule", {"at": in_future()}),
                               ("POST", base + "/send", None), ("POST", base + "/cancel", None)):
        assert http.request(method, path, json=body, headers=other_tenant.operator).status_code == 404, (method, path)
    assert http.post("/api/campaigns", json={"websiteId": str(tenant.website_id), "name": "n", "content": "c"},
                     headers=other_tenant.operator).status_code == 404
    assert http.get("/api/campaigns", headers=other_tenant.operator).json() == []
    assert http.get("/api/campaigns", params={"pagination": "cursor"},
                    headers=other_tenant.operator).json() == {"items": [], "nextCursor": None}
    assert http.get("/api/campaigns", params={"websiteId": str(tenant.website_id)},
                    headers=other_tenant.operator).json() == []
    assert head(server) == before
    assert http.get(base, headers=tenant.operator).json() == draft


def test_the_list_pages_by_cursor_with_its_filters(http, tenant):
    website, _ = tenant.add_website()
    ids = [create(http, tenant, website, name=f"c{n}")["_id"] for n in range(5)]
    http.post(f"/api/campaigns/{ids[1]}/cancel", headers=tenant.operator)
    seen, cursor, pages = [], None, 0
    while True:
        params = {"websiteId": str(website), "limit": "2", "pagination": "cursor", **({"cursor": cursor} if cursor else {})}
        page = http.get("/api/campaigns", params=params, headers=tenant.operator).json()
        seen += [item["_id"] for item in page["items"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids and pages == 3
    cursor_mode = {"pagination": "cursor"}
    first = http.get("/api/campaigns", params={"websiteId": str(website), "limit": "2", **cursor_mode},
                     headers=tenant.operator).json()
    assert [i["_id"] for i in http.get("/api/campaigns", params={"websiteId": str(website), "status": "cancelled",
                                                                 **cursor_mode},
                                       headers=tenant.operator).json()["items"]] == [ids[1]]
    fields = http.get("/api/campaigns", params={"websiteId": str(website), "fields": "name", **cursor_mode},
                      headers=tenant.operator)
    assert fields.json()["items"][0] == {"_id": ids[0], "name": "c0"}
    for params, field in (({"status": "paused"}, "status"), ({"fields": "colour"}, "fields"),
                          ({"cursor": first["nextCursor"], **cursor_mode}, "cursor"),  # issued for another filter
                          ({"websiteId": str(website), "cursor": first["nextCursor"][:-2] + "AA", **cursor_mode},
                           "cursor"),
                          ({"websiteId": str(website), "cursor": first["nextCursor"]}, "cursor"),  # an array's list
                          ({"pagination": "offset"}, "pagination"), ({"skip": "2", **cursor_mode}, "skip")):
        response = http.get("/api/campaigns", params=params, headers=tenant.operator)
        assert response.status_code == 400 and response.json()["field"] == field, (params, response.text)



def test_without_pagination_cursor_the_list_is_an_array_like_documents(http, tenant):
    """The contract's "cursor pagination like documents": an array with `limit` and `skip` (0 each by
    default: everything), `{items, nextCursor}` only with `pagination=cursor`."""
    website, _ = tenant.add_website()
    ids = [create(http, tenant, website, name=f"c{n}")["_id"] for n in range(4)]
    listed = http.get("/api/campaigns", params={"websiteId": str(website)}, headers=tenant.operator)
    assert listed.status_code == 200 and [c["_id"] for c in listed.json()] == ids
    window = http.get("/api/campaigns", params={"websiteId": str(website), "limit": "2", "skip": "1"},
                      headers=tenant.operator).json()
    assert [c["_id"] for c in window] == ids[1:3]
    named = http.get("/api/campaigns", params={"websiteId": str(website), "fields": "name", "limit": "1"},
                     headers=tenant.operator).json()
    assert named == [{"_id": ids[0], "name": "c0"}]

def events_of(server, campaign_id: str) -> list[str]:
    store = server.store()
    try:
        return [type(r.event).__name__ for r in store.load(uuid.UUID(campaign_id))]
    finally:
        store.close()


def conflict(response, *statuses: str) -> None:
    assert response.status_code == 409, response.text
    assert response.json()["campaignStatus"] in statuses
    assert response.headers["content-type"] == "application/problem+json"


def test_each_state_move_is_an_event_and_an_illegal_move_is_409_with_the_current_state(http, server, tenant):
    ops = tenant.operator
    draft = create(http, tenant, audience={"emailDomain": ["nobody.invalid"]})  # nobody: the send ends at once
    base = f"/api/campaigns/{draft['_id']}"
    past = http.post(base + "/schedule", json={"at": (datetime.now(timezone.utc) - timedelta(seconds=5)).isoformat()},
                     headers=ops)
    assert past.status_code == 400 and past.json()["field"] == "at"
    assert http.post(base + "/schedule", json={"at": "2030-01-01T00:00:00"}, headers=ops).status_code == 400  # no zone
    at = in_future()
    scheduled = http.post(base + "/schedule", json={"at": at}, headers=ops)
    assert scheduled.status_code == 200 and scheduled.json()["status"] == "scheduled"
    assert datetime.fromisoformat(scheduled.json()["scheduledAt"]) == datetime.fromisoformat(at)
    conflict(http.put(base, json={"name": "x"}, headers=ops), "scheduled")
    conflict(http.delete(base, headers=ops), "scheduled")
    later = http.post(base + "/schedule", json={"at": in_future(7200)}, headers=ops)  # a scheduled one moves
    assert later.status_code == 200 and later.json()["scheduledAt"] != scheduled.json()["scheduledAt"]
    sent = http.post(base + "/send", headers=ops)
    assert sent.status_code == 200 and sent.json()["status"] in ("sending", "sent")
    # the sender may finish it meanwhile (its audience is empty): the answer names whichever state it is in
    conflict(http.post(base + "/schedule", json={"at": in_future()}, headers=ops), "sending", "sent")
    conflict(http.post(base + "/send", headers=ops), "sending", "sent")
    conflict(http.put(base, json={"name": "x"}, headers=ops), "sending", "sent")

    cancelled = create(http, tenant)
    cbase = f"/api/campaigns/{cancelled['_id']}"
    assert http.post(cbase + "/cancel", headers=ops).json()["status"] == "cancelled"
    for response in (http.post(cbase + "/cancel", headers=ops), http.post(cbase + "/send", headers=ops),
                     http.post(cbase + "/schedule", json={"at": in_future()}, headers=ops),
                     http.put(cbase, json={"name": "x"}, headers=ops), http.delete(cbase, headers=ops)):
        conflict(response, "cancelled")
    assert events_of(server, cancelled["_id"]) == ["CampaignCreated", "CampaignCancelled"]
    assert events_of(server, draft["_id"])[:4] == ["CampaignCreated", "CampaignScheduled", "CampaignScheduled",
                                                    "CampaignStarted"]


# --- the audience -------------------------------------------------------------------------------------------

DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def seeded(server):
    """A website of six customers, each filter's matches checked by hand (`hand` below):

    | customer | language | e-mail          | userId | created | conversation | seen since    |
    | a        | en       | a@acme.io       | u1     | 40 d    |              | 40 d          |
    | b        | en-GB    | b@acme.io       |        | 40 d    | yes          | message 2 d   |
    | c        | fr       | c@other.org     | u3     | 1 d     |              | 1 d           |
    | d        | fr_CA    | d@ACME.io       |        | 40 d    |              | session 3 d   |
    | e        | de       |                 |        | 40 d    |              | 40 d          |
    | f        |          | f@mail.acme.io  |        | 1 d     |              | 1 d           |
    """
    from tests.support.servers import make_tenant
    tenant = make_tenant(server)
    website, _ = tenant.add_website()
    t = now()
    rows = {"a": ("en", "a@acme.io", "u1", 40), "b": ("en-GB", "b@acme.io", None, 40),
            "c": ("fr", "c@other.org", "u3", 1), "d": ("fr_CA", "d@ACME.io", None, 40),
            "e": ("de", None, None, 40), "f": (None, "f@mail.acme.io", None, 1)}
    ids = {name: new_id() for name in rows}
    pending = [Pending(ids[name], 1, ev.CustomerCreated(
        org_id=tenant.org_id, at=t - days * DAY, customer_id=ids[name], website_id=website, language=language,
        email=email, user_id=user_id)) for name, (language, email, user_id, days) in rows.items()]
    conversation, message, session = new_id(), new_id(), new_id()
    pending += [
        Pending(conversation, 1, ev.ConversationCreated(org_id=tenant.org_id, at=t - 40 * DAY,
                                                        conversation_id=conversation, website_id=website,
                                                        customer_id=ids["b"])),
        Pending(message, 1, ev.MessageCreated(org_id=tenant.org_id, at=t - 2 * DAY, message_id=message,
                                              conversation_id=conversation, website_id=website, content="hi",
                                              sender="customer")),
        Pending(session, 1, ev.ChatSessionStarted(org_id=tenant.org_id, at=t - 3 * DAY, session_id=session,
                                                  website_id=website, customer_id=ids["d"],
                                                  token_hash=uuid.uuid4().hex)),
    ]
    store = server.store()
    try:
        position = store.append(*pending)
    finally:
        store.close()
    for name in ("core", "chat"):
        server.wait_projected(position, name)
    return tenant, website, ids


@pytest.mark.parametrize("audience, hand", [
    ({}, "abcdef"),
    ({"language": ["en"]}, "ab"),
    ({"language": ["FR"]}, "cd"),
    ({"language": ["fr-CA"]}, "d"),
    ({"language": ["fr_ca", "de"]}, "de"),
    ({"emailDomain": ["acme.io"]}, "abd"),
    ({"emailDomain": ["@other.org", "mail.acme.io"]}, "cf"),
    ({"identified": True}, "ac"),
    ({"identified": False}, "bdef"),
    ({"seenWithinDays": 7}, "bcdf"),
    ({"seenWithinDays": 60}, "abcdef"),
    ({"hasConversation": True}, "b"),
    ({"hasConversation": False}, "acdef"),
    ({"language": ["en"], "seenWithinDays": 7}, "b"),
    ({"emailDomain": ["acme.io"], "identified": False, "hasConversation": False}, "d"),
])
def test_each_audience_filter_picks_the_customers_counted_by_hand(http, server, seeded, audience, hand):
    tenant, website, ids = seeded
    draft = create(http, tenant, website, audience=audience)
    before = head(server)
    preview = http.get(f"/api/campaigns/{draft['_id']}/preview", headers=tenant.operator)
    assert preview.status_code == 200, preview.text
    expected = sorted(str(ids[name]) for name in hand)
    assert preview.json()["recipients"] == len(hand)
    assert [c["_id"] for c in preview.json()["sample"]] == expected
    assert head(server) == before  # the preview wrote nothing
    assert http.get(f"/api/campaigns/{draft['_id']}", headers=tenant.operator).json() == draft


def test_the_preview_samples_at_most_ten_and_counts_them_all(http, server, tenant):
    website, _ = tenant.add_website()
    store = server.store()
    try:
        customers = [new_id() for _ in range(25)]
        position = store.append(*[Pending(c, 1, ev.CustomerCreated(org_id=tenant.org_id, at=now(), customer_id=c,
                                                                   website_id=website)) for c in customers])
    finally:
        store.close()
    server.wait_projected(position)
    draft = create(http, tenant, website)
    before = head(server)
    preview = http.get(f"/api/campaigns/{draft['_id']}/preview", headers=tenant.operator).json()
    assert preview["recipients"] == 25
    assert [c["_id"] for c in preview["sample"]] == [str(c) for c in customers[:10]]
    assert head(server) == before


def test_a_campaign_id_that_is_no_campaign_is_404(http, tenant):
    document = http.post("/api/documents", json={"websiteId": str(tenant.website_id), "title": "t"},
                         headers=tenant.operator).json()
    for campaign_id in (document["_id"], str(uuid.uuid4()), "nope", base64.b64encode(b"x").decode()):
        assert http.get(f"/api/campaigns/{campaign_id}", headers=tenant.operator).status_code == 404
        assert http.post(f"/api/campaigns/{campaign_id}/send", headers=tenant.operator).status_code == 404
