"""The organization's teams and labels: every operator reads them, admins and owners change them
(`/api/teams`, `/api/labels`). Operator access tokens only."""

from __future__ import annotations

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import labels, teams
from events.ids import parse_id
from projections.views.workflow import LABELS, TEAMS, Label, Team, read_all
from readapi.auth import ADMIN, OPERATOR, Authenticated, Decoded
from readapi.openapi import ID, ListOf, describe
from readapi.routes.resources import one_response
from readapi.services import caught_up, json_response, no_content, run_command, services


@describe("List the organization's teams", OPERATOR, answer=ListOf(Team), operation_id="listTeams")
@get("/api/teams")
async def list_teams(request: Request, principal: Authenticated) -> Response:
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await read_all(conn, TEAMS, principal))


@describe("Create a team (admins and owners): its members are operators of the organization", ADMIN,
          body=teams.TeamBody, answer=Team, links={"updateTeam": {"teamId": ID}, "deleteTeam": {"teamId": ID}},
          example={"name": "Billing", "memberIds": []}, operation_id="createTeam")
@post("/api/teams", status_code=200)
async def create_team(request: Request, principal: Authenticated, payload: Decoded[teams.TeamBody]) -> Response:
    created = await run_command(request, teams.create_team, principal, payload)
    return await one_response(request, TEAMS, principal, created.id, created=created)


@describe("Rename a team and set its members (admins and owners)", ADMIN, body=teams.TeamBody, answer=Team,
          example={"name": "Billing", "memberIds": []}, operation_id="updateTeam")
@put("/api/teams/{team_id:str}")
async def update_team(request: Request, principal: Authenticated, payload: Decoded[teams.TeamBody],
                      team_id: FromPath[str]) -> Response:
    created = await run_command(request, teams.change_team, principal, parse_id(team_id), payload)
    return await one_response(request, TEAMS, principal, created.id, created=created)


@describe("Delete a team (admins and owners): its conversations keep their assignee and lose the team", ADMIN,
          status=204, operation_id="deleteTeam")
@delete("/api/teams/{team_id:str}", status_code=200)  # the Response sets 204
async def delete_team(request: Request, principal: Authenticated, team_id: FromPath[str]) -> Response:
    return await no_content(request, await run_command(request, teams.delete_team, principal, parse_id(team_id)))


@describe("List the organization's labels", OPERATOR, answer=ListOf(Label), operation_id="listLabels")
@get("/api/labels")
async def list_labels(request: Request, principal: Authenticated) -> Response:
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await read_all(conn, LABELS, principal))


@describe("Create a label (admins and owners): its name is unique in the organization, case aside (409)", ADMIN,
          body=labels.LabelBody, answer=Label, errors=(409,),
          links={"updateLabel": {"labelId": ID}, "deleteLabel": {"labelId": ID}},
          example={"name": "billing", "color": "#b45309"}, operation_id="createLabel")
@post("/api/labels", status_code=200)
async def create_label(request: Request, principal: Authenticated, payload: Decoded[labels.LabelBody]) -> Response:
    created = await run_command(request, labels.create_label, principal, payload)
    return await one_response(request, LABELS, principal, created.id, created=created)


@describe("Rename or recolour a label (admins and owners)", ADMIN, body=labels.LabelBody, answer=Label,
          errors=(409,), example={"name": "billing", "color": "#b45309"}, operation_id="updateLabel")
@put("/api/labels/{label_id:str}")
async def update_label(request: Request, principal: Authenticated, payload: Decoded[labels.LabelBody],
                       label_id: FromPath[str]) -> Response:
    created = await run_command(request, labels.change_label, principal, parse_id(label_id), payload)
    return await one_response(request, LABELS, principal, created.id, created=created)


@describe("Delete a label (admins and owners): it comes off every conversation", ADMIN, status=204,
          operation_id="deleteLabel")
@delete("/api/labels/{label_id:str}", status_code=200)  # the Response sets 204
async def delete_label(request: Request, principal: Authenticated, label_id: FromPath[str]) -> Response:
    return await no_content(request, await run_command(request, labels.delete_label, principal, parse_id(label_id)))


ROUTES = [list_teams, create_team, update_team, delete_team, list_labels, create_label, update_label, delete_label]
