"""Health for orchestrators: `/healthz` (the process answers) and `/readyz` (it can serve: PostgreSQL
reachable), with each read model's lag behind the event store. NATS is never on the critical path (the
workers and the realtime streams read the store while it is down), so NATS down leaves the process ready
but `degraded`: an orchestrator keeps it in service, a person sees why it is slower. Neither route needs a
credential nor counts against a rate limit (they are outside `/api/`)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import msgspec
from litestar import Request, Response, get

from events.store import EVENTS_TABLE, STREAM_WARNINGS
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


class Search(msgspec.Struct, omit_defaults=True):
    available: bool  # this process's search answers from an index that is kept (not another process's)
    # "loading" while the search model loads after start-up (searches answer 503 meanwhile), then "ready";
    # the rest of the service serves all along
    model: str
    error: str | None = None


class Readiness(msgspec.Struct, rename="camel", omit_defaults=True):
    status: str  # "ready", "degraded" (ready, with what degrades it named) or "not ready"
    postgres: Dependency
    nats: Dependency
    search: Search
    head: int | None = None  # the store's latest position
    read_models: dict[str, ReadModel] | None = None
    degraded: list[str] | None = None  # what works less well ("nats": live frames lost, consumers poll the store)
    # what the relay found weaker or stronger in the stream than it asked for, and kept (not ready-affecting)
    stream_warnings: list[str] | None = None


@describe("Liveness: the process serves HTTP", PUBLIC, answer=Alive, tag="health", operation_id="checkLiveness")
@get("/healthz")
async def healthz() -> Response:
    return json_response(Alive("ok"))


@describe("Readiness: PostgreSQL reachable (200, else 503 with the same report: the process cannot serve); NATS "
          "unreachable leaves it ready with status `degraded`; with each read model's lag behind the event store and "
          "whether search is still loading its model, and what the relay found different in the stream's "
          "configuration and kept (`streamWarnings`)",
          PUBLIC, answer=Readiness, also=(503,), tag="health", operation_id="checkReadiness")
@get("/readyz")
async def readyz(request: Request) -> Response:
    (postgres, head, read_models, warnings), nats = await asyncio.gather(_postgres(request),
                                                                         _nats(services(request).nats_url))
    # search alone unavailable leaves the process ready: it serves everything else
    search_error = services(request).search_unavailable()
    degraded = [] if nats.reachable else ["nats"]
    status = "not ready" if not postgres.reachable else "degraded" if degraded else "ready"
    model = "ready" if embedder_loaded(services(request).settings.search) else "loading"
    readiness = Readiness(status, postgres, nats, Search(search_error is None, model, search_error), head, read_models,
                          degraded or None, warnings or None)
    return json_response(readiness, status=200 if postgres.reachable else 503)


async def _postgres(request: Request) -> tuple[Dependency, int | None, dict[str, ReadModel] | None, list[str]]:
    svc = services(request)
    try:
        async with asyncio.timeout(svc.settings.database_wait_seconds), svc.pool.connection() as conn:
            head = (await (await conn.execute(
                f"SELECT coalesce(max(notification_id), 0) FROM {EVENTS_TABLE}")).fetchone())[0]
            positions = await (await conn.execute(
                "SELECT name, position FROM parley_projection_positions ORDER BY name")).fetchall()
            warnings = await (await conn.execute(
                f"SELECT warnings FROM {STREAM_WARNINGS} WHERE stream = %s", (svc.settings.nats_stream,))).fetchone()
    except (*DATABASE_UNAVAILABLE, TimeoutError) as exc:
        return Dependency(False, type(exc).__name__), None, None, []
    return (Dependency(True), head, {name: ReadModel(position, max(0, head - position)) for name, position in positions},
            warnings[0] if warnings else [])


async def _nats(url: str) -> Dependency:
    """Reachable when a server of the comma-separated list greets a new connection with its INFO line (what
    every client reads first): a client connects to any of them."""
    checks = await asyncio.gather(*(_nats_server(server.strip()) for server in url.split(",") if server.strip()))
    return next((check for check in checks if check.reachable), checks[0])


async def _nats_server(url: str) -> Dependency:
    address = urlsplit(url if "://" in url else f"nats://{url}")
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
