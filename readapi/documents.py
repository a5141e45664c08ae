"""Reading help documents: the list in offset or cursor mode, with its filters.

`list_documents(conn, principal, params)` is the whole list read, so the batch endpoint can call it too.

A cursor is the last `_id` of its page plus a fingerprint of the query it belongs to (organization,
pinned website, filters), signed with HMAC-SHA256 under a secret kept in the database (made at first use,
so every API process agrees). A tampered cursor, or one from another query or organization, is refused
with 400 rather than answered with a wrong page. Pages are keyset reads on `id`, so a deep page costs
what the first does, and a walk sees every document exactly once while others are added (ids grow).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import uuid
from datetime import datetime
from typing import Any, Mapping

import msgspec
import psycopg

from commands.errors import Invalid
from commands.principal import Principal
from projections.runner import lock_key
from readapi.collections import Collection, filter_clauses, parse_fields, parse_int, project, scope_clauses


class Document(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "created_at": "createdAt",
                                       "updated_at": "updatedAt"}):
    id: uuid.UUID
    website_id: uuid.UUID
    title: str
    locale: str
    category: str | None
    published: bool
    content: str
    created_at: datetime
    updated_at: datetime


DOCUMENTS = Collection(
    name="documents", table="rm_documents", shape=Document,
    select="id, website_id, title, locale, category, published, content, created_at, updated_at",
    filters={"websiteId": ("website_id", "uuid"), "locale": ("locale", "str"), "documentId": ("id", "uuid"),
             "category": ("category", "str"), "published": ("published", "bool")},
    sorts={"_id": "id"}, default_sort="_id",
)

CURSOR_PAGE_DEFAULT = 100
CURSOR_PAGE_MAX = 500  # a larger limit is capped, not refused
_ID, _FINGERPRINT, _MAC = 16, 16, 16


class CursorPage(msgspec.Struct, rename="camel"):
    items: list[Any]
    next_cursor: str | None


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
        if params.get("cursor"):
            raise Invalid("cursor needs pagination=cursor", "cursor")
        limit, skip = parse_int(params, "limit"), parse_int(params, "skip")
        sql = f"SELECT {DOCUMENTS.select} FROM rm_documents WHERE {' AND '.join(where)} ORDER BY id"
        if limit:
            sql += f" LIMIT {limit}"
        if skip:
            sql += f" OFFSET {skip}"
        rows = await (await conn.execute(sql, args)).fetchall()
        return project([DOCUMENTS.row_object(row) for row in rows], fields)

    if parse_int(params, "skip"):
        raise Invalid("skip is not used in cursor mode; pass the previous page's nextCursor", "skip")
    size = min(parse_int(params, "limit") or CURSOR_PAGE_DEFAULT, CURSOR_PAGE_MAX)
    key = await cursor_key(conn)
    fingerprint = hashlib.sha256(repr((where, args)).encode()).digest()[:_FINGERPRINT]
    page_where, page_args = list(where), list(args)
    if params.get("cursor"):
        page_where.append("id > %s")
        page_args.append(_open_cursor(key, params["cursor"], fingerprint))
    rows = await (await conn.execute(
        f"SELECT {DOCUMENTS.select} FROM rm_documents WHERE {' AND '.join(page_where)} ORDER BY id LIMIT {size + 1}",
        page_args)).fetchall()
    documents = [DOCUMENTS.row_object(row) for row in rows[:size]]
    next_cursor = _seal_cursor(key, documents[-1].id, fingerprint) if len(rows) > size else None
    return CursorPage(project(documents, fields), next_cursor)


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:_MAC]


def _seal_cursor(key: bytes, last_id: uuid.UUID, fingerprint: bytes) -> str:
    payload = last_id.bytes + fingerprint
    return base64.urlsafe_b64encode(payload + _mac(key, payload)).decode().rstrip("=")


def _open_cursor(key: bytes, cursor: str, fingerprint: bytes) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    payload, mac = raw[:_ID + _FINGERPRINT], raw[_ID + _FINGERPRINT:]
    if len(raw) != _ID + _FINGERPRINT + _MAC or not hmac.compare_digest(mac, _mac(key, payload)):
        raise Invalid("the cursor is not valid; start again without one", "cursor")
    if not hmac.compare_digest(payload[_ID:], fingerprint):
        raise Invalid("the cursor belongs to another query; pass the same filters it was issued for", "cursor")
    return uuid.UUID(bytes=payload[:_ID])


_keys: dict[tuple, bytes] = {}


async def cursor_key(conn: psycopg.AsyncConnection) -> bytes:
    """The cursor-signing secret of this database, made by whichever process needs it first. API processes
    load it at start-up, since list reads run in read-only transactions."""
    where = (conn.info.host, conn.info.port, conn.info.dbname)
    if where not in _keys:
        async with conn.transaction():  # concurrent CREATE IF NOT EXISTS can collide, so serialize it
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("secrets"),))
            await conn.execute("CREATE TABLE IF NOT EXISTS parley_secrets (name text PRIMARY KEY, value bytea NOT NULL)")
            await conn.execute("INSERT INTO parley_secrets (name, value) VALUES ('cursor', %s) ON CONFLICT DO NOTHING",
                               (secrets.token_bytes(32),))
            row = await (await conn.execute("SELECT value FROM parley_secrets WHERE name = 'cursor'")).fetchone()
        _keys[where] = bytes(row[0])
    return _keys[where]
