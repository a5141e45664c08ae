"""Ratings and reactions: the visitor's (chat-session credential only) and the team's (operator token only)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post
from litestar.params import FromPath

from commands import feedback
from events.ids import parse_id
from commands.principal import Principal
from readapi.auth import OPERATOR, VISITOR, Authenticated, Decoded
from projections.views.collections import MESSAGES, Message
from readapi.openapi import describe
from readapi.routes.chat import fresh
from readapi.routes.resources import one_response
from readapi.services import json_response, run_command, services
from projections.views.visitors import ChatMessage, VisitorReactions, visitor_messages


async def visitor_feedback(request: Request, principal: Principal, payload: Any, message_id: str,
                           command) -> tuple:
    """Runs a visitor's rating or reaction; returns the message as the visitor sees it afterwards."""
    created = await run_command(request, command, principal, parse_id(message_id), payload)
    await fresh(request, principal, created)
    async with services(request).pool.connection() as conn:
        [message] = await visitor_messages(conn, principal.org_id, principal.customer_id, message_id=created.id)
    return message, created


@describe("Rate a message as the visitor", VISITOR, body=feedback.VisitorRating, answer=ChatMessage,
          operation_id="rateMessage")
@post("/api/messages/{message_id:str}/rating", status_code=200)
async def rate_as_visitor(request: Request, principal: Authenticated, payload: Decoded[feedback.VisitorRating],
                          message_id: FromPath[str]) -> Response:
    message, created = await visitor_feedback(request, principal, payload, message_id, feedback.rate_as_visitor)
    return json_response(message, created)


@describe("React to a message as the visitor (null clears the reaction)", VISITOR, body=feedback.VisitorReaction,
          answer=VisitorReactions, errors=(409,), operation_id="reactToMessageAsCustomer")
@post("/api/messages/{message_id:str}/reaction/customer", status_code=200)
async def react_as_visitor(request: Request, principal: Authenticated, payload: Decoded[feedback.VisitorReaction],
                           message_id: FromPath[str]) -> Response:
    message, created = await visitor_feedback(request, principal, payload, message_id, feedback.react_as_visitor)
    return json_response(VisitorReactions(message.id, message.reactions), created)


async def operator_feedback(request: Request, principal: Principal, payload: Any, message_id: str,
                            command) -> Response:
    """Runs an operator's rating or reaction; answers the message as the REST API shows it."""
    created = await run_command(request, command, principal, parse_id(message_id), payload)
    return await one_response(request, MESSAGES, principal, created.id, created=created)


@describe("Rate a message as the team", OPERATOR, body=feedback.OperatorRating, answer=Message,
          operation_id="rateMessageAsOperator")
@post("/api/messages/{message_id:str}/rating/operator", status_code=200)
async def rate_as_operator(request: Request, principal: Authenticated, payload: Decoded[feedback.OperatorRating],
                           message_id: FromPath[str]) -> Response:
    return await operator_feedback(request, principal, payload, message_id, feedback.rate_as_operator)


@describe("React to a message as the team (null clears the reaction)", OPERATOR, body=feedback.OperatorReaction,
          answer=Message, errors=(409,), operation_id="reactToMessageAsOperator")
@post("/api/messages/{message_id:str}/reaction/operator", status_code=200)
async def react_as_operator(request: Request, principal: Authenticated, payload: Decoded[feedback.OperatorReaction],
                            message_id: FromPath[str]) -> Response:
    return await operator_feedback(request, principal, payload, message_id, feedback.react_as_operator)


ROUTES = [rate_as_visitor, react_as_visitor, rate_as_operator, react_as_operator]
