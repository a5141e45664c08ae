"""Semantic search over help documents: ranking, visibility, freshness, and rebuilding the index."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.support.servers import make_server, make_tenant
from tests.support.documents_helpers import create, indexed

ARTICLES = [
    ("Reset your password", "account",
     "If you forgot your password, click *Forgot password* on the sign-in page. We e-mail you a link that "
     "lets you choose a new password. The link expires after one hour."),
    ("Shipping to Canada", "shipping",
     "We ship to every Canadian province. Delivery takes five to eight business days and customs duties are "
     "included in the price shown at checkout."),
    ("Refunds for damaged items", "orders",
     "When an order arrives broken, send us a photo within 14 days. We refund the full amount to the original "
     "payment method, usually within three days."),
    ("Sync error E-4012", "troubleshooting",
     "The desktop app shows E-4012 when the local cache is corrupted. Quit the app, delete the cache folder and "
     "start it again; your data is safe on our servers."),
]


def search(server, http, headers, **params):
    indexed(server)
    response = http.get("/api/documents/search", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def help_center(http, tenant):
    return {title: create(http, tenant, title=title, category=category, content=content, published=True)["_id"]
            for title, category, content in ARTICLES}


def test_search_ranks_the_right_article_first(server, http, tenant, help_center):
    key = tenant.key("documents:read")
    expectations = {
        "I can't remember my login credentials": "Reset your password",
        "how long does delivery to Toronto take": "Shipping to Canada",
        "my package came broken, can I get my money back?": "Refunds for damaged items",
        "E-4012": "Sync error E-4012",
    }
    for query, title in expectations.items():
        matches = search(server, http, key, query=query)
        assert matches[0]["_id"] == help_center[title], (query, matches)
    top = search(server, http, key, query="forgot password link", websiteId=str(tenant.website_id))[0]
    assert set(top) == {"_id", "websiteId", "title", "locale", "category", "score", "snippet"}
    assert top["title"] == "Reset your password" and top["locale"] == "en" and top["category"] == "account"
    assert 0 < len(top["snippet"]) <= 241 and "password" in top["snippet"]
    scores = [m["score"] for m in search(server, http, key, query="password")]
    assert scores == sorted(scores, reverse=True)


def test_queries_with_quotes_backslashes_and_paths_are_matched_literally(server, http, tenant):
    doc = create(http, tenant, title="Cache lock", published=True,
                 content="O'Brien's desktop app reports E-7731 when C:\\ParleyData\\cache.db is locked by another "
                         "program; close it and retry.")
    for query in ["E-7731", "O'Brien's app says E-7731", "C:\\ParleyData\\cache.db locked", "it's 'quoted' \\ ''"]:
        matches = search(server, http, tenant.operator, query=query)
        if query.startswith("it's"):
            continue  # nothing in particular to find: answering at all is the point
        assert matches and matches[0]["_id"] == doc["_id"], (query, matches)


def test_long_documents_rank_by_their_best_passage(server, http, tenant):
    filler = "\n\n".join(f"Section {i}. Our office plants are watered on Tuesdays and the kitchen is cleaned "
                         f"on Fridays by the facilities team, who also order the coffee." for i in range(40))
    doc = create(http, tenant, title="Office handbook", published=True,
                 content=filler + "\n\nTo enable two-factor authentication, open Security and scan the QR code "
                                  "with an authenticator app.")
    create(http, tenant, title="Coffee", published=True, content="We serve espresso and filter coffee.")
    top = search(server, http, tenant.operator, query="how do I turn on 2FA with an authenticator")[0]
    assert top["_id"] == doc["_id"]
    assert "two-factor" in top["snippet"]


def test_search_shows_only_published_documents_of_the_callers_website_and_locale(server, http, tenant, other_tenant):
    other_site, _ = tenant.add_website()
    ours = create(http, tenant, title="Gift cards", content="Gift cards never expire.", published=True)
    create(http, tenant, title="Gift cards draft", content="Gift cards never expire.", published=False)
    create(http, tenant, website=other_site, title="Gift cards elsewhere", content="Gift cards never expire.",
           published=True)
    french = create(http, tenant, title="Cartes cadeaux", content="Les cartes cadeaux n'expirent jamais.",
                    locale="fr", published=True)
    create(http, other_tenant, title="Gift cards (other org)", content="Gift cards never expire.", published=True)

    def found(headers, **params):
        return [m["_id"] for m in search(server, http, headers, query="do gift cards expire", **params)]

    assert found(tenant.operator, websiteId=str(tenant.website_id)) == [ours["_id"]]
    assert len(found(tenant.operator)) == 2  # both websites of the organization, published only
    assert found(tenant.key(website=tenant.website_id)) == [ours["_id"]]
    assert found(tenant.key(website=tenant.website_id), websiteId=str(other_site)) == []
    assert found(tenant.operator, websiteId=str(tenant.website_id), locale="fr") == [french["_id"]]
    assert found(tenant.operator, websiteId=str(other_tenant.website_id)) == []
    assert ours["_id"] not in found(other_tenant.operator)


def test_changes_reach_search(server, http, tenant):
    doc = create(http, tenant, title="Loyalty points", content="Points are added after delivery.")
    assert search(server, http, tenant.operator, query="loyalty points") == []
    http.put(f"/api/documents/{doc['_id']}", json={"published": True}, headers=tenant.operator)
    assert [m["_id"] for m in search(server, http, tenant.operator, query="loyalty points")] == [doc["_id"]]
    http.put(f"/api/documents/{doc['_id']}", json={"title": "Reward stars", "content": "Stars after delivery."},
             headers=tenant.operator)
    assert search(server, http, tenant.operator, query="reward stars")[0]["title"] == "Reward stars"
    http.put(f"/api/documents/{doc['_id']}", json={"locale": "de"}, headers=tenant.operator)
    assert search(server, http, tenant.operator, query="reward stars") == []
    assert search(server, http, tenant.operator, query="reward stars", locale="de")[0]["_id"] == doc["_id"]
    http.delete(f"/api/documents/{doc['_id']}", headers=tenant.operator)
    assert search(server, http, tenant.operator, query="reward stars", locale="de") == []


@pytest.mark.parametrize("params, field", [
    ({}, "query"), ({"query": "   "}, "query"), ({"query": "x", "locale": "../etc"}, "locale"),
    ({"query": "x", "limit": "many"}, "limit"),
])
def test_bad_search_requests(http, tenant, params, field):
    response = http.get("/api/documents/search", params=params, headers=tenant.operator)
    assert response.status_code == 400 and response.json()["field"] == field


def test_visitor_route_needs_a_chat_session(http, tenant):
    assert http.get("/api/chat/documents/search", params={"query": "x"}).status_code == 401
    assert http.get("/api/chat/documents/search", params={"query": "x"}, headers=tenant.operator).status_code == 403
    assert http.get("/api/chat/documents/search", params={"query": "x"}, headers=tenant.key()).status_code == 403


def rebuild(server, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parley.cli", "projections", "rebuild", name,
                           "--data-dir", str(server.data_dir)], env=server.env, capture_output=True, text=True,
                          timeout=300)


def index_articles(server, queries: list[str]):
    """A new tenant with ARTICLES published on `server`, and what each query finds."""
    tenant = make_tenant(server)
    with server.client() as http:
        for title, category, content in ARTICLES:
            create(http, tenant, title=title, category=category, content=content, published=True)
        return tenant, {q: search(server, http, tenant.operator, query=q) for q in queries}


def test_rebuild_reproduces_the_index(infra, tmp_path):
    from tests.support.servers import make_server

    server = make_server(infra, tmp_path).start()
    try:
        queries = ["forgot my password", "customs to Canada", "E-4012", "broken order refund"]
        tenant, before = index_articles(server, queries)
        with server.client() as http:
            listed = http.get("/api/documents", headers=tenant.operator).json()
            busy = rebuild(server, "search")  # the embedded index is the running server's
            assert busy.returncode != 0 and "PARLEY_QDRANT_URL" in busy.stderr
            assert {q: search(server, http, tenant.operator, query=q) for q in queries} == before
    finally:
        server.stop()
    for name in ("search", "documents"):
        rebuilt = rebuild(server, name)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert json.loads(rebuilt.stdout)["rebuilt"][name] > 0
    server.start()
    try:
        with server.client() as http:
            assert {q: search(server, http, tenant.operator, query=q) for q in queries} == before
            assert http.get("/api/documents", headers=tenant.operator).json() == listed
    finally:
        server.stop()


def test_a_lost_embedded_index_is_rebuilt_from_the_store(infra, tmp_path):
    import asyncio
    import shutil

    from parley.settings import Settings
    from projections.runner import catch_up_if_idle
    from projections.search import SearchProjection, close_indexes
    from tests.support.servers import make_server

    server = make_server(infra, tmp_path).start()
    try:
        queries = ["forgot my password", "customs to Canada", "E-4012"]
        tenant, before = index_articles(server, queries)
    finally:
        server.stop()
    # The index folder is gone (deleted, or an earlier engine's) while the read model says indexed: what the
    # workers do at start-up re-indexes everything from the event store.
    shutil.rmtree(server.data_dir / "qdrant-edge")
    store = server.store()
    try:
        assert asyncio.run(catch_up_if_idle(server.database_url, SearchProjection(Settings(data_dir=server.data_dir)),
                                            store))
    finally:
        close_indexes()
        store.close()
    server.start()
    try:
        with server.client() as http:
            assert {q: search(server, http, tenant.operator, query=q) for q in queries} == before
    finally:
        server.stop()


def test_visitor_search_sees_only_its_websites_published_documents(server, http, tenant):
    from tests.support.visitors import start_session

    other_website, _ = tenant.add_website()
    mine = create(http, tenant, title="Refund policy", content="Refunds are issued within 14 days.", published=True)
    create(http, tenant, title="Refund drafts", content="Refunds draft, not yet public.", published=False)
    create(http, tenant, website=other_website, title="Refund elsewhere", content="Refunds on the other site.",
           published=True)
    indexed(server)
    visitor = start_session(http, tenant.website_id)
    found = http.get("/api/chat/documents/search", params={"query": "how do refunds work"}, headers=visitor.headers)
    assert found.status_code == 200, found.text
    assert [match["_id"] for match in found.json()] == [mine["_id"]]


def test_the_model_loads_at_start_up_so_the_first_search_after_the_first_document_answers(infra, tmp_path):
    """A new help center: the model loads in the background from start-up (`/readyz` says `loading`, then
    `ready`), so the first document saved is indexed at once and the first search finds it, not 503."""
    server = make_server(infra, tmp_path).start()
    try:
        with server.client() as http:
            assert http.get("/readyz").json()["search"]["model"] in ("loading", "ready")
            deadline = time.monotonic() + 240
            while http.get("/readyz").json()["search"]["model"] != "ready":
                assert time.monotonic() < deadline, "the search model never loaded"
                time.sleep(0.5)
            tenant = make_tenant(server)
            create(http, tenant, title="Shipping to Canada", content=ARTICLES[1][2], published=True)
            found = http.get("/api/documents/search", headers=tenant.operator,
                             params={"query": "how long does delivery to Canada take"})
            assert found.status_code == 200, found.text
            assert [match["title"] for match in found.json()][:1] == ["Shipping to Canada"]
    finally:
        server.stop()
