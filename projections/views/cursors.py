"""Cursor pagination, shared by the lists that page by `_id` (documents, campaigns): an array with offset
pagination (`limit`, `skip`) unless `pagination=cursor` asks for `{items, nextCursor}` pages.

A cursor is the last `_id` of its page plus a fingerprint of the query it belongs to (organization,
pinned website, filters), signed with HMAC-SHA256 under a secret kept in the database (made at first use,
so every API process agrees). A tampered cursor, or one from another query or organization, is refused
with 400 rather than answered with a wrong page. Pages are keyset reads on `id`, so a deep page costs
what the first does, and a walk sees every record exactly once while others are added (ids grow).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import uuid
from typing import Any, Generic, Mapping, TypeVar

import msgspec
import psycopg

from commands.errors import Invalid
from projections.runner import lock_key
from projections.views.collections import Collection, parse_int, project

PAGE_DEFAULT = 100
PAGE_MAX = 500  # a larger limit is capped, not refused
_ID, _FINGERPRINT, _MAC = 16, 16, 16


T = TypeVar("T")


class CursorPage(msgspec.Struct, Generic[T], rename="camel"):
    """`CursorPage[partial(Record)]` in a route's description: records, or (with `fields`) the fields named."""

    items: list[T]
    next_cursor: str | None


async def cursor_page(conn: psycopg.AsyncConnection, collection: Collection, where: list[str], args: list[Any],
                      params: Mapping[str, str], fields: list[str] | None) -> CursorPage:
    """The page of `collection`'s rows matching `where` that follows `params["cursor"]`, ascending `_id`,
    `params["limit"]` rows (default PAGE_DEFAULT, at most PAGE_MAX)."""
    if parse_int(params, "skip"):
        raise Invalid("skip is not used in cursor mode; pass the previous page's nextCursor", "skip")
    size = min(parse_int(params, "limit") or PAGE_DEFAULT, PAGE_MAX)
    key = await cursor_key(conn)
    fingerprint = hashlib.sha256(repr((collection.name, where, args)).encode()).digest()[:_FINGERPRINT]
    page_where, page_args = list(where), list(args)
    if params.get("cursor"):
        page_where.append("id > %s")
        page_args.append(open_cursor(key, params["cursor"], fingerprint))
    rows = await (await conn.execute(
        f"SELECT {collection.select} FROM {collection.table} WHERE {' AND '.join(page_where)} "
        f"ORDER BY id LIMIT {size + 1}", page_args)).fetchall()
    records = [collection.row_object(row) for row in rows[:size]]
    next_cursor = seal_cursor(key, records[-1].id, fingerprint) if len(rows) > size else None  # type: ignore[attr-defined]
    return CursorPage(project(records, fields), next_cursor)


async def offset_page(conn: psycopg.AsyncConnection, collection: Collection, where: list[str], args: list[Any],
                      params: Mapping[str, str], fields: list[str] | None) -> list[Any]:
    """The array of `collection`'s rows matching `where` by ascending `_id`, after `params["skip"]` rows,
    at most `params["limit"]` (0, the default: no limit)."""
    if params.get("cursor"):
        raise Invalid("cursor needs pagination=cursor", "cursor")
    limit, skip = parse_int(params, "limit"), parse_int(params, "skip")
    sql = f"SELECT {collection.select} FROM {collection.table} WHERE {' AND '.join(where)} ORDER BY id"
    if limit:
        sql += f" LIMIT {limit}"
    if skip:
        sql += f" OFFSET {skip}"
    rows = await (await conn.execute(sql, args)).fetchall()
    return project([collection.row_object(row) for row in rows], fields)


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:_MAC]


def seal_cursor(key: bytes, last_id: uuid.UUID, fingerprint: bytes) -> str:
    return seal_position(key, last_id.bytes, fingerprint)


def open_cursor(key: bytes, cursor: str, fingerprint: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=open_position(key, cursor, fingerprint, _ID))


def seal_position(key: bytes, position: bytes, fingerprint: bytes) -> str:
    """A cursor of any keyset position (`position`, bytes of a fixed size) in the query `fingerprint` names."""
    payload = position + fingerprint
    return base64.urlsafe_b64encode(payload + _mac(key, payload)).decode().rstrip("=")


def open_position(key: bytes, cursor: str, fingerprint: bytes, size: int) -> bytes:
    """The position a cursor sealed by `seal_position` holds (`size` bytes); 400 for a tampered cursor or
    one of another query."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    payload, mac = raw[:size + _FINGERPRINT], raw[size + _FINGERPRINT:]
    if len(raw) != size + _FINGERPRINT + _MAC or not hmac.compare_digest(mac, _mac(key, payload)):
        raise Invalid("the cursor is not valid; start again without one", "cursor")
    if not hmac.compare_digest(payload[size:], fingerprint):
        raise Invalid("the cursor belongs to another query; pass the same filters it was issued for", "cursor")
    return payload[:size]


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
