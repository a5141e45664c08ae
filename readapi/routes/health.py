"""Health for orchestrators: `/healthz` (the process answers) and `/readyz` (it can serve: PostgreSQL and
NATS reachable), with each read model's lag behind the event store. Neither needs a credential nor
counts against a rate limit (they are outside `/api/`)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import msgspec
from litestar import Request, Response, get

from events.store import EVENTS_TABLE
from projections.search import embedder_loaded
from readapi.auth import PUBLIC
from readapi.openapi import describe
from readapi.unavailable import DATABASE_UNAVAILABLE
from readapi.services import json_response, services

NATS_CHECK_SECONDS = 1.0


class Alive(msgspec.Struct):
    status: str


class Dependency(msgspec.Struct, omit_defaults=True):
    reachable: bool
    error: str | None = None


class ReadModel(msgspec.Struct):
    position: int
    lag: int  # events in the store that the read model has not applied yet


class Readiness(msgspec.Struct, rename="camel", omit_defaults=True):
    status: str  # "ready" or "not ready"
    postgres: Dependency
    nats: Dependency
    head: int | None = None  # the store's latest position
    read_models: dict[str, ReadModel] | None = None
    # "loading" while the search model loads after start-up (searches answer 503 meanwhile), then "ready";
    # the rest of the service serves all along
    search: str | None = None


@describe("Liveness: the process serves HTTP", PUBLIC, answer=Alive, tag="health")
@get("/healthz")
async def healthz() -> Response:
    return json_response(Alive("ok"))


@describe("Readiness: PostgreSQL and NATS reachable (200, else 503 with the same report), with each read "
          "model's lag behind the event store and whether search is still loading its model", PUBLIC,
          answer=Readiness, also=(503,), tag="health")
@get("/readyz")
async def readyz(request: Request) -> Response:
    postgres, head, read_models = await _postgres(request)
    nats = await _nats(services(request).nats_url)
    ready = postgres.reachable and nats.reachable
    readiness = Readiness("ready" if ready else "not ready", postgres, nats, head, read_models,
                          "ready" if embedder_loaded(services(request).settings.search) else "loading")
    return json_response(readiness, status=200 if ready else 503)


async def _postgres(request: Request) -> tuple[Dependency, int | None, dict[str, ReadModel] | None]:
    svc = services(request)
    try:
        async with asyncio.timeout(svc.settings.database_wait_seconds), svc.pool.connection() as conn:
            head = (await (await conn.execute(
                f"SELECT coalesce(max(notification_id), 0) FROM {EVENTS_TABLE}")).fetchone())[0]
            positions = await (await conn.execute(
                "SELECT name, position FROM parley_projection_positions ORDER BY name")).fetchall()
    except (*DATABASE_UNAVAILABLE, TimeoutError) as exc:
        return Dependency(False, type(exc).__name__), None, None
    return Dependency(True), head, {name: ReadModel(position, max(0, head - position)) for name, position in positions}


async def _nats(url: str) -> Dependency:
    """Reachable when the server greets a new connection with its INFO line (what every client reads first)."""
    address = urlsplit(url.split(",")[0])
    try:
        async with asyncio.timeout(NATS_CHECK_SECONDS):
            reader, writer = await asyncio.open_connection(address.hostname or "127.0.0.1", address.port or 4222)
            try:
                greeting = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError) as exc:
        return Dependency(False, type(exc).__name__)
    return Dependency(True) if greeting.startswith(b"INFO") else Dependency(False, "no INFO greeting")


ROUTES = [healthz, readyz]
