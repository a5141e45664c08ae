"""Canned responses over HTTP: operator access tokens only. Every operator lists the organization's and their
own personal ones and writes personal ones; the organization's are an admin's to change."""

from __future__ import annotations

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import canned_responses
from commands.admin import Created
from commands.principal import Principal
from events.ids import parse_id
from projections.views.canned_responses import CannedResponse, list_canned_responses, read_canned_response
from readapi.auth import OPERATOR, Authenticated, Decoded
from readapi.openapi import ID, describe
from readapi.routes.webhooks import Deleted
from readapi.services import caught_up, json_response, run_command, services, written

PROJECTIONS = ("canned_responses",)
TAG = "cannedresponses"


async def answer(request: Request, principal: Principal, created: Created) -> Response:
    await written(request, created, PROJECTIONS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_canned_response(conn, principal, created.id), created)


@describe("List the canned responses you may use: the organization's and your personal ones, by shortcut",
          OPERATOR, answer=list[CannedResponse], operation_id="listCannedResponses", tag=TAG)
@get("/api/cannedresponses")
async def list_responses(request: Request, principal: Authenticated) -> Response:
    await caught_up(request, PROJECTIONS)
    async with services(request).pool.connection() as conn:
        return json_response(await list_canned_responses(conn, principal))


@describe("Create a canned response: a personal one (yours only), or the organization's (admins); its "
          "shortcut is unique among the organization's, or among your personal ones (409)", OPERATOR,
          body=canned_responses.CannedResponseCreate, answer=CannedResponse, errors=(403, 409),
          links={target: {"id": ID} for target in ("updateCannedResponse", "deleteCannedResponse")},
          example={"shortcut": "refund", "content": "Hello {{visitor.name}}, your refund is on its way. "
                                                    "{{operator.name}}", "personal": False},
          operation_id="createCannedResponse", tag=TAG)
@post("/api/cannedresponses", status_code=200)
async def create_response(request: Request, principal: Authenticated,
                          payload: Decoded[canned_responses.CannedResponseCreate]) -> Response:
    return await answer(request, principal, await run_command(request, canned_responses.create, principal, payload))


@describe("Change a canned response (only the fields given): your personal one, or the organization's "
          "(admins)", OPERATOR, body=canned_responses.CannedResponseUpdate, answer=CannedResponse,
          errors=(403, 404, 409), example={"content": "Your refund is on its way."},
          operation_id="updateCannedResponse", tag=TAG)
@put("/api/cannedresponses/{response_id:str}")
async def update_response(request: Request, principal: Authenticated, response_id: FromPath[str],
                          payload: Decoded[canned_responses.CannedResponseUpdate]) -> Response:
    return await answer(request, principal, await run_command(request, canned_responses.update, principal,
                                                              parse_id(response_id), payload))


@describe("Delete a canned response: your personal one, or the organization's (admins)", OPERATOR,
          answer=Deleted, errors=(403, 404), operation_id="deleteCannedResponse", tag=TAG)
@delete("/api/cannedresponses/{response_id:str}", status_code=200)
async def delete_response(request: Request, principal: Authenticated, response_id: FromPath[str]) -> Response:
    created = await run_command(request, canned_responses.delete, principal, parse_id(response_id))
    await written(request, created, PROJECTIONS)
    return json_response(Deleted(created.id, True), created)


ROUTES = [list_responses, create_response, update_response, delete_response]
