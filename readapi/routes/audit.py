"""The organization's audit log (`projections/audit.py`): admins' and owners' operator tokens only.

`Accept` picks the answer: JSON cursor pages by default; `text/csv` or `application/x-ndjson` download
every entry the filters match."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, AsyncIterator

import msgspec
from litestar import Request, Response, get
from litestar.response import Stream

from projections.views.audit import AuditEntry, all_entries, csv_lines, download_filter, list_audit, ndjson_lines
from projections.views.cursors import PAGE_MAX, CursorPage
from readapi.auth import ADMIN, Authenticated
from projections.views.parameters import Time
from readapi.openapi import describe, query
from readapi.services import caught_up, download_type, json_response, services

READ_MODELS = ("audit",)
DOWNLOADS = {"text/csv": "audit.csv", "application/x-ndjson": "audit.ndjson"}
QUERY = (
    query("actorId", uuid.UUID, "Only what this operator, API key or MCP client's operator did."),
    query("action", str, "Only this action (`webhook.created`), or every action on a kind of subject (`webhook.*`)."),
    query("since", Time, "Only changes at or after this time (RFC 3339)."),
    query("until", Time, "Only changes before this time (RFC 3339)."),
    query("limit", Annotated[int, msgspec.Meta(ge=0)], f"Entries per page; 100 by default, capped at {PAGE_MAX}."),
    query("cursor", str, "The previous page's `nextCursor` (JSON pages only)."),
)


async def _download(request: Request, where: list[str], args: list[Any], media: str) -> AsyncIterator[bytes]:
    async with services(request).pool.connection() as conn:
        first = True
        async for entries in all_entries(conn, where, args):
            yield csv_lines(entries, header=first) if media == "text/csv" else ndjson_lines(entries)
            first = False
        if first and media == "text/csv":
            yield csv_lines([], header=True)


@describe("The organization's audit log: who changed which setting or record, when, from where, and how "
          "(newest first)", ADMIN, answer=CursorPage[AuditEntry], query=QUERY,
          description="`Accept: text/csv` or `Accept: application/x-ndjson` downloads every entry the filters "
          "match instead of a page. Secrets show as \"***\". Admins and owners only.", operation_id="listAuditEntries")
@get("/api/audit")
async def audit_route(request: Request, principal: Authenticated) -> Response | Stream:
    await caught_up(request, READ_MODELS)
    if media := download_type(request, DOWNLOADS):
        where, args = download_filter(principal.org_id, request.query_params)
        return Stream(_download(request, where, args, media), media_type=media, headers={
            "Content-Disposition": f'attachment; filename="{DOWNLOADS[media]}"', "Cache-Control": "no-store"})
    async with services(request).pool.connection() as conn:
        return json_response(await list_audit(conn, principal.org_id, request.query_params))


ROUTES = [audit_route]
