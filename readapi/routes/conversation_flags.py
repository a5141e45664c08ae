"""Resolving, reopening and marking spam: `PATCH /api/conversations/{id}` for an operator token."""

from __future__ import annotations

from litestar import Request, Response, patch
from litestar.params import FromPath

from commands import conversations
from parley.ids import parse_id
from readapi.auth import authenticate
from readapi.collections import CONVERSATIONS
from readapi.routes.resources import one_response
from readapi.services import decode_body, run_command


@patch("/api/conversations/{conversation_id:str}")
async def update_flags(request: Request, conversation_id: FromPath[str]) -> Response:
    principal = await authenticate(request, accept=("operator",))
    body = await decode_body(request, conversations.ConversationFlags)
    created = await run_command(request, conversations.update_flags, principal, parse_id(conversation_id), body)
    return await one_response(request, CONVERSATIONS, principal, created.id, created=created)


ROUTES = [update_flags]
