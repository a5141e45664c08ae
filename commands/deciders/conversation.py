"""A conversation: its flags and metadata, and the decisions on them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from commands.errors import Forbidden, Invalid, NotFound
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
        event = recorded.event
        if isinstance(event, ev.ConversationUpdated):
            state.resolved = state.resolved if event.resolved is None else event.resolved
            state.spam = state.spam if event.spam is None else event.spam
        elif isinstance(event, ev.ConversationMetadataSet):
            state.metadata = merged(state.metadata, event.values)
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
