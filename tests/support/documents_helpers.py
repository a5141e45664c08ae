"""Shared by the document tests: writing documents over HTTP and in bulk through the event store."""

from __future__ import annotations

import uuid

from commands.streams import now
from events import types as ev
from events.store import Pending
from events.ids import new_id


def create(http, tenant, website=None, **fields) -> dict:
    body = {"websiteId": str(website or tenant.website_id), "title": "Untitled", "content": "", **fields}
    response = http.post("/api/documents", json=body, headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def indexed(server) -> None:
    """Waits until search has indexed everything written so far."""
    store = server.store()
    try:
        head = store.head()
    finally:
        store.close()
    server.wait_projected(head, "search", timeout=60)


def bulk(server, tenant, count: int, website: uuid.UUID | None = None, **fields) -> list[uuid.UUID]:
    """Appends `count` documents in one transaction (fast), and waits for the list to hold them."""
    values = {"title": "Bulk", "locale": "en", "category": None, "published": False, "content": "", **fields}
    ids = [new_id() for _ in range(count)]
    store = server.store()
    try:
        position = store.append(*[Pending(i, 1, ev.DocumentCreated(
            org_id=tenant.org_id, at=now(), document_id=i, website_id=website or tenant.website_id,
            **{**values, "title": f"{values['title']} {n}"})) for n, i in enumerate(ids)])
    finally:
        store.close()
    server.wait_projected(position, "documents")
    return ids
