"""Server-Sent Events channels: `GET /api/realtime` for operators (the organization's changes) and
`GET /api/chat/realtime` for visitors (what that visitor may see). Credentials travel in the
Authorization header only, so browsers read these with `fetch` streaming rather than `EventSource`.
A reconnecting client sends `Last-Event-ID` and receives exactly what it missed."""

from __future__ import annotations

import uuid
from typing import Annotated, AsyncIterator, Awaitable, Callable

import msgspec

from litestar import Request, get
from litestar.response import Stream

from commands.errors import Invalid
from delivery.realtime import Channel, Realtime
from readapi.auth import OPERATOR, VISITOR, authenticate
from readapi.openapi import describe, header
from readapi.services import services

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
OPENED = b"retry: 1000\n\n"
LAST_EVENT_ID = header("Last-Event-ID", Annotated[str, msgspec.Meta(pattern="^[0-9]*$")],
                       "The id of the last event received: the stream resumes after it.")
FRAMES = ("Server-Sent Events. The first frame is `retry: 1000`; then each change is an `id:` (its position), "
          "an `event:` naming it and a `data:` JSON object. ")


def realtime(request: Request) -> Realtime:
    return services(request).extras["realtime"]


def last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id")
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()):
        raise Invalid("Last-Event-ID must be the id of an event this API sent", "Last-Event-ID")
    return int(raw)


def event_stream(request: Request, channel: Channel, on_open: Callable[[], Awaitable[None]] | None = None,
                 on_close: Callable[[], None] = lambda: None) -> Stream:
    """The SSE response. The channel opens when the body starts, so a client gone before then leaves
    nothing registered; the first bytes it receives mean the channel is open."""
    hub = realtime(request).hub
    after = last_event_id(request)

    async def body() -> AsyncIterator[bytes]:
        hub.open(channel, after)
        try:
            if on_open is not None:
                await on_open()
            yield OPENED
            async for data in hub.frames(channel, after):
                yield data
        finally:  # the client left, or the server is stopping
            hub.close(channel)
            on_close()

    return Stream(body(), media_type="text/event-stream", headers=SSE_HEADERS)


@describe("The organization's changes as they happen", OPERATOR, answer=FRAMES + "Events: `conversation.created` "
          "(a Conversation), `conversation.updated` ({conversationId, resolved, spam}), `message.created` "
          "(a Message), `MESSAGE_UPDATED_EVENT` (the message id and its rating or reactions).",
          media_type="text/event-stream", query=(LAST_EVENT_ID,))
@get("/api/realtime")
async def operator_stream(request: Request) -> Stream:
    principal = await authenticate(request, accept=("operator",))
    return event_stream(request, Channel("operator", principal.org_id))


@describe("What the visitor may see, as it happens", VISITOR, answer=FRAMES + "Events: `conversation.created` "
          "(a ChatConversation), `message.created` (a ChatMessage, never an internal note), "
          "`MESSAGE_UPDATED_EVENT` ({messageId}: read the message again).", media_type="text/event-stream",
          query=(LAST_EVENT_ID,))
@get("/api/chat/realtime")
async def visitor_stream(request: Request) -> Stream:
    """A visitor holding this stream open is online (the inbox's `online` filter)."""
    principal = await authenticate(request, accept=("chat",))
    presence = realtime(request).presence
    connection_id = uuid.uuid4()
    return event_stream(
        request, Channel("visitor", principal.org_id, principal.customer_id),
        on_open=lambda: presence.opened(connection_id, principal.customer_id, principal.org_id, principal.website_id),
        on_close=lambda: presence.closed(connection_id))


ROUTES = [operator_stream, visitor_stream]
