"""The organization's team over HTTP: admins and owners change an operator's role, status and display name
or remove it; every operator changes its own display name. Operator access tokens only."""

from __future__ import annotations

from litestar import Request, Response, delete, get, patch, post, put
from litestar.params import FromPath

from commands import team
from commands.admin import Created
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import OPERATORS, Operator
from projections.views.availability import OperatorAvailability, availability_of, record_activity
from projections.views.operators import member_ids
from readapi.auth import ADMIN, OPERATOR, OPERATOR_ENROLLING, Authenticated, Decoded
from readapi.openapi import describe
from readapi.routes.resources import one_response
from readapi.services import caught_up, json_response, no_content, run_command, services, written


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
    return await no_content(request, created)


async def availability_response(request: Request, principal: Principal, active: bool,
                                created: Created | None = None) -> Response:
    """The operator's availability, after counting this request as activity at the dashboard when `active`."""
    away_after = services(request).settings.operator_away_after_seconds
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with services(request).pool.connection() as conn:
        if active:
            await record_activity(conn, principal.org_id, principal.operator_id, away_after)
        return json_response(await availability_of(conn, principal.org_id, principal.operator_id, away_after), created)


@describe("Your availability: `status` as the team sees it now (`online` turns to `away` after "
          "`awayAfterSeconds` without activity at the dashboard), `chosen` as you set it", OPERATOR,
          answer=OperatorAvailability, operation_id="getCurrentOperatorAvailability")
@get("/api/operators/me/availability")
async def current_availability(request: Request, principal: Authenticated) -> Response:
    return await availability_response(request, principal, active=False)


@describe("Choose your availability in the organization: `online` (reads as `away` while you are inactive), "
          "`away` or `offline`. Counts as activity", OPERATOR, body=team.AvailabilityChange,
          answer=OperatorAvailability, example={"status": "away"}, operation_id="setCurrentOperatorAvailability")
@put("/api/operators/me/availability")
async def set_availability(request: Request, principal: Authenticated,
                           payload: Decoded[team.AvailabilityChange]) -> Response:
    created = await run_command(request, team.set_availability, principal, payload)
    return await availability_response(request, principal, active=True, created=created)


@describe("Report activity at the dashboard (a key, a click, the tab shown again): an operator who chose "
          "`online` reads as `online` for `awayAfterSeconds` more. The dashboard sends it at most every third "
          "of that; nothing is stored as an event", OPERATOR, answer=OperatorAvailability, position=False,
          operation_id="reportOperatorActivity")
@post("/api/operators/me/activity", status_code=200)
async def report_activity(request: Request, principal: Authenticated) -> Response:
    return await availability_response(request, principal, active=True)


ROUTES = [change_profile, change_operator, remove_operator, current_availability, set_availability, report_activity]
