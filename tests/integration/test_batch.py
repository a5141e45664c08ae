"""POST /api/batch: exactly the GETs' answers, one snapshot, and every refusal."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.support.inbox_seed import Seeder
from events.ids import new_id
import readapi.app  # noqa: F401 - the route modules register their collections, as in the server
from readapi.listing import LISTINGS
from readapi.routes.batch import MAX_BATCH


@pytest.fixture
def seeded(http, server, tenant):
    seed = Seeder(server, tenant.org_id, tenant.website_id)
    conversation = seed.conversation()
    response = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": str(conversation), "content": "hello", "from": "customer"})
    assert response.status_code == 200
    return conversation


def batch(http, tenant, items, headers=None):
    return http.post("/api/batch", headers=headers or tenant.operator, json=items)


def test_each_alias_holds_what_the_get_answers(http, tenant, seeded):
    site = str(tenant.website_id)
    urls = {
        "inbox": f"conversations?websiteId={site}&inboxFilter=unread&conversationFilter=today&timezone=Europe/Paris",
        "recent": f"conversations?websiteId={site}&limit=10&sortField=lastEditTime",
        "people": f"customers?websiteId={site}&fields=email",
        "transcript": f"messages?conversationId={seeded}&sortDirection=DESC",
        "sites": "websites",
    }
    response = batch(http, tenant, [{"alias": alias, "url": url} for alias, url in urls.items()])
    assert response.status_code == 200, response.text
    answers = response.json()
    assert list(answers) == list(urls)
    for alias, url in urls.items():
        direct = http.get(f"/api/{url}", headers=tenant.operator)
        assert direct.status_code == 200
        assert answers[alias] == direct.json(), alias
    assert answers["inbox"]["filteredTotal"] == 1


def test_an_empty_batch_answers_an_empty_object(http, tenant):
    response = batch(http, tenant, [])
    assert response.status_code == 200 and response.json() == {}


def test_every_allow_listed_collection_is_batchable(http, tenant):
    """The allow-list is the registry of organization-scoped collections; each present one answers."""
    assert set(LISTINGS) == {"conversations", "customers", "messages", "websites", "documents"}
    response = batch(http, tenant, [{"alias": name, "url": name} for name in LISTINGS])
    assert response.status_code == 200, response.text
    assert set(response.json()) == set(LISTINGS)


def test_reads_stay_inside_the_organization(http, tenant, other_tenant, seeded):
    response = batch(http, other_tenant, [
        {"alias": "theirs", "url": f"conversations?websiteId={tenant.website_id}"},
        {"alias": "transcript", "url": f"messages?conversationId={seeded}"},
    ])
    assert response.status_code == 200 and response.json() == {"theirs": [], "transcript": []}
    inbox = batch(http, other_tenant, [
        {"alias": "inbox", "url": f"conversations?websiteId={tenant.website_id}&inboxFilter=all"}])
    assert inbox.status_code == 404 and inbox.json()["field"] == "inbox"


def test_operator_token_only(http, tenant):
    items = [{"alias": "sites", "url": "websites"}]
    assert batch(http, tenant, items, headers=tenant.key()).status_code == 403
    assert http.post("/api/batch", json=items).status_code == 401
    assert batch(http, tenant, items, headers={"Authorization": "Token forged"}).status_code == 401


REFUSALS = [
    ("absolute", "https://evil.example/api/conversations"),
    ("scheme-relative", "//evil.example/api/conversations"),
    ("rooted", "/api/conversations"),
    ("dotdot", "../api/conversations"),
    ("encoded-dotdot", "%2e%2e/conversations"),
    ("single-record", "conversations/0190b2a4-0000-7000-8000-000000000000"),
    ("not-allowed", "webhooksubscriptions"),
    ("operators", "operators"),
    ("empty", "?websiteId=x"),
    ("fragment", "websites#top"),
    ("credential", "websites?access_token=abc"),
    ("past", "messages?conversationId=x&asOf=5"),
]


@pytest.mark.parametrize("alias, url", REFUSALS, ids=[alias for alias, _ in REFUSALS])
def test_refused_urls_name_the_alias_and_run_nothing(http, tenant, alias, url):
    response = batch(http, tenant, [{"alias": "fine", "url": "websites"}, {"alias": alias, "url": url}])
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == alias


def test_duplicate_missing_alias_missing_url_and_bound(http, tenant):
    duplicate = batch(http, tenant, [{"alias": "a", "url": "websites"}, {"alias": "a", "url": "customers"}])
    assert duplicate.status_code == 400 and duplicate.json()["field"] == "a"
    missing = batch(http, tenant, [{"alias": "a", "url": "websites"}, {"url": "customers"}])
    assert missing.status_code == 400 and missing.json()["field"] == "[1].alias"
    no_url = batch(http, tenant, [{"alias": "a"}])
    assert no_url.status_code == 400 and no_url.json()["field"] == "[0].url"
    too_many = batch(http, tenant, [{"alias": f"r{i}", "url": "websites"} for i in range(MAX_BATCH + 1)])
    assert too_many.status_code == 400 and too_many.json()["field"] == f"r{MAX_BATCH}"
    assert batch(http, tenant, [{"alias": f"r{i}", "url": "websites"} for i in range(MAX_BATCH)]).status_code == 200


@pytest.mark.parametrize("body", [{"alias": "a", "url": "websites"}, [{"alias": "a", "url": "websites", "x": 1}],
                                  [{"alias": 5, "url": "websites"}], "websites"])
def test_malformed_bodies_answer_400(http, tenant, body):
    response = batch(http, tenant, body)
    assert response.status_code == 400, response.text


def test_a_bad_query_names_the_alias(http, tenant):
    response = batch(http, tenant, [
        {"alias": "ok", "url": "websites"},
        {"alias": "sorted", "url": f"conversations?websiteId={tenant.website_id}&sortField=color"}])
    assert response.status_code == 400
    assert response.json()["field"] == "sorted" and "sortField" in response.json()["detail"]


def test_reads_share_one_snapshot(http, tenant, server):
    """A customer committed while a batch is between its reads is seen by neither: the second read is held
    on a table lock until the row is committed, and still answers from the batch's snapshot."""
    items = [{"alias": "sites", "url": "websites"}, {"alias": "people", "url": f"customers?websiteId={tenant.website_id}"}]
    with psycopg.connect(server.database_url) as conn, ThreadPoolExecutor(1) as pool:
        conn.execute("LOCK TABLE rm_customers IN ACCESS EXCLUSIVE MODE")
        answer = pool.submit(batch, http, tenant, items)
        deadline = time.monotonic() + 20
        while not conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE c.relname = 'rm_customers' AND NOT l.granted").fetchone()[0]:
            assert time.monotonic() < deadline, "the batch never reached its second read"
            time.sleep(0.01)
        customer_id = new_id()
        conn.execute(
            "INSERT INTO rm_customers (id, org_id, website_id, created_at, updated_at) VALUES (%s, %s, %s, now(), now())",
            (customer_id, tenant.org_id, tenant.website_id))
        conn.commit()
        response = answer.result(30)
    assert response.status_code == 200, response.text
    assert response.json()["people"] == []
    direct = http.get("/api/customers", headers=tenant.operator, params={"websiteId": str(tenant.website_id)})
    assert [c["_id"] for c in direct.json()] == [str(customer_id)]
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM rm_customers WHERE id = %s", (customer_id,))


def test_documents_in_a_batch_answer_as_the_get_does(http, tenant):
    from tests.support.documents_helpers import create

    for title in ("Alpha", "Beta", "Gamma"):
        create(http, tenant, title=title, published=True)
    url = f"documents?websiteId={tenant.website_id}&pagination=cursor&limit=2"
    answered = batch(http, tenant, [{"alias": "docs", "url": url}])
    assert answered.status_code == 200, answered.text
    direct = http.get(f"/api/{url}", headers=tenant.operator).json()
    assert answered.json()["docs"] == direct and len(direct["items"]) == 2 and direct["nextCursor"]
