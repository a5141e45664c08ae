"""Help documents: writing them, and the list in both modes with every filter and the cursor's rules."""

from __future__ import annotations

import asyncio
import base64
import threading

import psycopg
import pytest

from commands.streams import now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id
from projections.documents import DocumentsProjection
from projections.runner import catch_up_if_idle
from tests.support.documents_helpers import bulk, create


def ids_of(items) -> list[str]:
    return [item["_id"] for item in items]


def test_operator_writes_a_document_and_reads_it_back(http, tenant):
    doc = create(http, tenant, title="Reset your password", content="Open **Settings**.", locale="en",
                 category="account", published=True)
    assert doc["title"] == "Reset your password" and doc["category"] == "account" and doc["published"] is True
    assert doc["websiteId"] == str(tenant.website_id) and doc["locale"] == "en"
    updated = http.put(f"/api/documents/{doc['_id']}", json={"title": "Reset a password", "published": False},
                       headers=tenant.operator)
    assert updated.status_code == 200
    assert updated.json() | {"updatedAt": None} == doc | {"title": "Reset a password", "published": False,
                                                           "updatedAt": None}
    assert http.get(f"/api/documents/{doc['_id']}", headers=tenant.key()).json()["title"] == "Reset a password"
    assert http.delete(f"/api/documents/{doc['_id']}", headers=tenant.operator).status_code == 204
    assert http.get(f"/api/documents/{doc['_id']}", headers=tenant.operator).status_code == 404
    assert http.get("/api/documents", params={"documentId": doc["_id"]}, headers=tenant.operator).json() == []
    assert http.delete(f"/api/documents/{doc['_id']}", headers=tenant.operator).status_code == 404


def test_a_document_of_more_distinct_words_than_a_tsvector_holds_is_indexed_as_far_as_it_fits(infra):
    """PostgreSQL caps a tsvector at 1 MB of lexemes: 500,000 characters of two-character Chinese words
    pass it, and the document once failed its batch and every later one, for every read model sharing it."""
    database_url = infra.new_database()
    store = EventStore(database_url, pool_size=1)
    words = [chr(0x4E00 + i % 20_000) + chr(0x4E00 + i // 20_000) for i in range(170_000)]
    org_id, website_id, big, small = new_id(), new_id(), new_id(), new_id()
    try:
        for document_id, content in ((big, " ".join(words)[:500_000]), (small, "reset your password")):
            store.append(Pending(document_id, 1, ev.DocumentCreated(
                org_id=org_id, at=now(), document_id=document_id, website_id=website_id, title="Glossary",
                locale="zh", category=None, published=True, content=content)))
        assert asyncio.run(catch_up_if_idle(database_url, DocumentsProjection(), store))
    finally:
        store.close()
    with psycopg.connect(database_url) as conn:
        found = conn.execute("SELECT id FROM rm_documents WHERE lexemes @@ to_tsquery('simple', %s) ORDER BY id",
                             (words[0],)).fetchall()
        assert found == [(big,)]
        assert conn.execute("SELECT id FROM rm_documents WHERE lexemes @@ to_tsquery('english', 'password')"
                            ).fetchall() == [(small,)]


def test_api_keys_cannot_write_and_need_the_read_scope(http, tenant):
    doc = create(http, tenant, title="Kept")
    key = tenant.key()
    assert http.post("/api/documents", json={"websiteId": str(tenant.website_id), "title": "x"},
                     headers=key).status_code == 403
    assert http.put(f"/api/documents/{doc['_id']}", json={"title": "x"}, headers=key).status_code == 403
    assert http.delete(f"/api/documents/{doc['_id']}", headers=key).status_code == 403
    no_scope = tenant.key("customers:read")
    assert http.get("/api/documents", headers=no_scope).status_code == 403
    assert http.get("/api/documents/search", params={"query": "x"}, headers=no_scope).status_code == 403
    assert http.get("/api/documents").status_code == 401
    assert http.get(f"/api/documents/{doc['_id']}", headers=tenant.operator).json()["title"] == "Kept"


@pytest.mark.parametrize("body, field", [
    ({"title": ""}, "title"),
    ({"title": "   "}, "title"),
    ({"title": "t", "locale": "english!"}, "locale"),
    ({"title": "t", "published": "yes"}, "published"),
    ({"title": "t", "colour": "red"}, None),
    ({"title": "t", "websiteId": "not-an-id"}, "websiteId"),
])
def test_bad_input_is_refused_and_stores_nothing(http, tenant, body, field):
    before = http.get("/api/documents", headers=tenant.operator).json()
    response = http.post("/api/documents", json={"websiteId": str(tenant.website_id), **body},
                         headers=tenant.operator)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    if field:
        assert response.json()["field"] == field
    assert http.get("/api/documents", headers=tenant.operator).json() == before


def test_bad_update_leaves_the_document_untouched(http, tenant):
    doc = create(http, tenant, title="Stable")
    assert http.put(f"/api/documents/{doc['_id']}", json={"title": ""}, headers=tenant.operator).status_code == 400
    assert http.put(f"/api/documents/{doc['_id']}", json={"websiteId": str(tenant.website_id)},
                    headers=tenant.operator).status_code == 400
    assert http.get(f"/api/documents/{doc['_id']}", headers=tenant.operator).json() == doc


def test_other_organizations_documents_are_invisible(http, tenant, other_tenant):
    doc = create(http, tenant, title="Private", published=True)
    intruder = other_tenant.operator
    assert http.get(f"/api/documents/{doc['_id']}", headers=intruder).status_code == 404
    assert http.put(f"/api/documents/{doc['_id']}", json={"title": "pwned"}, headers=intruder).status_code == 404
    assert http.delete(f"/api/documents/{doc['_id']}", headers=intruder).status_code == 404
    assert http.get("/api/documents", params={"documentId": doc["_id"]}, headers=intruder).json() == []
    assert http.post("/api/documents", json={"websiteId": str(tenant.website_id), "title": "x"},
                     headers=intruder).status_code == 404
    assert http.get(f"/api/documents/{doc['_id']}", headers=tenant.operator).json()["title"] == "Private"


def test_offset_mode_filters_and_projection(http, tenant):
    other_site, _ = tenant.add_website()
    a = create(http, tenant, title="Billing FAQ", locale="en", category="billing", published=True)
    b = create(http, tenant, title="Facturación y pagos", locale="es", category="billing", published=False)
    c = create(http, tenant, title="Shipping to Canada", locale="en", category="shipping", published=True)
    d = create(http, tenant, website=other_site, title="Other site", locale="en", category="billing")
    headers = tenant.key()

    def listed(**params):
        response = http.get("/api/documents", params=params, headers=headers)
        assert response.status_code == 200, response.text
        return ids_of(response.json())

    assert listed() == [a["_id"], b["_id"], c["_id"], d["_id"]]
    assert listed(websiteId=str(tenant.website_id)) == [a["_id"], b["_id"], c["_id"]]
    assert listed(locale="es") == [b["_id"]]
    assert listed(documentId=c["_id"]) == [c["_id"]]
    malformed = http.get("/api/documents", params={"documentId": "nonsense"}, headers=headers)
    assert malformed.status_code == 400 and malformed.json()["field"] == "documentId"
    assert listed(category="billing", websiteId=str(tenant.website_id)) == [a["_id"], b["_id"]]
    assert listed(published="true") == [a["_id"], c["_id"]]
    assert listed(published="false") == [b["_id"], d["_id"]]
    assert listed(search="FACTURACION") == [b["_id"]]  # case- and accent-insensitive
    assert listed(search="canada shipping") == [c["_id"]]  # every word, any order
    assert listed(search="100%") == []
    assert listed(limit="2") == [a["_id"], b["_id"]]
    assert listed(limit="2", skip="2") == [c["_id"], d["_id"]]
    assert listed(limit="0") == [a["_id"], b["_id"], c["_id"], d["_id"]]
    projected = http.get("/api/documents", params={"fields": "title,locale", "limit": "1"}, headers=headers).json()
    assert projected == [{"_id": a["_id"], "title": "Billing FAQ", "locale": "en"}]
    assert http.get("/api/documents", params={"published": "maybe"}, headers=headers).status_code == 400
    assert http.get("/api/documents", params={"fields": "secret"}, headers=headers).status_code == 400
    assert http.get("/api/documents", params={"limit": "-1"}, headers=headers).status_code == 400
    assert http.get("/api/documents", params={"skip": str(2**63)}, headers=headers).status_code == 400
    pinned = tenant.key(website=other_site)
    assert ids_of(http.get("/api/documents", headers=pinned).json()) == [d["_id"]]


def test_offset_limit_zero_returns_everything(server, http, tenant):
    bulk(server, tenant, 650)
    assert len(http.get("/api/documents", params={"limit": "0"}, headers=tenant.operator).json()) == 650


def walk(http, headers, **params) -> tuple[list[str], list[int]]:
    seen, sizes, cursor = [], [], None
    while True:
        page_params = {**params, "pagination": "cursor", **({"cursor": cursor} if cursor else {})}
        response = http.get("/api/documents", params=page_params, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert set(page) == {"items", "nextCursor"}
        seen += ids_of(page["items"])
        sizes.append(len(page["items"]))
        cursor = page["nextCursor"]
        if cursor is None:
            return seen, sizes


def test_cursor_mode_page_sizes_and_order(server, http, tenant):
    ids = [str(i) for i in bulk(server, tenant, 1203)]
    seen, sizes = walk(http, tenant.operator)
    assert seen == sorted(ids) == ids
    assert sizes == [100] * 12 + [3]  # default page size 100
    seen, sizes = walk(http, tenant.operator, limit="900")
    assert seen == ids and sizes == [500, 500, 203]  # a larger limit is capped at 500
    seen, sizes = walk(http, tenant.operator, limit="401", fields="title")
    assert seen == ids and sizes == [401, 401, 401]


def test_cursor_mode_with_filters_and_an_empty_result(server, http, tenant):
    published = bulk(server, tenant, 25, published=True, category="guides")
    bulk(server, tenant, 10, published=False, category="guides")
    seen, _ = walk(http, tenant.key(), published="true", limit="7")
    assert seen == [str(i) for i in published]
    page = http.get("/api/documents", params={"pagination": "cursor", "category": "none"},
                    headers=tenant.operator).json()
    assert page == {"items": [], "nextCursor": None}


def test_a_walk_sees_every_document_once_while_documents_are_added(server, http, tenant):
    existing = [str(i) for i in bulk(server, tenant, 300)]
    stop = threading.Event()
    added: list[str] = []

    def writer():
        while not stop.is_set():
            added.append(create(http, tenant, title="Concurrent")["_id"])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen, _ = walk(http, tenant.operator, limit="9")
    finally:
        stop.set()
        thread.join()
    assert len(seen) == len(set(seen))
    assert seen[:300] == existing
    assert set(seen) - set(existing) <= set(added)
    assert seen == sorted(seen)


def tamper(cursor: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[3] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def test_tampered_or_foreign_cursors_are_refused(server, http, tenant, other_tenant):
    bulk(server, tenant, 5, category="a")
    bulk(server, other_tenant, 5, category="a")
    first = http.get("/api/documents", params={"pagination": "cursor", "limit": "2"}, headers=tenant.operator).json()
    cursor = first["nextCursor"]
    good = http.get("/api/documents", params={"pagination": "cursor", "limit": "2", "cursor": cursor},
                    headers=tenant.operator)
    assert good.status_code == 200 and len(good.json()["items"]) == 2

    def refused(headers, **params):
        response = http.get("/api/documents", params={"pagination": "cursor", **params}, headers=headers)
        assert response.status_code == 400, response.text
        assert response.json()["field"] == "cursor"

    refused(tenant.operator, cursor=tamper(cursor))
    refused(tenant.operator, cursor=cursor[:-2])
    refused(tenant.operator, cursor="not a cursor!")
    refused(tenant.operator, cursor=cursor, category="a")  # issued for another filter
    refused(other_tenant.operator, cursor=cursor)  # issued to another organization
    bad_mode = http.get("/api/documents", params={"cursor": cursor}, headers=tenant.operator)
    assert bad_mode.status_code == 400
    assert http.get("/api/documents", params={"pagination": "pages"}, headers=tenant.operator).status_code == 400
    assert http.get("/api/documents", params={"pagination": "cursor", "skip": "5"},
                    headers=tenant.operator).status_code == 400
