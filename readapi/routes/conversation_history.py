"""`GET /api/conversations/{id}/history`: the conversation's audit trail, for operators only: who did what,
when, to it and its messages (created, messages and notes, receipts, ratings, reactions, resolve and
reopen, spam), each change in its public shape (events/public.py)."""

from __future__ import annotations

from litestar import Request, Response, get
from litestar.params import FromPath

from events.ids import parse_id
from readapi.auth import OPERATOR, Authenticated
from readapi.openapi import describe
from readapi.services import json_response, services
from readapi.time_travel import AuditTrail, audit_trail


@describe("A conversation's audit trail", OPERATOR, answer=AuditTrail, errors=(404,),
          operation_id="getConversationHistory")
@get("/api/conversations/{conversation_id:str}/history")
async def conversation_history(request: Request, principal: Authenticated, conversation_id: FromPath[str]) -> Response:
    return json_response(await audit_trail(services(request), principal, parse_id(conversation_id)))


ROUTES = [conversation_history]
