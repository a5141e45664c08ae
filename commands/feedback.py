"""Ratings and reactions on messages, from the visitor and from the team.

A message is a stream, so every rating or reaction appends at the message's next version: two writers
racing on one message cannot both win, and the loser gets 409 instead of silently overwriting."""

from __future__ import annotations

import uuid
from typing import Callable, Literal

import msgspec

from commands.admin import Created
from commands.deciders.message import (Message, check_rateable_by_visitor, check_visitor_message, decide_rating,
                                       decide_reaction, decide_visitor_delete, fold_message, single_emoji)
from commands.messages import load_message
from commands.principal import Principal
from commands.streams import execute, load, now
from events import types as ev
from events.store import EventStore

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


def load_visitor_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                         website_id: str) -> Message:
    """A message of this visitor's transcript; anything else is 404."""
    message = load(store, message_id, ev.MessageCreated, principal.org_id, "message")
    conversation = load(store, message.created.conversation_id, ev.ConversationCreated, principal.org_id,
                        "conversation").created
    check_visitor_message(principal, message.created, conversation, website_id)
    return fold_message(message.history)


def _rated(store: EventStore, principal: Principal, load_one: Callable[[], Message], rating: str) -> Created:
    appended = execute(store, principal.org_id, load_one,
                       lambda message: decide_rating(principal, message, rating, now()), retry=False)
    return Created(appended.state.created.message_id, appended.position)


def _reacted(store: EventStore, principal: Principal, load_one: Callable[[], Message], emoji: str | None) -> Created:
    appended = execute(store, principal.org_id, load_one,
                       lambda message: decide_reaction(principal, message, emoji, now()), retry=False)
    return Created(appended.state.created.message_id, appended.position)


def rate_as_visitor(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                    body: VisitorRating) -> Created:
    def rateable() -> Message:
        message = load_visitor_message(store, principal, message_id, body.website_id)
        check_rateable_by_visitor(message.created)
        return message
    return _rated(store, principal, rateable, body.rating)


def rate_as_operator(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                     body: OperatorRating) -> Created:
    return _rated(store, principal, lambda: load_message(store, principal, message_id), body.rating)


def react_as_visitor(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                     body: VisitorReaction) -> Created:
    single_emoji(body.emoji)
    return _reacted(store, principal, lambda: load_visitor_message(store, principal, message_id, body.website_id),
                    body.emoji)


def react_as_operator(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                      body: OperatorReaction) -> Created:
    single_emoji(body.emoji)
    return _reacted(store, principal, lambda: load_message(store, principal, message_id), body.emoji)


def delete_as_visitor(store: EventStore, principal: Principal, message_id: uuid.UUID | None, website_id: str,
                      last_message_id: uuid.UUID | None) -> Created:
    """`last_message_id`: the visitor's conversation's last message as the read model shows it."""
    appended = execute(store, principal.org_id,
                       lambda: load_visitor_message(store, principal, message_id, website_id),
                       lambda message: decide_visitor_delete(principal, message, last_message_id, now()), retry=False)
    return Created(appended.state.created.message_id, appended.position)
