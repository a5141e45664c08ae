"""A conversation: its flags and metadata, and the decisions on them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime

from commands.errors import Forbidden, Invalid, NotFound, PreconditionFailed
from commands.principal import Principal
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

MAX_METADATA_KEYS = 50


@dataclass
class Conversation(Folded):
    created: ev.ConversationCreated
    resolved: bool = False
    spam: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    assignee_id: uuid.UUID | None = None
    team_id: uuid.UUID | None = None
    labels: frozenset[uuid.UUID] = frozenset()
    priority: str = "none"
    snoozed: bool = False
    snoozed_until: datetime | None = None  # None while snoozed: until the visitor writes


def merged(metadata: dict[str, str], values: dict[str, str | None]) -> dict[str, str]:
    """`values` applied to `metadata` (null removes); more keys than a conversation may hold is 400."""
    result = {**metadata, **values}
    result = {k: v for k, v in result.items() if v is not None}
    if len(result) > MAX_METADATA_KEYS:
        raise Invalid(f"a conversation holds at most {MAX_METADATA_KEYS} metadata keys", "metadata")
    return result


def fold_conversation(history: list[Recorded]) -> Conversation:
    created = history[0].event
    assert isinstance(created, ev.ConversationCreated)
    state = Conversation(created.conversation_id, history[-1].version, created, metadata=dict(created.metadata))
    for recorded in history[1:]:
        evolve(state, recorded.event)
    return state


def evolve(state: Conversation, event: ev.Event) -> None:
    """One event of the conversation's stream applied to its state."""
    if isinstance(event, ev.ConversationUpdated):
        state.resolved = state.resolved if event.resolved is None else event.resolved
        state.spam = state.spam if event.spam is None else event.spam
    elif isinstance(event, ev.ConversationMetadataSet):
        state.metadata = merged(state.metadata, event.values)
    elif isinstance(event, ev.ConversationAssigned):
        state.assignee_id, state.team_id = event.assignee_id, event.team_id
    elif isinstance(event, ev.ConversationLabelsChanged):
        state.labels = (state.labels | set(event.added)) - set(event.removed)
    elif isinstance(event, ev.ConversationPrioritySet):
        state.priority = event.priority
    elif isinstance(event, ev.ConversationSnoozed):
        state.snoozed, state.snoozed_until = True, event.until
    elif isinstance(event, ev.ConversationWoken):
        state.snoozed, state.snoozed_until = False, None


def followed(conversation: Conversation, pending: list[Pending]) -> Conversation:
    """The conversation as it is once `pending` (a decision on it) is appended: for the next decision of
    the same request."""
    state = replace(conversation, version=pending[-1].version if pending else conversation.version)
    for item in pending:
        evolve(state, item.event)
    return state


def check_pinned_website(principal: Principal, created: ev.ConversationCreated | ev.MessageCreated, what: str) -> None:
    """A key pinned to a website sees only that website's conversations and messages."""
    if principal.website_id is not None and created.website_id != principal.website_id:
        raise NotFound(f"{what} not found")


def own_conversation(principal: Principal, conversation: ev.ConversationCreated) -> ev.ConversationCreated:
    """The visitor's own conversation; another visitor's or an operator-only one is 404."""
    if conversation.customer_id != principal.customer_id or conversation.operator_only:
        raise NotFound("conversation not found")
    return conversation


def check_may_start(principal: Principal, operator_only: bool) -> None:
    if operator_only and not principal.is_operator:
        raise Forbidden("only an operator can start an operator-only conversation")


def decide_start(principal: Principal, website: ev.WebsiteCreated, customer: ev.CustomerCreated, *,
                 conversation_id: uuid.UUID, operator_only: bool, at: datetime) -> list[Pending]:
    """An operator's or a key's new conversation with a customer of the website."""
    if customer.website_id != website.website_id:
        raise Invalid("the customer belongs to another website", "customerId")
    return [Pending(conversation_id, 1, ev.ConversationCreated(
        org_id=principal.org_id, at=at, conversation_id=conversation_id, website_id=website.website_id,
        customer_id=customer.customer_id, operator_only=operator_only, actor=principal.actor))]


def check_may_flag(principal: Principal) -> None:
    if not principal.is_operator:
        raise Forbidden("only an operator can resolve or mark a conversation")


def decide_flags(conversation: Conversation, actor: ev.Actor, at: datetime, *, resolved: bool | None = None,
                 spam: bool | None = None, agent_paused: bool | None = None) -> list[Pending]:
    """Resolving, reopening and (un)marking spam are idempotent: only a flag that differs is recorded."""
    changes: dict[str, bool] = {}
    if resolved is not None and resolved != conversation.resolved:
        changes["resolved"] = resolved
    if spam is not None and spam != conversation.spam:
        changes["spam"] = spam
    if agent_paused is not None:
        # Recorded each time it is given: an operator's reply also pauses the agent, without an event
        # of its own on this stream, so the fold here cannot tell whether it is paused already.
        changes["agent_paused"] = agent_paused
    if not changes:
        return []
    return conversation.follow(ev.ConversationUpdated(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        actor=actor, **changes))


def decide_handoff(conversation: Conversation, reason: str, at: datetime) -> list[Pending]:
    """The agent's hand-off: pauses it in the conversation and tells the team why."""
    return conversation.follow(ev.ConversationUpdated(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        agent_paused=True, agent_pause_reason=reason, handoff=True))


def decide_metadata(conversation: Conversation, values: dict[str, str | None], at: datetime) -> list[Pending]:
    """`setMetadata` on the visitor's current conversation."""
    merged(conversation.metadata, values)
    return conversation.follow(ev.ConversationMetadataSet(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        values=values))


def check_if_match(conversation: Conversation, if_match: int | None) -> None:
    """A write made on the version the client read (`If-Match`, the ETag of `GET`): any later change of the
    conversation's stream refuses it (412), so of two operators assigning from the same read, one wins."""
    if if_match is not None and if_match != conversation.version:
        raise PreconditionFailed(f"the conversation changed since version {if_match}: it is at {conversation.version}")


def decide_assign(conversation: Conversation, actor: ev.Actor | None, at: datetime, *,
                  assignee_id: uuid.UUID | None, team_id: uuid.UUID | None) -> list[Pending]:
    """The assignment given, as a whole (the caller checked the assignee and the team belong to the
    organization); the same as now records nothing."""
    if (assignee_id, team_id) == (conversation.assignee_id, conversation.team_id):
        return []
    return conversation.follow(ev.ConversationAssigned(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        assignee_id=assignee_id, team_id=team_id, actor=actor))


def decide_labels(conversation: Conversation, actor: ev.Actor | None, at: datetime, *,
                  labels: frozenset[uuid.UUID]) -> list[Pending]:
    """The conversation's labels become `labels` (ids the caller found among the organization's): what
    is added and what is removed is recorded, nothing when they are the same."""
    added, removed = labels - conversation.labels, conversation.labels - labels
    if not added and not removed:
        return []
    return conversation.follow(ev.ConversationLabelsChanged(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        added=sorted(added), removed=sorted(removed), actor=actor))


def check_priority(priority: str) -> str:
    if priority not in ev.PRIORITIES:
        raise Invalid(f"priority must be one of {', '.join(ev.PRIORITIES)}", "priority")
    return priority


def decide_priority(conversation: Conversation, actor: ev.Actor | None, at: datetime, priority: str) -> list[Pending]:
    if check_priority(priority) == conversation.priority:
        return []
    return conversation.follow(ev.ConversationPrioritySet(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        priority=priority, actor=actor))


def decide_snooze(conversation: Conversation, actor: ev.Actor | None, at: datetime,
                  until: datetime | None) -> list[Pending]:
    """Snoozes until `until` (a time to come) or, with None, until the visitor writes; snoozing again sets
    the new end. Always recorded: a visitor's message wakes the conversation in the read models without an
    event on this stream, so the fold cannot tell a snooze that is still on from one the visitor ended."""
    if until is not None and until <= at:
        raise Invalid("snoozedUntil must be a time to come", "snoozedUntil")
    return conversation.follow(ev.ConversationSnoozed(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        until=until, actor=actor))


def decide_wake(conversation: Conversation, actor: ev.Actor | None, at: datetime, reason: str) -> list[Pending]:
    """Wakes a snoozed conversation: an operator's at any time; the scheduled one (`time`) only once its
    snooze has run out, and only once, since a second wake finds it awake (the store's version refuses
    the loser of two racing wakes, whose decision, taken again, records nothing)."""
    if not conversation.snoozed:
        return []
    if reason == "time" and (conversation.snoozed_until is None or conversation.snoozed_until > at):
        return []
    return conversation.follow(ev.ConversationWoken(
        org_id=conversation.created.org_id, at=at, conversation_id=conversation.created.conversation_id,
        reason=reason, actor=actor))
