"""The organization's team over HTTP: admins and owners change an operator's role, status and display name
or remove it; every operator changes its own display name. Operator access tokens only."""

from __future__ import annotations

from litestar import Request, Response, delete, patch
from litestar.params import FromPath

from commands import team
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import OPERATORS, Operator
from projections.views.operators import member_ids
from readapi.auth import ADMIN, OPERATOR_ENROLLING, Authenticated, Decoded
from readapi.openapi import describe
from readapi.routes.resources import one_response
from readapi.services import POSITION_HEADER, run_command, services, written


async def team_ids(request: Request, principal: Principal) -> list:
    async with services(request).pool.connection() as conn:
        return await member_ids(conn, principal.org_id)


@describe("Change your own profile (the display name visitors and the team see)", OPERATOR_ENROLLING,
          body=team.ProfileChange, answer=Operator, example={"displayName": "Ada"},
          operation_id="updateCurrentOperator")
@patch("/api/operators/me")
async def change_profile(request: Request, principal: Authenticated, payload: Decoded[team.ProfileChange]) -> Response:
    created = await run_command(request, team.change_profile, principal, payload)
    return await one_response(request, OPERATORS, principal, principal.operator_id, created=created)


@describe("Change an operator's role, status or display name (admins and owners; the owner role is an "
          "owner's to give or take; the last owner stays one). Disabling ends the operator's sessions in the "
          "organization and refuses its sign-in until it is active again", ADMIN, body=team.OperatorChange,
          answer=Operator, errors=(403, 404, 409), example={"role": "admin"}, operation_id="updateOperator")
@patch("/api/operators/{operator_id:str}")
async def change_operator(request: Request, operator_id: FromPath[str], principal: Authenticated,
                          payload: Decoded[team.OperatorChange]) -> Response:
    created = await run_command(request, team.change_operator, principal, parse_id(operator_id), payload,
                                await team_ids(request, principal))
    return await one_response(request, OPERATORS, principal, created.id, created=created)


@describe("Remove an operator from the organization (admins and owners; never its last owner): its sessions "
          "there end, what it did stays", ADMIN, status=204, errors=(403, 404, 409), operation_id="removeOperator")
@delete("/api/operators/{operator_id:str}", status_code=200)  # the Response below sets 204
async def remove_operator(request: Request, operator_id: FromPath[str], principal: Authenticated) -> Response:
    created = await run_command(request, team.remove_operator, principal, parse_id(operator_id),
                                await team_ids(request, principal))
    await written(request, created)
    return Response(b"", status_code=204, headers={POSITION_HEADER: str(created.position)})


ROUTES = [change_profile, change_operator, remove_operator]
