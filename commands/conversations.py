"""Starting conversations and changing them: their flags (resolved, spam), and the team's workflow on them
(assignee, team, labels, priority, snooze), all in one decision so that one `PATCH` is one append."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Sequence

import msgspec
from msgspec import UNSET, UnsetType

from commands.admin import Created
from commands.deciders.conversation import (Conversation, check_if_match, check_may_flag, check_may_start,
                                            decide_assign, decide_flags, decide_labels, decide_priority,
                                            decide_snooze, decide_start, decide_wake, fold_conversation, followed)
from commands.deciders.labels import Labels, label_ids
from commands.deciders.teams import Teams
from commands.errors import Invalid
from commands.labels import load_labels
from commands.messages import load_conversation
from commands.principal import Principal
from commands.streams import execute, load, now
from commands.teams import is_active_operator, load_teams
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id, parse_id


class ConversationCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    customer_id: str
    operator_only: bool = False


def create_conversation(store: EventStore, principal: Principal, body: ConversationCreate) -> Created:
    check_may_start(principal, body.operator_only)
    website_id = parse_id(body.website_id)
    if website_id is None:
        raise Invalid("websiteId does not name a website", "websiteId")
    if principal.website_id is not None and website_id != principal.website_id:
        raise Invalid("this key is pinned to another website", "websiteId")
    website = load(store, website_id, ev.WebsiteCreated, principal.org_id, "website").created
    customer = load(store, parse_id(body.customer_id), ev.CustomerCreated, principal.org_id, "customer").created
    conversation_id = new_id()
    position = store.append(*decide_start(principal, website, customer, conversation_id=conversation_id,
                                          operator_only=body.operator_only, at=now()))
    return Created(conversation_id, position)


class ConversationFlags(msgspec.Struct, forbid_unknown_fields=True, rename={"agent_paused": "agentPaused"}):
    resolved: bool | None = None
    spam: bool | None = None
    agent_paused: bool | None = None  # pauses or resumes the website's AI agent in this conversation


class ConversationChange(ConversationFlags, forbid_unknown_fields=True,
                         rename={"agent_paused": "agentPaused", "assignee_id": "assigneeId", "team_id": "teamId",
                                 "add_labels": "addLabels", "remove_labels": "removeLabels",
                                 "snoozed_until": "snoozedUntil"}):
    """`PATCH /api/conversations/{id}`: only the fields given change. `labels` sets the whole list (by
    name), `addLabels` / `removeLabels` change it without reading it first (so concurrent labellings
    add up); `snoozedUntil` a time snoozes until then, null wakes; `snoozed` true without a time snoozes
    until the visitor writes, false wakes."""

    assignee_id: str | None | UnsetType = UNSET
    team_id: str | None | UnsetType = UNSET
    labels: list[str] | UnsetType = UNSET
    add_labels: list[str] | UnsetType = UNSET
    remove_labels: list[str] | UnsetType = UNSET
    priority: str | UnsetType = UNSET
    snoozed: bool | UnsetType = UNSET
    snoozed_until: datetime | None | UnsetType = UNSET


def load_flags(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None) -> Conversation:
    return fold_conversation(load_conversation(store, principal, conversation_id).history)


def check_assignee(store: EventStore, org_id: uuid.UUID, raw: str | None) -> uuid.UUID | None:
    """An active operator of the organization, or None (unassigned)."""
    if raw is None:
        return None
    operator_id = parse_id(raw)
    if not is_active_operator(store, org_id, operator_id):
        raise Invalid("assigneeId names no operator of this organization", "assigneeId")
    return operator_id


def check_team(teams: Teams, raw: str | None) -> uuid.UUID | None:
    if raw is None:
        return None
    team_id = parse_id(raw)
    if team_id is None or team_id not in teams.teams:
        raise Invalid("teamId names no team of this organization", "teamId")
    return team_id


def changed_labels(labels: Labels, current: frozenset[uuid.UUID], body: ConversationChange) -> frozenset[uuid.UUID]:
    result = current if isinstance(body.labels, UnsetType) else label_ids(labels, body.labels)
    if not isinstance(body.add_labels, UnsetType):
        result |= label_ids(labels, body.add_labels)
    if not isinstance(body.remove_labels, UnsetType):
        result -= label_ids(labels, body.remove_labels)
    # a label deleted since it was put on is off the conversation for every reader: not kept by a change
    return frozenset(label for label in result if label in labels.labels) | (current - labels.labels.keys())


def decide_change(conversation: Conversation, body: ConversationChange, actor: ev.Actor, *,
                  assignee_id: uuid.UUID | None | UnsetType, teams: Teams, labels: Labels | None,
                  if_match: int | None) -> Sequence[Pending]:
    """Every change the body asks for, following each other on the conversation's stream."""
    check_if_match(conversation, if_match)
    at = now()
    pending: list[Pending] = []

    def then(decide) -> None:
        """A decision on the state as the earlier ones of this request leave it."""
        nonlocal conversation
        decided = decide(conversation)
        if decided:
            pending.extend(decided)
            conversation = followed(conversation, decided)

    then(lambda c: decide_flags(c, actor, at, resolved=body.resolved, spam=body.spam, agent_paused=body.agent_paused))
    if not isinstance(assignee_id, UnsetType) or not isinstance(body.team_id, UnsetType):
        team_id = conversation.team_id if isinstance(body.team_id, UnsetType) else check_team(teams, body.team_id)
        assignee = conversation.assignee_id if isinstance(assignee_id, UnsetType) else assignee_id
        then(lambda c: decide_assign(c, actor, at, assignee_id=assignee, team_id=team_id))
    if labels is not None:
        then(lambda c: decide_labels(c, actor, at, labels=changed_labels(labels, c.labels, body)))
    if not isinstance(body.priority, UnsetType):
        then(lambda c: decide_priority(c, actor, at, body.priority))
    if body.snoozed is False or body.snoozed_until is None:
        then(lambda c: decide_wake(c, actor, at, "operator"))
    elif not isinstance(body.snoozed_until, UnsetType) or body.snoozed is True:
        until = None if isinstance(body.snoozed_until, UnsetType) else body.snoozed_until
        then(lambda c: decide_snooze(c, actor, at, until))
    return pending


def update_conversation(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None,
                        body: ConversationChange, if_match: int | None = None) -> Created:
    """The changes given, as one append on the conversation's next versions; each is idempotent (a field
    given as it is records nothing). Without `If-Match` the decision is taken again when a concurrent
    write wins the version; with it, the write is refused (412) once the stream moved past that version."""
    check_may_flag(principal)
    if body.snoozed is True and body.snoozed_until is None:
        raise Invalid("snoozed true and snoozedUntil null contradict each other", "snoozedUntil")
    assignee: uuid.UUID | None | UnsetType = (
        UNSET if isinstance(body.assignee_id, UnsetType) else check_assignee(store, principal.org_id, body.assignee_id))
    wants_labels = not all(isinstance(v, UnsetType) for v in (body.labels, body.add_labels, body.remove_labels))

    def loaded() -> tuple[Conversation, Teams, Labels | None]:
        return (load_flags(store, principal, conversation_id), load_teams(store, principal.org_id),
                load_labels(store, principal.org_id) if wants_labels else None)

    appended = execute(store, principal.org_id, loaded, lambda state: decide_change(
        state[0], body, principal.actor, assignee_id=assignee, teams=state[1], labels=state[2], if_match=if_match))
    return Created(appended.state[0].created.conversation_id, appended.position)


def update_flags(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None,
                 body: ConversationFlags) -> Created:
    """Resolving, reopening and (un)marking spam are idempotent; no other field of the conversation
    changes. The decision is taken again when a concurrent write to the conversation wins the version."""
    check_may_flag(principal)
    appended = execute(store, principal.org_id, lambda: load_flags(store, principal, conversation_id),
                       lambda conversation: decide_flags(conversation, principal.actor, now(), resolved=body.resolved,
                                                         spam=body.spam, agent_paused=body.agent_paused))
    return Created(appended.state.created.conversation_id, appended.position)


def wake_when_due(store: EventStore, org_id: uuid.UUID, conversation_id: uuid.UUID) -> int | None:
    """The scheduled wake of a snoozed conversation whose time has come (the snooze worker's): recorded
    once, whatever the number of workers and retries; the position, or None when nothing was due."""
    appended = execute(store, org_id, lambda: fold_conversation(
        load(store, conversation_id, ev.ConversationCreated, org_id, "conversation").history),
        lambda conversation: decide_wake(conversation, None, now(), "time"))
    return appended.position if appended.pending else None
