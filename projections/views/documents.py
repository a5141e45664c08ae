"""Reading help documents: the list in offset or cursor mode, with its filters.

`list_documents(conn, principal, params)` is the whole list read, so the batch endpoint can call it too.
Cursor mode is `projections.views.cursors`' signed keyset pages on `id`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, Mapping

import msgspec
import psycopg

from commands.errors import Invalid
from commands.principal import Principal
from projections.richtext import render_markdown
from projections.views.collections import Collection, filter_clauses, parse_fields, scope_clauses
from projections.views.cursors import cursor_page, offset_page


class Document(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "created_at": "createdAt",
                                       "updated_at": "updatedAt", "content_html": "contentHtml"}):
    id: uuid.UUID
    website_id: uuid.UUID
    title: str
    locale: str
    category: str | None
    published: bool
    content: str
    created_at: datetime
    updated_at: datetime
    # the sanitized rendering of `content` (projections.richtext), computed on read: never stored
    content_html: str = ""

    def __post_init__(self) -> None:
        self.content_html = render_markdown(self.content)


class DocumentImported(msgspec.Struct, rename={"id": "_id"}):
    """What POST /api/documents/import did with the file: created, updated, or unchanged (nothing written)."""

    id: uuid.UUID
    outcome: Literal["created", "updated", "unchanged"]


DOCUMENTS = Collection(
    name="documents", table="rm_documents", shape=Document,
    select="id, website_id, title, locale, category, published, content, created_at, updated_at",
    filters={"websiteId": ("website_id", "uuid"), "locale": ("locale", "str"), "documentId": ("id", "uuid"),
             "category": ("category", "str"), "published": ("published", "bool")},
    sorts={"_id": "id"}, default_sort="_id",
)

def _title_clauses(params: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    """Plain-text title search: every word must occur in the title, ignoring case and accents."""
    words = (params.get("search") or "").split()
    escaped = [w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for w in words]
    return (["title_folded LIKE '%%' || lower(unaccent(%s)) || '%%'"] * len(escaped)), escaped


def _where(principal: Principal, params: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    where, args = scope_clauses(DOCUMENTS, principal)
    for clauses, values in (filter_clauses(DOCUMENTS, params), _title_clauses(params)):
        where += clauses
        args += values
    return where, args


async def list_documents(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> Any:
    """GET /api/documents: an array (offset mode) or `{items, nextCursor}` (`pagination=cursor`)."""
    pagination = params.get("pagination")
    if pagination not in (None, "", "cursor"):
        raise Invalid("pagination accepts only the value cursor", "pagination")
    fields = parse_fields(params, Document)
    where, args = _where(principal, params)
    if pagination != "cursor":
        return await offset_page(conn, DOCUMENTS, where, args, params, fields)
    return await cursor_page(conn, DOCUMENTS, where, args, params, fields)


async def published_document(conn: psycopg.AsyncConnection, org_id: uuid.UUID, document_id: uuid.UUID
                             ) -> Document | None:
    """The organization's document, if it is published."""
    row = await (await conn.execute(
        f"SELECT {DOCUMENTS.select} FROM rm_documents WHERE id = %s AND org_id = %s AND published",
        (document_id, org_id))).fetchone()
    return row and DOCUMENTS.row_object(row)
