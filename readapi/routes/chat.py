"""The visitor routes the embedded chat surfaces call. They accept only `Authorization: ChatSession <token>`
(except starting a session, which needs no credential) and show only the visitor's own transcript."""

from __future__ import annotations

import uuid

import msgspec
from litestar import Request, Response, get, post, put

from commands import chat
from commands.admin import Created
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from parley.ids import parse_id
from readapi.auth import authenticate, with_principal
from readapi.services import caught_up, decode_body, json_response, run_command, services, written
from readapi.visitor_views import chat_message_of, visitor_conversations, visitor_messages


class SessionCreated(msgspec.Struct, rename="camel"):
    session_token: str
    customer_id: uuid.UUID


class ConversationStart(msgspec.Struct, forbid_unknown_fields=True):
    """Starting a conversation takes nothing; an empty object (or no body) is accepted."""


class Profile(msgspec.Struct, rename={"customer_id": "customerId", "user_id": "userId"}):
    customer_id: uuid.UUID
    email: str | None
    nickname: str | None
    phone: str | None
    user_id: str | None
    metadata: dict[str, str]


async def visitor(request: Request) -> Principal:
    return await authenticate(request, accept=("chat",))


async def fresh(request: Request, principal: Principal, created: Created | None) -> None:
    """Read-your-writes for the visitor: after their own write, or anyone's write to their organization."""
    if created is not None:
        await written(request, created, ("core", "chat"))
    else:
        await caught_up(request, ("core", "chat"))


@post("/api/chat/sessions", status_code=200)
async def start_session(request: Request) -> Response:
    body = await decode_body(request, chat.SessionStart)
    session = await run_command(request, chat.start_session, body)
    created = Created(session.customer_id, session.position)
    await written(request, created, ("core", "chat"))
    return json_response(SessionCreated(session.token, session.customer_id), created)


@post("/api/chat/conversations", status_code=200)
async def start_conversation(request: Request) -> Response:
    principal = await visitor(request)
    if await request.body():
        await decode_body(request, ConversationStart)
    created = await run_command(request, chat.start_conversation, principal)
    await fresh(request, principal, created)
    async with services(request).pool.connection() as conn:
        [conversation] = await visitor_conversations(conn, principal.org_id, principal.customer_id, created.id)
    return json_response(conversation, created)


@get("/api/chat/conversations")
async def list_conversations(request: Request) -> Response:
    principal = await visitor(request)
    await fresh(request, principal, None)
    async with services(request).pool.connection() as conn:
        return json_response(await visitor_conversations(conn, principal.org_id, principal.customer_id))


@post("/api/chat/messages", status_code=200)
async def post_message(request: Request) -> Response:
    created = await with_principal(request, chat.post_message, chat.VisitorMessage, accept=("chat",))
    # answered from the event, like POST /api/messages: the hot write path does not wait for the projection
    return json_response(chat_message_of(created.event), created)


@get("/api/chat/messages")
async def transcript(request: Request) -> Response:
    principal = await visitor(request)
    raw = request.query_params.get("conversationId")
    if not raw:
        raise Invalid("conversationId is required", "conversationId")
    await fresh(request, principal, None)
    async with services(request).pool.connection() as conn:
        conversation_id = parse_id(raw)
        if conversation_id is None or not await visitor_conversations(
                conn, principal.org_id, principal.customer_id, conversation_id):
            raise NotFound("conversation not found", "conversationId")
        return json_response(await visitor_messages(conn, principal.org_id, principal.customer_id, conversation_id))


async def profile_response(request: Request, principal: Principal, created: Created | None) -> Response:
    await fresh(request, principal, created)
    async with services(request).pool.connection() as conn:
        row = await (await conn.execute(
            "SELECT id, email, nickname, phone, user_id FROM rm_customers WHERE id = %s AND org_id = %s",
            (principal.customer_id, principal.org_id))).fetchone()
        metadata = await (await conn.execute(
            "SELECT key, value FROM rm_customer_metadata WHERE customer_id = %s ORDER BY key",
            (principal.customer_id,))).fetchall()
    return json_response(Profile(*row, dict(metadata)), created)


@get("/api/chat/profile")
async def get_profile(request: Request) -> Response:
    principal = await visitor(request)
    return await profile_response(request, principal, None)


@put("/api/chat/profile")
async def update_profile(request: Request) -> Response:
    principal = await visitor(request)
    body = await decode_body(request, chat.ProfileUpdate)
    created = await run_command(request, chat.update_profile, principal, body)
    return await profile_response(request, principal, created)


ROUTES = [start_session, start_conversation, list_conversations, post_message, transcript, get_profile,
          update_profile]
