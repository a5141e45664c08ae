"""Server-Sent Events channels: `GET /api/realtime` for operators (the organization's changes) and
`GET /api/chat/realtime` for visitors (what that visitor may see). Credentials travel in the
Authorization header only, so browsers read these with `fetch` streaming rather than `EventSource`.
A reconnecting client sends `Last-Event-ID` and receives exactly what it missed.

Also typing, both ways: the team's (`POST /api/conversations/{id}/typing`), a live frame for the visitor, and
the visitor's (`POST /api/chat/typing`), a live frame for the organization's dashboards; never events."""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, AsyncIterator, Awaitable, Callable

import msgspec

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Stream
from litestar.response.base import ASGIResponse
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import Receive, Scope, Send

from commands.errors import Invalid, NotFound
from events.live import Channel, LiveFrame
from events.ids import parse_id
from readapi.auth import OPERATOR, VISITOR, Authenticated, Decoded
from readapi.openapi import describe, header
from readapi.services import held_by, services

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
OPENED = b"retry: 1000\n\n"
LAST_EVENT_ID = header("Last-Event-ID", Annotated[str, msgspec.Meta(pattern="^[0-9]*$")],
                       "The id of the last event received: the stream resumes after it.")
FRAMES = ("Server-Sent Events. The first frame is `retry: 1000`; then each change is an `id:` (its position), "
          "an `event:` naming it and a `data:` JSON object. ")
LIVE_FRAMES = ("Live frames, without an `id:` and never replayed: `typing` ({conversationId, typing}: the team; "
               "for operators, `visitor.typing`: the visitor), "
               "`agent.typing` ({conversationId, typing}), `message.delta` ({conversationId, messageId, delta}: "
               "the AI agent's text as it is written; `messageId` is the id of the `message.created` that ends it)")


class TypingUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """`POST /api/conversations/{conversationId}/typing`: whether the operator is writing a reply."""

    typing: bool


class TeamTyping(msgspec.Struct, rename="camel"):
    """The visitor's live `typing` frame, and the dashboards' `visitor.typing`."""

    conversation_id: uuid.UUID
    typing: bool


class VisitorTypingUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """`POST /api/chat/typing`: whether the visitor is writing in their conversation."""

    conversation_id: str
    typing: bool


def last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id")
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()):
        raise Invalid("Last-Event-ID must be the id of an event this API sent", "Last-Event-ID")
    return int(raw)


class EventStream(Stream):
    """Litestar's `Stream`, less what it holds per open stream to learn that the client left (an anyio task
    group, its cancel scope and a task): one plain task waits for the disconnect and calls `gone`, which
    ends the body's iterator."""

    __slots__ = ("gone",)

    def __init__(self, content: AsyncIterator[bytes], gone: Callable[[], None]):
        super().__init__(content, media_type="text/event-stream", headers=SSE_HEADERS)
        self.gone = gone

    def to_asgi_response(self, *args, **kwargs) -> ASGIResponse:  # type: ignore[override]
        return _UntilGone(super().to_asgi_response(*args, **kwargs), self.gone)  # type: ignore[return-value]


class _UntilGone:
    __slots__ = ("response", "gone")

    def __init__(self, response: ASGIStreamingResponse, gone: Callable[[], None]):
        self.response = response
        self.gone = gone

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self.response
        await response.start_response(send=send)
        listener = asyncio.ensure_future(_disconnected(receive))
        listener.add_done_callback(lambda done: done.cancelled() or self.gone())
        try:
            async for chunk in response.iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()
        await response.after_response()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def event_stream(request: Request, channel: Channel, on_open: Callable[[], Awaitable[None]] | None = None,
                 on_close: Callable[[], None] = lambda: None) -> Stream:
    """The SSE response. The channel opens when the body starts, so a client gone before then leaves
    nothing registered; the first bytes it receives mean the channel is open."""
    hub = services(request).hub
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

    return EventStream(body(), gone=lambda: hub.close(channel))


@describe("The organization's changes as they happen", OPERATOR, answer=FRAMES + "Events: `conversation.created` "
          "(a Conversation), `conversation.updated` ({conversationId, resolved, spam}), `message.created` "
          "(a Message), `MESSAGE_UPDATED_EVENT` (the message id and its rating or reactions). " + LIVE_FRAMES +
          "; for an operator's token also `notification.created` ({notification, unread}: a notification of "
          "yours, as `GET /api/notifications` lists it, and your unread count) and `notifications.read` "
          "({unread}: you marked some read, maybe in another tab). Notification frames are not replayed: "
          "after a reconnection read `GET /api/notifications` again.",
          media_type="text/event-stream", query=(LAST_EVENT_ID,), operation_id="streamOperatorEvents")
@get("/api/realtime")
async def operator_stream(request: Request, principal: Authenticated) -> Stream:
    return event_stream(request, Channel("operator", principal.org_id, operator_id=principal.operator_id,
                                         held=held_by(principal)))


@describe("What the visitor may see, as it happens", VISITOR, answer=FRAMES + "Events: `conversation.created` "
          "(a ChatConversation), `message.created` (a ChatMessage, never an internal note), "
          "`MESSAGE_UPDATED_EVENT` ({messageId}: read the message again). " + LIVE_FRAMES + ", and "
          "`action.offered` ({conversationId, toolCallId, name, arguments}: answer with "
          "`POST /api/chat/actions/{toolCallId}/result`).", media_type="text/event-stream",
          query=(LAST_EVENT_ID,), operation_id="streamChatEvents")
@get("/api/chat/realtime")
async def visitor_stream(request: Request, principal: Authenticated) -> Stream:
    """A visitor holding this stream open is online (the inbox's `online` filter)."""
    presence = services(request).presence
    connection_id = uuid.uuid4()
    return event_stream(
        request, Channel("visitor", principal.org_id, principal.customer_id),
        on_open=lambda: presence.opened(connection_id, principal.customer_id, principal.org_id, principal.website_id),
        on_close=lambda: presence.closed(connection_id))


@describe("Tell the visitor whether the team is typing a reply", OPERATOR, body=TypingUpdate, status=204,
          position=False, example={"typing": True},
          description="Ephemeral: no event is stored. The visitor's open realtime channels receive a live `typing` "
                      "frame ({conversationId, typing}); nothing goes to a conversation for operators only. Send "
                      "`true` every few seconds while the operator types and `false` when they stop or send.",
          operation_id="sendTypingIndicator")
@post("/api/conversations/{conversation_id:str}/typing", status_code=200)  # the Response below sets 204
async def team_typing(request: Request, principal: Authenticated, payload: Decoded[TypingUpdate],
                      conversation_id: FromPath[str]) -> Response:
    hub = services(request).hub
    found = parse_id(conversation_id)
    facts = found and await hub.conversation_facts(found)
    if not facts or facts.org_id != principal.org_id:
        raise NotFound("conversation not found", "conversationId")
    if not facts.operator_only:
        await hub.publish(LiveFrame(principal.org_id, facts.customer_id, False, "typing",
                                    msgspec.Raw(msgspec.json.encode(TeamTyping(found, payload.typing)))))
    return Response(b"", status_code=204)


@describe("Tell the team whether the visitor is typing", VISITOR, body=VisitorTypingUpdate, status=204, position=False,
          example={"conversationId": "3e8a1f20-6b7c-4d5e-9f01-2a3b4c5d6e7f", "typing": True},
          description="Ephemeral: no event is stored. The organization's open dashboards receive a live "
                      "`visitor.typing` frame ({conversationId, typing}). 404 for a conversation that is not the "
                      "visitor's. The widget sends `true` at most every 3 s while the visitor types.",
          errors=(404,), operation_id="sendChatTypingIndicator")
@post("/api/chat/typing", status_code=200)  # the Response below sets 204
async def visitor_typing(request: Request, principal: Authenticated, payload: Decoded[VisitorTypingUpdate]) -> Response:
    hub = services(request).hub
    found = parse_id(payload.conversation_id)
    facts = found and await hub.conversation_facts(found)
    if not facts or facts.customer_id != principal.customer_id or facts.operator_only:
        raise NotFound("conversation not found", "conversationId")
    await hub.publish(LiveFrame(principal.org_id, None, True, "visitor.typing",
                                msgspec.Raw(msgspec.json.encode(TeamTyping(found, payload.typing)))))
    return Response(b"", status_code=204)


ROUTES = [operator_stream, visitor_stream, team_typing, visitor_typing]
