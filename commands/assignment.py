"""Automatic assignment: a website's setting (`PUT /api/websites/{websiteName}/assignment`), and the two
appends the assigner (delivery/assignment.py) makes: a new conversation given to the operator it chose, and
an unassigned conversation taken by the operator who replied in it.

Each append is decided on the conversation's own stream, so a conversation is assigned once whoever else
(an operator, a second assigner left over from a lost lease) writes at the same moment: the loser of the
version re-decides, finds it assigned, and appends nothing."""

from __future__ import annotations

import uuid
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from commands.admin import Created
from commands.deciders.conversation import decide_assign, fold_conversation
from commands.deciders.website import decide_assignment
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import execute, now
from commands.teams import load_teams
from commands.websites import load_website
from events import types as ev
from events.ids import parse_id
from events.store import EventStore


class AssignmentChange(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """`mode`: `off`, `round-robin` (each online operator in turn) or `least-busy` (the online operator with
    the fewest open conversations assigned); `capacity`: the open conversations an operator is assigned at
    most by automatic assignment; `teamId`: only that team's members; `assignOnReply`: an operator's reply to
    an unassigned conversation of the website makes it theirs."""

    mode: Literal["off", "round-robin", "least-busy"]
    capacity: int
    team_id: str | None | UnsetType = UNSET
    assign_on_reply: bool | UnsetType = UNSET


def configure_assignment(store: EventStore, principal: Principal, website_name: str, body: AssignmentChange) -> Created:
    team_id = None
    if body.team_id is not None and not isinstance(body.team_id, UnsetType):
        team_id = parse_id(body.team_id)
        if team_id is None or team_id not in load_teams(store, principal.org_id).teams:
            raise Invalid("teamId names no team of this organization", "teamId")

    def decide(website):
        kept = website.assignment
        on_reply = (kept.assign_on_reply if kept else False) if isinstance(body.assign_on_reply, UnsetType) \
            else body.assign_on_reply
        return decide_assignment(website, now(), mode=body.mode, capacity=body.capacity, team_id=team_id,
                                 assign_on_reply=on_reply)

    appended = execute(store, principal.org_id, lambda: load_website(store, principal.org_id, website_name), decide)
    return Created(appended.state.created.website_id, appended.position)


def assign_if_unassigned(store: EventStore, org_id: uuid.UUID, conversation_id: uuid.UUID, assignee_id: uuid.UUID,
                         team_id: uuid.UUID | None, actor: ev.Actor | None = None) -> int | None:
    """Gives the conversation to `assignee_id` (and `team_id`, else the team it has) unless it has an
    assignee already or is closed (resolved, spam); the position of the append, or None for nothing appended.
    `actor` None: the service (a new conversation); else the operator who took it by replying."""
    def decide(conversation):
        if conversation.assignee_id is not None or conversation.resolved or conversation.spam:
            return []
        return decide_assign(conversation, actor, now(), assignee_id=assignee_id,
                             team_id=team_id or conversation.team_id)

    def loaded():
        history = store.load(conversation_id)
        if not history or not isinstance(history[0].event, ev.ConversationCreated) or history[0].event.org_id != org_id:
            return None
        return fold_conversation(history)

    appended = execute(store, org_id, loaded, lambda c: [] if c is None else decide(c))
    return appended.position if appended.pending else None
