"""Changing a conversation: `PATCH /api/conversations/{id}` for an operator token: resolving, reopening,
marking spam, pausing or resuming the AI agent, and the team's workflow on it (assignee, team, labels,
priority, snooze), optionally only if it is still at the version the client read (`If-Match`, the `ETag`
of `GET /api/conversations/{id}`)."""

from __future__ import annotations

from litestar import Request, Response, patch
from litestar.params import FromPath

from commands import conversations
from commands.errors import PreconditionFailed
from events.ids import parse_id
from readapi.auth import OPERATOR, Authenticated, Decoded
from projections.views.collections import ConversationRecord
from projections.views.parameters import header
from readapi.openapi import describe
from readapi.routes.resources import conversation_response
from readapi.services import run_command

IF_MATCH = header("If-Match", str, "Change the conversation only if its ETag is still this one (412 otherwise).")


def parse_if_match(request: Request) -> int | None:
    """The version `If-Match` names (`"7"`, or weak `W/"7"`); None when absent or `*`. Anything else
    matches no version: 412."""
    raw = request.headers.get("if-match")
    if raw is None or raw.strip() == "*":
        return None
    value = raw.strip().removeprefix("W/").strip('"')
    if not value.isascii() or not value.isdigit():
        raise PreconditionFailed(f"If-Match {raw!r} names no version of this conversation")
    return int(value)


@describe("Change a conversation: resolve, reopen or mark it as spam; pause or resume the website's AI agent in "
          "it; assign it (`assigneeId`, `teamId`), label it (`labels`, `addLabels`, `removeLabels`), set its "
          "`priority`, snooze it (`snoozedUntil`, `snoozed`). Only the fields given change; with `If-Match`, only "
          "if nobody changed it since", OPERATOR, body=conversations.ConversationChange, answer=ConversationRecord,
          query=(IF_MATCH,), errors=(412,), headers=("ETag",), example={"resolved": True},
          operation_id="updateConversation")
@patch("/api/conversations/{conversation_id:str}")
async def update_conversation(request: Request, principal: Authenticated,
                              payload: Decoded[conversations.ConversationChange], conversation_id: FromPath[str]) -> Response:
    created = await run_command(request, conversations.update_conversation, principal, parse_id(conversation_id),
                                payload, parse_if_match(request))
    return await conversation_response(request, principal, created.id, created)


ROUTES = [update_conversation]
