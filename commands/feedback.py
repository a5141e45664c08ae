"""Ratings and reactions on messages, from the visitor and from the team.

A message is a stream, so every rating or reaction appends at the message's next version: two writers
racing on one message cannot both win, and the loser gets 409 instead of silently overwriting."""

from __future__ import annotations

import uuid
from typing import Literal

import emoji as emoji_library
import msgspec

from commands.admin import Created
from commands.errors import Conflict, Invalid, NotFound
from commands.messages import load_message
from commands.principal import Principal
from commands.streams import Entity, load, now
from events import types as ev
from events.store import EventStore, Pending

MAX_REACTIONS = 20  # reactions one message can hold (one per person)
Rating = Literal["unhappy", "neutral", "happy"]


class VisitorRating(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    rating: Rating


class OperatorRating(msgspec.Struct, forbid_unknown_fields=True):
    rating: Rating


class VisitorReaction(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    emoji: str | None


class OperatorReaction(msgspec.Struct, forbid_unknown_fields=True):
    emoji: str | None


def single_emoji(value: str | None) -> str | None:
    """The contract's rule: exactly one emoji (ZWJ sequences, flags and skin tones are one), or null."""
    if value is not None and not emoji_library.is_emoji(value):
        raise Invalid("the reaction must be exactly one emoji, or null to clear it", "emoji")
    return value


def reactions_of(message: Entity[ev.MessageCreated]) -> tuple[ev.Reaction, ...]:
    for recorded in reversed(message.history):
        if isinstance(recorded.event, ev.MessageReactionsChanged):
            return recorded.event.reactions
    return ()


def with_reaction(current: tuple[ev.Reaction, ...], sender: str, person_id: uuid.UUID,
                  emoji: str | None) -> tuple[ev.Reaction, ...]:
    """One emoji per person: a new one replaces the person's previous one, null removes it."""
    others = tuple(r for r in current if r.person_id != person_id)
    if emoji is None:
        return others
    if len(others) >= MAX_REACTIONS:
        raise Conflict(f"the message already holds the maximum of {MAX_REACTIONS} reactions", "emoji")
    return (*others, ev.Reaction(emoji=emoji, sender=sender, person_id=person_id))


def load_visitor_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                         website_id: str) -> Entity[ev.MessageCreated]:
    """A message of this visitor's transcript: their own conversation, not operator-only, not a note.
    Anything else is 404, exactly like a message that does not exist."""
    message = load(store, message_id, ev.MessageCreated, principal.org_id, "message")
    missing = NotFound("no such message in this session's transcript")
    if message.created.internal or website_id != str(principal.website_id):
        raise missing
    conversation = load(store, message.created.conversation_id, ev.ConversationCreated, principal.org_id,
                        "conversation").created
    if conversation.customer_id != principal.customer_id or conversation.operator_only:
        raise missing
    return message


def _rate(store: EventStore, principal: Principal, message: Entity[ev.MessageCreated], rating: str) -> Created:
    created = message.created
    return Created(created.message_id, store.append(Pending(created.message_id, message.version + 1, ev.MessageRated(
        org_id=principal.org_id, at=now(), message_id=created.message_id, conversation_id=created.conversation_id,
        rating=rating, sender="operator" if principal.is_operator else "customer",
        operator_id=principal.operator_id))))


def _react(store: EventStore, principal: Principal, message: Entity[ev.MessageCreated], emoji: str | None) -> Created:
    created = message.created
    sender, person_id = (("operator", principal.operator_id) if principal.is_operator
                         else ("customer", principal.customer_id))
    reactions = with_reaction(reactions_of(message), sender, person_id, single_emoji(emoji))
    return Created(created.message_id, store.append(Pending(
        created.message_id, message.version + 1, ev.MessageReactionsChanged(
            org_id=principal.org_id, at=now(), message_id=created.message_id,
            conversation_id=created.conversation_id, sender=sender, person_id=person_id, emoji=emoji,
            reactions=reactions))))


def rate_as_visitor(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                    body: VisitorRating) -> Created:
    """Rateable: the team's replies (operators and AI agents) in the visitor's own transcript."""
    message = load_visitor_message(store, principal, message_id, body.website_id)
    if message.created.sender != "operator":
        raise NotFound("no rateable message with this id in this session's transcript")
    return _rate(store, principal, message, body.rating)


def rate_as_operator(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                     body: OperatorRating) -> Created:
    return _rate(store, principal, load_message(store, principal, message_id), body.rating)


def react_as_visitor(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                     body: VisitorReaction) -> Created:
    single_emoji(body.emoji)
    return _react(store, principal, load_visitor_message(store, principal, message_id, body.website_id), body.emoji)


def react_as_operator(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                      body: OperatorReaction) -> Created:
    single_emoji(body.emoji)
    return _react(store, principal, load_message(store, principal, message_id), body.emoji)
