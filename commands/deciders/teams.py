"""An organization's teams (groups of operators a conversation can be assigned to): one stream per
organization holds them all, like its labels."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from commands.errors import Invalid, NotFound
from commands.streams import Folded, name_stream
from events import types as ev
from events.store import Pending, Recorded

MAX_NAME = 80
MAX_MEMBERS = 500


@dataclass(frozen=True)
class Team:
    team_id: uuid.UUID
    name: str
    member_ids: tuple[uuid.UUID, ...]


@dataclass
class Teams(Folded):
    org_id: uuid.UUID
    teams: dict[uuid.UUID, Team] = field(default_factory=dict)

    def found(self, team_id: uuid.UUID | None) -> Team:
        team = self.teams.get(team_id) if team_id is not None else None
        if team is None:
            raise NotFound("team not found")
        return team


def teams_stream(org_id: uuid.UUID) -> uuid.UUID:
    return name_stream("teams", str(org_id))


def fold_teams(org_id: uuid.UUID, history: list[Recorded]) -> Teams:
    state = Teams(teams_stream(org_id), history[-1].version if history else 0, org_id)
    for recorded in history:
        e = recorded.event
        if isinstance(e, ev.TeamCreated):
            state.teams[e.team_id] = Team(e.team_id, e.name, tuple(e.member_ids))
        elif isinstance(e, ev.TeamRenamed):
            state.teams[e.team_id] = Team(e.team_id, e.name, state.teams[e.team_id].member_ids)
        elif isinstance(e, ev.TeamMembersSet):
            state.teams[e.team_id] = Team(e.team_id, state.teams[e.team_id].name, tuple(e.member_ids))
        elif isinstance(e, ev.TeamDeleted):
            state.teams.pop(e.team_id, None)
    return state


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise Invalid(f"a team's name is 1-{MAX_NAME} characters", "name")
    return name


def check_members(member_ids: Iterable[uuid.UUID], operators: frozenset[uuid.UUID]) -> list[uuid.UUID]:
    """The members, each once in the order given; each must be an operator of the organization (`operators`)."""
    members = list(dict.fromkeys(member_ids))
    if len(members) > MAX_MEMBERS:
        raise Invalid(f"a team has at most {MAX_MEMBERS} members", "memberIds")
    if stranger := next((m for m in members if m not in operators), None):
        raise Invalid(f"{stranger} is not an operator of this organization", "memberIds")
    return members


def decide_create(teams: Teams, team_id: uuid.UUID, name: str, member_ids: Iterable[uuid.UUID],
                  operators: frozenset[uuid.UUID], at: datetime) -> list[Pending]:
    return teams.follow(ev.TeamCreated(org_id=teams.org_id, at=at, team_id=team_id, name=check_name(name),
                                       member_ids=check_members(member_ids, operators)))


def decide_change(teams: Teams, team_id: uuid.UUID | None, name: str, member_ids: Iterable[uuid.UUID],
                  operators: frozenset[uuid.UUID], at: datetime) -> list[Pending]:
    """`PUT`: the name and the members as given; only what differs is recorded."""
    team = teams.found(team_id)
    name, members = check_name(name), check_members(member_ids, operators)
    events: list[ev.Event] = []
    if name != team.name:
        events.append(ev.TeamRenamed(org_id=teams.org_id, at=at, team_id=team.team_id, name=name))
    if tuple(members) != team.member_ids:
        events.append(ev.TeamMembersSet(org_id=teams.org_id, at=at, team_id=team.team_id, member_ids=members))
    return teams.follow(*events)


def decide_delete(teams: Teams, team_id: uuid.UUID | None, at: datetime) -> list[Pending]:
    team = teams.found(team_id)
    return teams.follow(ev.TeamDeleted(org_id=teams.org_id, at=at, team_id=team.team_id))
