"""A website's automatic assignment over HTTP (admins and owners set it; every operator reads it)."""

from __future__ import annotations

from litestar import Request, Response, get, put
from litestar.params import FromPath

from commands.assignment import AssignmentChange, configure_assignment
from commands.errors import NotFound
from commands.principal import Principal
from projections.views.assignment import AssignmentSetting, assignment_of
from readapi.auth import ADMIN, OPERATOR, Authenticated, Decoded
from readapi.openapi import describe
from readapi.services import caught_up, json_response, run_command, services, written

READ_MODELS = ("core", "assignment")


async def setting_response(request: Request, principal: Principal, website_name: str, created=None) -> Response:
    async with services(request).pool.connection() as conn:
        found = await assignment_of(conn, principal.org_id, website_name)
    if found is None:
        raise NotFound("website not found", "websiteName")
    return json_response(found, created)


@describe("A website's automatic assignment", OPERATOR, answer=AssignmentSetting, errors=(404,),
          operation_id="getWebsiteAssignment")
@get("/api/websites/{website_name:str}/assignment")
async def get_assignment(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    await caught_up(request, READ_MODELS)
    return await setting_response(request, principal, website_name)


@describe("Set a website's automatic assignment: `mode` `off`, `round-robin` (each online operator in turn) or "
          "`least-busy` (the online operator with the fewest open conversations assigned), among the members of "
          "`teamId` when given, never giving an operator more than `capacity` open conversations; "
          "`assignOnReply`: an operator's reply to an unassigned conversation of the website makes it theirs. "
          "New conversations are assigned once, in the order they came; one nobody may take waits until "
          "someone is online with room", ADMIN, body=AssignmentChange, answer=AssignmentSetting,
          errors=(400, 403, 404), example={"mode": "round-robin", "capacity": 5},
          operation_id="setWebsiteAssignment")
@put("/api/websites/{website_name:str}/assignment")
async def set_assignment(request: Request, principal: Authenticated, website_name: FromPath[str],
                         payload: Decoded[AssignmentChange]) -> Response:
    created = await run_command(request, configure_assignment, principal, website_name, payload)
    await written(request, created, READ_MODELS)
    return await setting_response(request, principal, website_name, created)


ROUTES = [get_assignment, set_assignment]
