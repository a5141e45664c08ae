"""`GET /api/events`: the organization's history as NDJSON, in position order, streamed page by page;
with `follow=true`, then live. Scope `events:read` (operator tokens have it); a key pinned to a website
gets that website's events only. Events leave through their public shapes (events/public.py)."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import Annotated, AsyncIterator, Literal

import msgspec
import psycopg
from litestar import Request, get
from litestar.response import Stream

from commands.errors import Invalid
from events.export import FORMATS, Format, export
from events.history import HEAD, LINES, HistoryFilter, Reading, batches_async, ndjson
from events.live import Held
from readapi.auth import Auth, Authenticated
from projections.views.collections import parse_bool, parse_int
from projections.views.history_query import history_filter
from projections.views.parameters import PositionOrTime, Time
from readapi.openapi import LIMIT, describe, query

from readapi.services import held_by, services

NDJSON_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# How long a following response waits for a new event before it looks at the store again all the same.
FOLLOW_WAIT_SECONDS = 15.0
Position = Annotated[int, msgspec.Meta(ge=0)]
FILTERS = (
    query("after", Position, "Only events after this position."),
    query("until", PositionOrTime, "Only events up to this position, or this RFC 3339 time."),
    query("since", Time, "Only events at or after this RFC 3339 time (with its time zone)."),
    query("types", str, "Comma-separated event type names."),
    query("websiteId", uuid.UUID, "Only this website's events."),
    query("conversationId", uuid.UUID, "Only this conversation's events."),
)
QUERY = (
    *FILTERS,
    LIMIT,
    query("follow", bool, "After the history, stream new events as they commit (takes no `until`)."),
)


async def history_lines(request: Request, flt: HistoryFilter, limit: int, follow: bool,
                        held: Held) -> AsyncIterator[bytes]:
    """The filter's events up to the store's head as it is now, then, following, whatever commits next;
    a trailer line closes a history that ends (`follow` ends only at `limit`, or when the `held`
    credential is revoked)."""
    hub = services(request).hub
    hub.hold(held)
    try:
        async for lines in _history_lines(request, flt, limit, follow, held):
            yield lines
    finally:
        hub.release(held)


async def _history_lines(request: Request, flt: HistoryFilter, limit: int, follow: bool,
                         held: Held) -> AsyncIterator[bytes]:
    svc = services(request)
    hub = svc.hub
    reading, after = Reading(last=flt.after), flt.after
    while not held.revoked:
        async with svc.pool.connection() as conn:
            head = (await (await conn.execute(HEAD)).fetchone())[0]
        if flt.until is not None:
            head = min(head, flt.until)
        async for rows in batches_async(svc.pool, flt, after, head, LINES):
            if held.revoked:
                return
            lines = reading.lines(rows)
            if limit and reading.emitted >= limit:
                lines = lines[:len(lines) - (reading.emitted - limit)]
                reading.last, reading.emitted = lines[-1].position, limit
                yield ndjson([*lines, reading.trailer()])
                return
            if lines:
                yield ndjson(lines)
        reading.last = after = max(after, head)
        if not follow:
            yield ndjson([reading.trailer()])
            return
        await hub.wait_past(head, FOLLOW_WAIT_SECONDS, held)
        if hub.closed:
            return


@describe("The organization's event history as NDJSON, then live with `follow=true`",
          Auth(scope="events:read", role="admin"), answer="One JSON object per line: each event in its public shape, in position "
          "order; a history that ends closes with a trailer line.", media_type="application/x-ndjson", query=QUERY,
          operation_id="listEvents")
@get("/api/events")
async def stream_events(request: Request, principal: Authenticated) -> Stream:
    params = request.query_params
    flt = history_filter(principal.org_id, params, principal.website_id)
    follow = bool(parse_bool(params, "follow"))
    if follow and (flt.until is not None or flt.until_time is not None):
        raise Invalid("follow streams on without end: it takes no until", "until")
    return Stream(history_lines(request, flt, parse_int(params, "limit"), follow, held_by(principal)),
                  media_type="application/x-ndjson", headers=NDJSON_HEADERS)


class _Sink:
    """What a zip archive writes, kept until the response takes it (a stream that cannot seek)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        taken, self.chunks = b"".join(self.chunks), []
        return taken


def _export(database_url: str, flt: HistoryFilter, folder: Path, fmt: Format) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        export(conn, flt, folder, fmt)


async def zipped_export(database_url: str, flt: HistoryFilter, fmt: Format) -> AsyncIterator[bytes]:
    """The export written to a temporary folder (on a worker thread), then streamed as a zip, a chunk of a
    file at a time; the folder goes when the response ends, finished or not. Parquet files are compressed
    already, so they are stored as they are."""
    compression = zipfile.ZIP_STORED if fmt == "parquet" else zipfile.ZIP_DEFLATED
    with tempfile.TemporaryDirectory(prefix="parley-export-") as name:
        folder = Path(name)
        await asyncio.to_thread(_export, database_url, flt, folder, fmt)
        sink = _Sink()
        with zipfile.ZipFile(sink, "w", compression) as archive:
            for path in sorted(folder.iterdir()):
                with path.open("rb") as source, archive.open(path.name, "w", force_zip64=True) as entry:
                    while chunk := source.read(1 << 20):
                        entry.write(chunk)
                        yield sink.take()
        yield sink.take()


@describe("The organization's event history as a zip of Parquet files (one per event type) or JSON Lines",
          Auth(scope="events:read", role="admin"), answer="A zip: `<type>.parquet` files or `events.jsonl`, and `manifest.json`.",
          media_type="application/zip",
          query=(query("format", Literal["parquet", "jsonl"], "The files' format (default parquet)."), *FILTERS),
          operation_id="exportEvents")
@get("/api/events/export")
async def export_events(request: Request, principal: Authenticated) -> Stream:
    """The export `parley events export` writes, as one zip: for an analyst away from the server."""
    fmt = request.query_params.get("format") or "parquet"
    if fmt not in FORMATS:
        raise Invalid(f"format must be one of {', '.join(FORMATS)}", "format")
    flt = history_filter(principal.org_id, request.query_params, principal.website_id)
    return Stream(zipped_export(services(request).store.database_url, flt, fmt), media_type="application/zip",
                  headers={"Content-Disposition": f'attachment; filename="events-{fmt}.zip"'})


ROUTES = [stream_events, export_events]
