"""An organization's teams (`/api/teams`): groups of operators a conversation can be assigned to; admins and
owners manage them."""

from __future__ import annotations

import uuid
from typing import Annotated, Iterable

import msgspec

from commands.admin import Created
from commands.deciders import teams as decide
from commands.deciders.operator import fold_operator
from commands.deciders.teams import Teams, fold_teams, teams_stream
from commands.principal import Principal
from commands.streams import execute, now
from events import types as ev
from events.ids import new_id, parse_id
from events.store import EventStore


class TeamBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    name: Annotated[str, msgspec.Meta(max_length=decide.MAX_NAME * 2)]
    member_ids: list[str] = []


def load_teams(store: EventStore, org_id: uuid.UUID) -> Teams:
    return fold_teams(org_id, store.load(teams_stream(org_id)))


def is_active_operator(store: EventStore, org_id: uuid.UUID, operator_id: uuid.UUID | None) -> bool:
    """Whether `operator_id` is an operator whose membership of the organization is active (its stream says)."""
    history = store.load(operator_id) if operator_id else []
    if not history or not isinstance(history[0].event, ev.OperatorCreated):
        return False
    membership = fold_operator(history).memberships.get(org_id)
    return membership is not None and membership.status == "active"


def active_operators(store: EventStore, org_id: uuid.UUID, raw_ids: Iterable[str]) -> tuple[list[uuid.UUID],
                                                                                             frozenset[uuid.UUID]]:
    """The ids given (an unparseable one as None, refused by the decision) and those of active operators."""
    ids = [parse_id(raw) for raw in raw_ids]
    return ids, frozenset(i for i in set(ids) if i is not None and is_active_operator(store, org_id, i))


def create_team(store: EventStore, principal: Principal, body: TeamBody) -> Created:
    team_id = new_id()
    members, operators = active_operators(store, principal.org_id, body.member_ids)
    appended = execute(store, principal.org_id, lambda: load_teams(store, principal.org_id),
                       lambda teams: decide.decide_create(teams, team_id, body.name, members, operators, now()))
    return Created(team_id, appended.position)


def change_team(store: EventStore, principal: Principal, team_id: uuid.UUID | None, body: TeamBody) -> Created:
    """`PUT`: the name and the members as given."""
    members, operators = active_operators(store, principal.org_id, body.member_ids)
    appended = execute(store, principal.org_id, lambda: load_teams(store, principal.org_id),
                       lambda teams: decide.decide_change(teams, team_id, body.name, members, operators, now()))
    return Created(appended.state.found(team_id).team_id, appended.position)


def delete_team(store: EventStore, principal: Principal, team_id: uuid.UUID | None) -> Created:
    appended = execute(store, principal.org_id, lambda: load_teams(store, principal.org_id),
                       lambda teams: decide.decide_delete(teams, team_id, now()))
    return Created(appended.state.found(team_id).team_id, appended.position)
