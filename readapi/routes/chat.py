"""The visitor routes the embedded chat surfaces call. They accept only `Authorization: ChatSession <token>`
(except starting a session, which needs no credential) and show only the visitor's own transcript."""

from __future__ import annotations

import uuid
from functools import partial

import msgspec
from litestar import Request, Response, delete, get, post, put

from commands import chat
from commands.admin import Created, hash_secret
from commands.errors import Invalid, NotFound, Unauthorized
from commands.principal import Principal
from events.ids import parse_id
from readapi.auth import PUBLIC, VISITOR, Auth, Authenticated, Decoded, with_principal
from readapi.cors import check_origin
from readapi.openapi import ID, describe, query
from readapi.services import caught_up, json_response, run_command, services, written
from projections.views.credentials import principal_of
from projections.views.visitors import (ChatConversation, ChatMessage, Profile, chat_message_of, current_conversation,
                                        visitor_conversations, visitor_messages, visitor_profile)


class SessionCreated(msgspec.Struct, rename="camel"):
    session_token: str
    customer_id: uuid.UUID


class ConversationStart(msgspec.Struct, forbid_unknown_fields=True):
    """Starting a conversation takes nothing; an empty object (or no body) is accepted."""


class ContextStored(msgspec.Struct, rename="camel"):
    readables: int
    actions: int


async def fresh(request: Request, principal: Principal, created: Created | None) -> None:
    """Read-your-writes for the visitor: after their own write, or anyone's write to their organization."""
    if created is not None:
        await written(request, created, ("core", "chat"))
    else:
        await caught_up(request, ("core", "chat"))


@describe("Start a visitor's chat session", PUBLIC, body=chat.SessionStart, answer=SessionCreated, position=True,
          errors=(401, 404), example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10"},
          description="A signed-in visitor also sends `userId` and its `signature` (HMAC-SHA256 with the "
                      "website's identity secret); 401 when the signature does not match. A visitor who signs in "
                      "during a chat also sends `sessionToken`, the anonymous session the browser holds: when "
                      "nobody holds that identity yet, its customer becomes the identified one, keeping its "
                      "conversations (401 when `sessionToken` is no session of this website).",
          operation_id="createChatSession")
@post("/api/chat/sessions", status_code=200)
async def start_session(request: Request, payload: Decoded[chat.SessionStart]) -> Response:
    website_id = parse_id(payload.website_id)
    await check_origin(request, website_id)
    anonymous = None
    if payload.session_token is not None:
        async with services(request).pool.connection() as conn:
            found = await principal_of(conn, "chat", hash_secret(payload.session_token))
        if found is None or found.principal.website_id != website_id:
            raise Unauthorized("sessionToken is not a session of this website", "sessionToken")
        anonymous = found.principal.customer_id
    session = await run_command(request, chat.start_session, services(request).sealer, payload, anonymous)
    created = Created(session.customer_id, session.position)
    await written(request, created, ("core", "chat"))
    return json_response(SessionCreated(session.token, session.customer_id), created)


class SessionEnded(msgspec.Struct, rename="camel"):
    session_id: uuid.UUID
    ended: bool


@describe("End the visitor's session (sign-out on a shared device)", VISITOR, answer=SessionEnded,
          description="The widget's `[\"reset\"]`: the session's token stops working at once (401 after), on every "
                      "API process and for its open realtime streams; the visitor's next session is a new "
                      "anonymous one.", operation_id="endChatSession")
@delete("/api/chat/session", status_code=200)
async def end_session(request: Request, principal: Authenticated) -> Response:
    created = await run_command(request, chat.end_session, principal)
    await written(request, created, ("chat",))
    return json_response(SessionEnded(created.id, True), created)


@describe("Start a conversation as the visitor", VISITOR, body=ConversationStart, body_required=False,
          links={"listChatMessages": {"query.conversationId": ID},
                 "createChatMessage": {"requestBody": {"conversationId": ID, "content": "Hello"}}},
          answer=ChatConversation, operation_id="startChatConversation")
@post("/api/chat/conversations", status_code=200)
async def start_conversation(request: Request, principal: Authenticated,
                             payload: Decoded[ConversationStart | None]) -> Response:
    # `payload` is declared so that a body, when one is sent, is checked; it carries nothing
    created = await run_command(request, chat.start_conversation, principal)
    await fresh(request, principal, created)
    async with services(request).pool.connection() as conn:
        [conversation] = await visitor_conversations(conn, principal.org_id, principal.customer_id, created.id)
    return json_response(conversation, created)


@describe("The visitor's conversations", VISITOR, answer=list[ChatConversation], operation_id="listChatConversations")
@get("/api/chat/conversations")
async def list_visitor_conversations(request: Request, principal: Authenticated) -> Response:
    await fresh(request, principal, None)
    async with services(request).pool.connection() as conn:
        return json_response(await visitor_conversations(conn, principal.org_id, principal.customer_id))


@describe("Post a message as the visitor", Auth(("chat",), kept=True), body=chat.VisitorMessage, answer=ChatMessage,
          errors=(404,),
          example={"conversationId": "3e8a1f20-6b7c-4d5e-9f01-2a3b4c5d6e7f", "content": "Hi, I need help"},
          operation_id="createChatMessage")
@post("/api/chat/messages", status_code=200)
async def post_message(request: Request) -> Response:
    created = await with_principal(request, partial(
        chat.post_message, attachments_max_bytes=services(request).attachments.attachment_message_max_bytes))
    # answered from the event, like POST /api/messages: the hot write path does not wait for the projection
    return json_response(chat_message_of(created.event), created)


@describe("The visitor's transcript of one conversation", VISITOR, answer=list[ChatMessage], errors=(404,),
          query=(query("conversationId", uuid.UUID, "The conversation.", required=True),),
          operation_id="listChatMessages")
@get("/api/chat/messages")
async def transcript(request: Request, principal: Authenticated) -> Response:
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
        profile = await visitor_profile(conn, principal.org_id, principal.customer_id)
    return json_response(profile, created)


@describe("The visitor's profile", VISITOR, answer=Profile, operation_id="getChatProfile")
@get("/api/chat/profile")
async def get_profile(request: Request, principal: Authenticated) -> Response:
    return await profile_response(request, principal, None)


@describe("Change the visitor's profile (only the fields given)", VISITOR, body=chat.ProfileUpdate,
          answer=Profile, example={"nickname": "Ada", "phone": "+44 20 7946 0000"}, operation_id="updateChatProfile")
@put("/api/chat/profile")
async def update_profile(request: Request, principal: Authenticated, payload: Decoded[chat.ProfileUpdate]) -> Response:
    created = await run_command(request, chat.update_profile, principal, payload)
    return await profile_response(request, principal, created)


@describe("Set metadata on the visitor's current conversation (`setMetadata`)", VISITOR, body=chat.MetadataUpdate,
          answer=chat.Metadata, example={"metadata": {"plan": "pro", "coupon": None}},
          description="The current conversation is the visitor's latest open one; without one, the keys are held "
                      "for the next conversation the visitor starts (`conversationId` is then null). A null value "
                      "removes a key; a conversation holds at most 50.", operation_id="setChatMetadata")
@put("/api/chat/metadata")
async def set_metadata(request: Request, principal: Authenticated, payload: Decoded[chat.MetadataUpdate]) -> Response:
    await fresh(request, principal, None)
    async with services(request).pool.connection() as conn:
        current = await current_conversation(conn, principal.org_id, principal.customer_id)
    created, metadata = await run_command(request, chat.set_metadata, principal, current, payload)
    return json_response(metadata, created)


@describe("Set the page context the AI agent may read (readables and actions)", VISITOR, body=chat.ContextUpdate,
          answer=ContextStored, example={
              "readables": [{"userId": None, "description": "Cart", "value": {"items": 2}}],
              "actions": [{"userId": None, "name": "applyCoupon", "description": "Applies a coupon code"}]},
          description="The whole current set: it replaces the session's earlier one. At most 50 readables "
                      "(each value at most 8 KiB of JSON) and 50 actions.", operation_id="setChatContext")
@put("/api/chat/context")
async def set_context(request: Request, principal: Authenticated, payload: Decoded[chat.ContextUpdate]) -> Response:
    created = await run_command(request, chat.set_context, principal, payload)
    return json_response(ContextStored(len(payload.readables), len(payload.actions)), created)


ROUTES = [start_session, end_session, start_conversation, list_visitor_conversations, post_message, transcript, get_profile,
          update_profile, set_metadata, set_context]
