"""POST /api/batch: several collection reads in one request, answered from one snapshot.

Each item is `{alias, url}`, `url` a relative collection read such as `conversations?websiteId=...`.
The whole batch is checked before anything runs (a refusal names the alias at fault); the reads then run
through the same `Listing` readers as the GET routes, in one REPEATABLE READ, READ ONLY transaction, so
every answer is exactly the GET's and all of them see the read models at one instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qsl, unquote, urlsplit

import msgspec
from litestar import Request, Response, post
from litestar.datastructures import MultiDict

from commands.errors import CommandError, Invalid
from readapi.auth import OPERATOR, Authenticated, Decoded
from readapi.listing import LISTINGS, Listing, read_listing, snapshot
from readapi.middleware import CREDENTIAL_PARAMETERS
from readapi.openapi import describe
from readapi.services import caught_up, json_response

MAX_BATCH = 20


NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class BatchItem(msgspec.Struct, forbid_unknown_fields=True):
    alias: NonEmpty
    url: NonEmpty


@dataclass(frozen=True)
class PlannedRead:
    alias: str
    listing: Listing
    params: MultiDict


def collection_read(alias: str, url: str) -> PlannedRead:
    """The allow-listed collection and query a relative URL names; anything else is refused."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    if parts.scheme or parts.netloc or path.startswith(("/", "\\")):
        raise Invalid(f"{alias}: url must be relative, a collection name and a query string", alias)
    if ".." in path:
        raise Invalid(f"{alias}: url must not contain '..'", alias)
    if "/" in path or "\\" in path:
        raise Invalid(f"{alias}: url must name a collection, not a single record or a sub-path", alias)
    if parts.fragment:
        raise Invalid(f"{alias}: url must not carry a fragment", alias)
    listing = LISTINGS.get(path)
    if listing is None:
        raise Invalid(f"{alias}: {path!r} is not a batchable collection; use one of {', '.join(sorted(LISTINGS))}",
                      alias)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name.lower() in CREDENTIAL_PARAMETERS for name, _ in query):
        raise Invalid(f"{alias}: credentials must never appear in a URL", alias)
    if any(name == "asOf" for name, _ in query):  # the past is folded from the events, outside the snapshot
        raise Invalid(f"{alias}: asOf reads the past one GET at a time, not in a batch", alias)
    return PlannedRead(alias, listing, MultiDict(query))


def plan(items: list[BatchItem]) -> list[PlannedRead]:
    if len(items) > MAX_BATCH:
        extra = items[MAX_BATCH]
        raise Invalid(f"a batch holds at most {MAX_BATCH} reads", extra.alias)
    reads: list[PlannedRead] = []
    for item in items:
        if any(read.alias == item.alias for read in reads):
            raise Invalid(f"alias {item.alias!r} is used more than once", item.alias)
        reads.append(collection_read(item.alias, item.url))
    return reads


@describe("Several collection reads in one request, from one snapshot", OPERATOR, body=list[BatchItem],
          answer=dict[str, Any], position=False, example=[{"alias": "open", "url": "conversations?resolved=false&limit=20"}],
          description="Each item names a relative collection read; the answer maps each alias to exactly what "
                      "that GET would answer. At most 20 items.", operation_id="runBatch")
@post("/api/batch", status_code=200)
async def batch(request: Request, principal: Authenticated, payload: Decoded[list[BatchItem]]) -> Response:
    reads = plan(payload)
    await caught_up(request, tuple({p for read in reads for p in read.listing.projections}))
    results: dict[str, object] = {}
    async with snapshot(request) as conn:
        for read in reads:
            try:
                results[read.alias] = await read_listing(conn, principal, read.listing, read.params)
            except CommandError as exc:
                raise type(exc)(f"{read.alias}: {exc.detail}", read.alias) from None
    return json_response(results)


ROUTES = [batch]
