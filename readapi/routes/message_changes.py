"""Editing and taking back messages: the team's (operator token: the author within the edit window, an
admin any) and the visitor's (their own last message, while no operator has read it)."""

from __future__ import annotations

import uuid

from litestar import Request, Response, delete, patch
from litestar.params import FromPath

from commands import feedback, messages
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import MESSAGES, Message
from projections.views.visitors import ChatMessage, visitor_messages
from readapi.auth import OPERATOR, VISITOR, Authenticated, Decoded
from readapi.openapi import describe
from readapi.routes.chat import fresh
from readapi.routes.resources import one_response
from readapi.services import json_response, run_command, services


def _window(request: Request) -> float:
    return services(request).settings.message_edit_window_seconds


@describe("Edit a message's text", OPERATOR, body=messages.MessageEdit, answer=Message, errors=(403, 404),
          description="The author within the edit window (PARLEY_MESSAGE_EDIT_WINDOW_SECONDS, default 900), or "
                      "an admin for any message. The message then carries `editedAt`; the original stays in the "
                      "event history and the audit log.", operation_id="editMessage")
@patch("/api/messages/{message_id:str}", status_code=200)
async def edit_message(request: Request, principal: Authenticated, payload: Decoded[messages.MessageEdit],
                       message_id: FromPath[str]) -> Response:
    created = await run_command(request, messages.edit_message, principal, parse_id(message_id), payload,
                                _window(request))
    return await one_response(request, MESSAGES, principal, created.id, created=created)


@describe("Delete (unsend) a message", OPERATOR, answer=Message, errors=(403, 404),
          description="Same rule as editing. The message then carries `deleted: true` and empty `content` for "
                      "every reader; the original stays in the event history and the audit log.",
          operation_id="deleteMessage")
@delete("/api/messages/{message_id:str}", status_code=200)
async def delete_message(request: Request, principal: Authenticated, message_id: FromPath[str]) -> Response:
    created = await run_command(request, messages.delete_message, principal, parse_id(message_id), _window(request))
    return await one_response(request, MESSAGES, principal, created.id, created=created)


async def _last_visible(request: Request, principal: Principal, message_id: uuid.UUID) -> uuid.UUID | None:
    """The id of the last message still shown in the conversation of `message_id` (None: not the visitor's)."""
    async with services(request).pool.connection() as conn:
        named = await visitor_messages(conn, principal.org_id, principal.customer_id, message_id=message_id)
        if not named:
            return None
        shown = [m for m in await visitor_messages(conn, principal.org_id, principal.customer_id,
                                                   named[0].conversation_id) if not m.deleted]
    return shown[-1].id if shown else None


@describe("Delete the visitor's own last message while no operator has read it", VISITOR, answer=ChatMessage,
          errors=(404, 409), operation_id="deleteChatMessage")
@delete("/api/chat/messages/{message_id:str}", status_code=200)
async def delete_as_visitor(request: Request, principal: Authenticated, message_id: FromPath[str]) -> Response:
    await fresh(request, principal, None)
    message = parse_id(message_id)
    last_id = await _last_visible(request, principal, message)
    created = await run_command(request, feedback.delete_as_visitor, principal, message,
                                str(principal.website_id), last_id)
    await fresh(request, principal, created)
    async with services(request).pool.connection() as conn:
        [shown] = await visitor_messages(conn, principal.org_id, principal.customer_id, message_id=created.id)
    return json_response(shown, created)


ROUTES = [edit_message, delete_message, delete_as_visitor]
