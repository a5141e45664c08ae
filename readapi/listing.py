"""The organization-scoped collection reads, by name: what `GET /api/<name>` answers and what a batch
item may ask for. A collection registers itself here once; the GET route and `POST /api/batch` both
read through the same `Listing`, so a batch answers exactly what the GET would."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import psycopg
from litestar import Request, Response

from commands.errors import Forbidden
from commands.principal import Principal
from readapi.auth import Auth
from projections.views.collections import Collection, read_list
from readapi.services import caught_up, json_response, services

Reader = Callable[[psycopg.AsyncConnection, Principal, Mapping[str, str]], Awaitable[Any]]


@dataclass(frozen=True)
class Listing:
    name: str
    scope: str
    read: Reader
    # the read models the reader queries, waited for so a caller sees its own writes
    projections: tuple[str, ...] = ("core",)
    # a reader of one query sees one instant without a transaction: three round trips fewer
    one_query: bool = False

    @property
    def auth(self) -> Auth:
        """What its GET route's description states: an operator token, or an API key with the scope."""
        return Auth(scope=self.scope)


LISTINGS: dict[str, Listing] = {}


def register(listing: Listing) -> Listing:
    LISTINGS[listing.name] = listing
    return listing


def collection_listing(name: str, scope: str, collection: Collection) -> Listing:
    """The listing of a plain collection: one query of its table."""
    async def read(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> Any:
        return await read_list(conn, collection, principal, params)
    return Listing(name, scope, read, one_query=True)


async def read_listing(conn: psycopg.AsyncConnection, principal: Principal, listing: Listing,
                       params: Mapping[str, str]) -> Any:
    if listing.scope not in principal.scopes:
        raise Forbidden(f"the API key lacks the {listing.scope} scope")
    return await listing.read(conn, principal, params)


@asynccontextmanager
async def snapshot(request: Request) -> AsyncIterator[psycopg.AsyncConnection]:
    """A read-only connection on which every query sees the read models at one instant, so a page and its
    counts, or the reads of one batch, agree with each other."""
    async with services(request).pool.connection() as conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield conn


async def listing_response(request: Request, principal: Principal, listing: Listing) -> Response:
    await caught_up(request, listing.projections)
    async with services(request).pool.connection() if listing.one_query else snapshot(request) as conn:
        return json_response(await read_listing(conn, principal, listing, request.query_params))
