"""The audit log's reads (the table `projections/audit.py` fills): newest first, in signed cursor pages
(`projections.views.cursors`' seal, on the entry's position), filtered by actor, action and period; and
the same entries as CSV or NDJSON lines for a download."""

from __future__ import annotations

import csv
import hashlib
import io
import uuid
from datetime import datetime
from typing import Any, AsyncIterator, Mapping

import msgspec
import psycopg

from commands.errors import Invalid
from projections.views.collections import parse_int
from projections.views.cursors import PAGE_DEFAULT, PAGE_MAX, CursorPage, open_cursor, seal_cursor, cursor_key
from projections.views.history_query import parse_id_param, parse_time

DOWNLOAD_PAGE = 1000


class AuditActor(msgspec.Struct, rename="camel"):
    """Who acted: `operator`, `apikey`, `mcp` (an MCP client acting for operator `id`), `cli`, `customer` or
    `system`; null for events recorded before the log kept origins. `displayName`: the operator's e-mail
    address or the API key's name, where known."""

    kind: str | None
    id: uuid.UUID | None
    display_name: str | None


class AuditSubject(msgspec.Struct):
    kind: str
    id: uuid.UUID


class AuditEntry(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    at: datetime
    actor: AuditActor
    action: str
    subject: AuditSubject
    changes: dict[str, dict[str, Any]]  # {field: {before, after}}; a secret's values are "***"
    address: str | None  # the client's address, for a change made over the API


SELECT = """
SELECT e.position, e.id, e.at, e.actor_kind, e.actor_id, n.name, e.action, e.subject_kind, e.subject_id, e.changes,
       e.address
FROM rm_audit_entries e LEFT JOIN rm_audit_names n ON n.id = e.actor_id
"""


def _entry(row: tuple) -> AuditEntry:
    _, entry_id, at, kind, actor_id, name, action, subject_kind, subject_id, changes, address = row
    return AuditEntry(entry_id, at, AuditActor(kind, actor_id, name), action, AuditSubject(subject_kind, subject_id),
                      changes, address)


def audit_filter(org_id: uuid.UUID, params: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    """The WHERE clauses of `actorId`, `action` (exact, or `webhook.*` for every action on one kind of
    subject), `since` and `until` (RFC 3339, `since` inclusive, `until` exclusive)."""
    where, args = ["e.org_id = %s"], [org_id]
    if (actor_id := parse_id_param(params, "actorId")) is not None:
        where.append("e.actor_id = %s")
        args.append(actor_id)
    if action := params.get("action"):
        if action.endswith(".*"):
            where.append("e.subject_kind = %s")
            args.append(action[:-2])
        else:
            where.append("e.action = %s")
            args.append(action)
    for name, clause in (("since", "e.at >= %s"), ("until", "e.at < %s")):
        if (value := parse_time(params, name)) is not None:
            where.append(clause)
            args.append(value)
    return where, args


def _fingerprint(where: list[str], args: list[Any]) -> bytes:
    return hashlib.sha256(repr(("audit", where, args)).encode()).digest()[:16]


async def _rows(conn: psycopg.AsyncConnection, where: list[str], args: list[Any], before: int | None,
                size: int) -> list[tuple]:
    clauses, values = list(where), list(args)
    if before is not None:
        clauses.append("e.position < %s")
        values.append(before)
    return await (await conn.execute(f"{SELECT} WHERE {' AND '.join(clauses)} ORDER BY e.position DESC LIMIT {size}",
                                     values)).fetchall()


async def list_audit(conn: psycopg.AsyncConnection, org_id: uuid.UUID, params: Mapping[str, str]) -> CursorPage:
    """GET /api/audit: `{items, nextCursor}`, newest first; `limit` entries a page (default 100, at most 500)."""
    where, args = audit_filter(org_id, params)
    size = min(parse_int(params, "limit") or PAGE_DEFAULT, PAGE_MAX)
    key, fingerprint = await cursor_key(conn), _fingerprint(where, args)
    before = open_cursor(key, params["cursor"], fingerprint).int if params.get("cursor") else None
    rows = await _rows(conn, where, args, before, size + 1)
    next_cursor = seal_cursor(key, uuid.UUID(int=rows[size - 1][0]), fingerprint) if len(rows) > size else None
    return CursorPage([_entry(row) for row in rows[:size]], next_cursor)


async def all_entries(conn: psycopg.AsyncConnection, where: list[str],
                      args: list[Any]) -> AsyncIterator[list[AuditEntry]]:
    """Every entry `audit_filter`'s clauses match, newest first, a page at a time (a download)."""
    before = None
    while rows := await _rows(conn, where, args, before, DOWNLOAD_PAGE):
        yield [_entry(row) for row in rows]
        before = rows[-1][0]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text: a name starting like a formula is not run as one."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


CSV_COLUMNS = ("_id", "at", "actorKind", "actorId", "actorDisplayName", "action", "subjectKind", "subjectId",
               "changes", "address")


def csv_lines(entries: list[AuditEntry], header: bool) -> bytes:
    """The entries as CSV rows (`changes` as its JSON), after the header row when `header`."""
    out = io.StringIO()
    writer = csv.writer(out)
    if header:
        writer.writerow(CSV_COLUMNS)
    for e in entries:
        writer.writerow([spreadsheet_cell(value) for value in (
            e.id, e.at.isoformat(), e.actor.kind, e.actor.id, e.actor.display_name, e.action, e.subject.kind,
            e.subject.id, msgspec.json.encode(e.changes).decode(), e.address)])
    return out.getvalue().encode()


def ndjson_lines(entries: list[AuditEntry]) -> bytes:
    return b"".join(msgspec.json.encode(e) + b"\n" for e in entries)


def download_filter(org_id: uuid.UUID, params: Mapping[str, str]) -> tuple[list[str], list[Any]]:
    """A download's clauses: the list's filters; it holds every entry they match, so it takes no cursor."""
    if params.get("cursor"):
        raise Invalid("a download holds every entry the filters match: it takes no cursor", "cursor")
    return audit_filter(org_id, params)
