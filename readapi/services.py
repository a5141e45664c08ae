"""What request handlers share: the event store for commands, the read-model pool, the position watch."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Protocol, TypeVar

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException
from psycopg_pool import AsyncConnectionPool

from commands.admin import Created
from commands.attachments import AttachmentSettings
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import now
from events.blobs import BlobStore
from events.live import Channel, Held, LiveFrame
from events.sealing import Sealer
from projections.search import SearchConfig
from events.store import JSON_NUL, EventStore
from readapi.consistency import PositionWatch
from readapi.credentials import KnownCredentials
from readapi.unavailable import Unavailable

T = TypeVar("T")
POSITION_HEADER = "Parley-Position"


@dataclass(frozen=True)
class ApiSettings:
    """What the API (and the MCP server it serves) is told by the composition root; the names and meanings
    are the `PARLEY_*` variables' (docs/configuration.md); parley.settings.narrowed fills them in."""

    search: SearchConfig
    database_wait_seconds: float
    max_body_bytes: int
    rate_apikey_per_minute: int
    rate_operator_per_minute: int
    rate_anonymous_per_minute: int
    rate_signin_per_minute: int
    rate_chat_sessions_per_minute: int
    signin_failures_per_account: int
    trusted_proxies: str
    sandbox_job_seconds: float
    webhook_allow_private: bool
    public_url: str
    mcp_allowed_hosts: str
    mcp_allowed_origins: str
    nats_stream: str
    operator_away_after_seconds: float
    smtp_url: str  # set: e-mail is sent (invitations, password resets, notifications)
    mail_domain: str
    mail_inbound_secret: str
    message_edit_window_seconds: float = 900.0


class ConversationFacts(Protocol):
    org_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool


class LiveHub(Protocol):
    """The process's realtime fan-out (delivery/realtime.py's `Hub`), as the SSE routes use it."""

    closed: bool  # the server is stopping: followers end their streams

    def open(self, channel: Channel, after: int | None) -> None: ...

    def close(self, channel: Channel) -> None: ...

    def frames(self, channel: Channel, after: int | None) -> AsyncIterator[bytes]: ...

    def hold(self, held: Held, channel: Channel | None = None) -> None: ...

    def release(self, held: Held) -> None: ...

    async def publish(self, live: LiveFrame) -> None: ...

    async def wait_past(self, position: int, timeout: float, held: Held | None = None) -> None: ...

    async def conversation_facts(self, conversation_id: uuid.UUID) -> ConversationFacts | None: ...


def held_by(principal: Principal) -> Held:
    """What a stream opened for this principal holds: it ends with the credential."""
    return Held(principal.kind, principal.credential_id, principal.generation or 0, principal.expires_at)


class VisitorPresence(Protocol):
    """Who is online: a visitor with an open realtime stream (delivery/realtime.py's `Presence`)."""

    async def opened(self, connection_id: uuid.UUID, customer_id: uuid.UUID, org_id: uuid.UUID,
                     website_id: uuid.UUID) -> None: ...

    def closed(self, connection_id: uuid.UUID) -> None: ...


@dataclass
class Services:
    settings: ApiSettings
    store: EventStore
    pool: AsyncConnectionPool
    watch: PositionWatch
    sealer: Sealer  # seals the secrets commands store, opens those they check
    blobs: BlobStore  # attachments' bytes
    attachments: AttachmentSettings
    nats_url: str = ""
    hub: LiveHub | None = None
    presence: VisitorPresence | None = None
    clock: Callable[[], datetime] = now  # the wall clock; tests of time-dependent answers substitute it
    credentials: KnownCredentials = field(default_factory=KnownCredentials)
    base_url: str = ""  # where the API listens, once bound (PARLEY_PUBLIC_URL names it for the outside)
    # why this process cannot search its index now (it is another process's to fill), or None
    search_unavailable: Callable[[], str | None] = lambda: None
    # the one-time code that lets a client on another machine create a fresh install's first owner (`POST
    # /api/setup`); the composition root makes it and logs it; empty: only this machine may
    setup_code: str = ""


def services(request: Request) -> Services:
    return request.app.state.services


async def run_command(request: Request, command: Callable[..., T] | Callable[..., Awaitable[T]], *args: Any) -> T:
    """An asynchronous command runs on the event loop; a synchronous one on a worker thread."""
    if inspect.iscoroutinefunction(command):
        return await command(services(request).store, *args)
    return await asyncio.to_thread(command, services(request).store, *args)


# scope key: the organization's latest write position when the request's credential was looked up
ORG_POSITION = "parley.org_position"


async def written(request: Request, created: Created, projections: tuple[str, ...] = ("core",)) -> None:
    """Waits until the read models hold a write of this request, to answer with what they show of it.
    Past the bounded wait the write stands, stored, but cannot be shown: 503 says so (and where it is),
    so that the client reads it later rather than repeat it."""
    if not await services(request).watch.wait_for(created.position, projections):
        raise Unavailable(f"the write was stored (position {created.position}) but the read models are behind "
                          "and cannot show it yet; do not repeat it: read it again shortly",
                          {POSITION_HEADER: str(created.position)})


async def no_content(request: Request, created: Created, projections: tuple[str, ...] = ("core",)) -> Response:
    """204 for a write the read models already show (a deletion), with its position."""
    await written(request, created, projections)
    return Response(b"", status_code=204, headers={POSITION_HEADER: str(created.position)})


async def caught_up(request: Request, projections: tuple[str, ...] = ("core",),
                    behind: str = "the latest changes are still being applied") -> None:
    """Read-your-writes for an authenticated request: waits until the read models it queries hold every
    write its organization had made when the request came in, whoever made it. Past the bounded wait it
    answers 503 (saying `behind`, for people) rather than data older than those writes."""
    position = request.scope[ORG_POSITION]  # type: ignore[literal-required]
    if not await services(request).watch.wait_for(position, projections):
        raise Unavailable(f"{behind}; try again in a few seconds (the read models are behind position {position})")


def download_type(request: Request, offered: Iterable[str]) -> str | None:
    """The media type of `offered` that `Accept` asks for, if any (JSON otherwise)."""
    accepted = [part.split(";")[0].strip().lower() for part in request.headers.get("accept", "").split(",")]
    return next((media for media in accepted if media in offered), None)


def json_response(payload: Any, created: Created | None = None, status: int = 200) -> Response:
    headers = {POSITION_HEADER: str(created.position)} if created else None
    return Response(msgspec.json.encode(payload), status_code=status, media_type="application/json",
                    headers=headers)


# How deep a request body's JSON may nest. Far below the interpreter's recursion limit, so that a body
# taken here decodes again wherever its event is read (a projection, the agent) whatever the stack.
MAX_JSON_DEPTH = 64


async def decode_body(request: Request, shape: type[T]) -> T:
    raw = await request.body()
    if len(raw) > services(request).settings.max_body_bytes:
        raise HTTPException(status_code=413, detail="the request body is too large")
    if not raw:
        raise Invalid("a JSON body is required")
    too_deep = Invalid(f"the JSON nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        body = msgspec.json.decode(raw, type=shape)
    except RecursionError:
        raise too_deep from None
    except msgspec.DecodeError as exc:
        if isinstance(exc, msgspec.ValidationError):
            raise
        raise Invalid(f"malformed JSON: {exc}") from None
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH or JSON_NUL in raw:
        value = msgspec.json.decode(raw)
        if depth(value) > MAX_JSON_DEPTH:
            raise too_deep
        if JSON_NUL in raw and (at := first_nul(value)):
            # PostgreSQL text cannot hold it: the read models could not store what the event store took
            raise msgspec.ValidationError(f"text cannot contain U+0000 (NUL) - at `{at}`")
    return body


def depth(value: Any) -> int:
    """How deep arrays and objects nest in a decoded JSON value (a scalar is 0), without recursion."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level + 1)
            pending.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def first_nul(value: Any, path: str = "$") -> str | None:
    """Where the first string (a value or a key) holding U+0000 is, as msgspec names a path."""
    pending = [(value, path)]
    while pending:
        item, at = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return at
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                pending.append((key, f"{at}.{key}") if "\x00" in key else (child, f"{at}.{key}"))
        elif isinstance(item, list):
            pending.extend((child, f"{at}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None
