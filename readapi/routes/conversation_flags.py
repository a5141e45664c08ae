"""Resolving, reopening, marking spam, pausing or resuming the AI agent: `PATCH /api/conversations/{id}`
for an operator token."""

from __future__ import annotations

from litestar import Request, Response, patch
from litestar.params import FromPath

from commands import conversations
from events.ids import parse_id
from readapi.auth import OPERATOR, Authenticated, Decoded
from projections.views.collections import CONVERSATION_RECORD, ConversationRecord
from readapi.openapi import describe
from readapi.routes.resources import one_response
from readapi.services import run_command


@describe("Resolve, reopen or mark a conversation as spam; pause or resume the website's AI agent in it", OPERATOR, body=conversations.ConversationFlags,
          answer=ConversationRecord, example={"resolved": True}, operation_id="updateConversation")
@patch("/api/conversations/{conversation_id:str}")
async def update_flags(request: Request, principal: Authenticated, payload: Decoded[conversations.ConversationFlags],
                       conversation_id: FromPath[str]) -> Response:
    created = await run_command(request, conversations.update_flags, principal, parse_id(conversation_id), payload)
    return await one_response(request, CONVERSATION_RECORD, principal, created.id, created=created)


ROUTES = [update_flags]
