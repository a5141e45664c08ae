"""A message: posting one, and what happens to it later (read receipts, ratings, reactions)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import emoji as emoji_library

from commands.errors import Conflict, Forbidden, Invalid, NotFound
from commands.principal import Principal
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

MAX_REACTIONS = 20  # reactions one message can hold (one per person)


@dataclass
class Message(Folded):
    created: ev.MessageCreated
    read: bool = False
    reactions: tuple[ev.Reaction, ...] = ()
    content: str = ""  # the text readers see now: the last edit's, or "" once deleted
    deleted: bool = False


def fold_message(history: list[Recorded]) -> Message:
    created = history[0].event
    assert isinstance(created, ev.MessageCreated)
    state = Message(created.message_id, history[-1].version, created, content=created.content)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.MessageRead):
            state.read = True
        elif isinstance(event, ev.MessageReactionsChanged):
            state.reactions = event.reactions
        elif isinstance(event, ev.MessageEdited):
            state.content = event.edited_content
        elif isinstance(event, ev.MessageDeleted):
            state.content, state.deleted, state.reactions = "", True, ()
    return state


def check_may_post(principal: Principal, internal: bool) -> None:
    if internal and not principal.is_operator:
        raise Forbidden("only an operator can write an internal note", "internal")


def decide_post(principal: Principal, conversation: ev.ConversationCreated, quoted: ev.Event | None, *,
                message_id: uuid.UUID, content: str, sender: str, internal: bool, at: datetime,
                attachments: tuple[ev.AttachmentRef, ...] = ()) -> list[Pending]:
    """A new message; `quoted` is the first event of the stream it replies to, if it names one. The
    contract's rule: a quote only of an earlier message of the same conversation, else ignored."""
    reply_to = (quoted.message_id if isinstance(quoted, ev.MessageCreated)
                and quoted.conversation_id == conversation.conversation_id else None)
    return [Pending(message_id, 1, ev.MessageCreated(
        org_id=principal.org_id, at=at, message_id=message_id, conversation_id=conversation.conversation_id,
        website_id=conversation.website_id, content=content, sender=sender, reply_to=reply_to, internal=internal,
        operator_id=principal.operator_id, attachments=attachments))]


def decide_read(message: Message, actor: ev.Actor, at: datetime) -> list[Pending]:
    """A read receipt, recorded once."""
    if message.read:
        return []
    return message.follow(ev.MessageRead(org_id=message.created.org_id, at=at, message_id=message.created.message_id,
                                         conversation_id=message.created.conversation_id, actor=actor))


def check_visitor_message(principal: Principal, message: ev.MessageCreated, conversation: ev.ConversationCreated,
                          website_id: str) -> None:
    """A message of this visitor's transcript: their own conversation, not operator-only, not a note.
    Anything else is 404, exactly like a message that does not exist."""
    if (message.internal or website_id != str(principal.website_id)
            or conversation.customer_id != principal.customer_id or conversation.operator_only):
        raise NotFound("no such message in this session's transcript")


def check_rateable_by_visitor(message: ev.MessageCreated) -> None:
    """Rateable by the visitor: the team's replies (operators and AI agents)."""
    if message.sender != "operator":
        raise NotFound("no rateable message with this id in this session's transcript")


def decide_rating(principal: Principal, message: Message, rating: str, at: datetime) -> list[Pending]:
    created = message.created
    return message.follow(ev.MessageRated(
        org_id=principal.org_id, at=at, message_id=created.message_id, conversation_id=created.conversation_id,
        rating=rating, sender="operator" if principal.is_operator else "customer",
        operator_id=principal.operator_id))


def single_emoji(value: str | None) -> str | None:
    """The contract's rule: exactly one emoji (ZWJ sequences, flags and skin tones are one), or null."""
    if value is not None and not emoji_library.is_emoji(value):
        raise Invalid("the reaction must be exactly one emoji, or null to clear it", "emoji")
    return value


def with_reaction(current: tuple[ev.Reaction, ...], sender: str, person_id: uuid.UUID,
                  emoji: str | None) -> tuple[ev.Reaction, ...]:
    """One emoji per person: a new one replaces the person's previous one, null removes it."""
    others = tuple(r for r in current if r.person_id != person_id)
    if emoji is None:
        return others
    if len(others) >= MAX_REACTIONS:
        raise Conflict(f"the message already holds the maximum of {MAX_REACTIONS} reactions", "emoji")
    return (*others, ev.Reaction(emoji=emoji, sender=sender, person_id=person_id))


def decide_reaction(principal: Principal, message: Message, emoji: str | None, at: datetime) -> list[Pending]:
    created = message.created
    sender, person_id = (("operator", principal.operator_id) if principal.is_operator
                         else ("customer", principal.customer_id))
    reactions = with_reaction(message.reactions, sender, person_id, single_emoji(emoji))
    return message.follow(ev.MessageReactionsChanged(
        org_id=principal.org_id, at=at, message_id=created.message_id, conversation_id=created.conversation_id,
        sender=sender, person_id=person_id, emoji=emoji, reactions=reactions))


def check_may_change(principal: Principal, message: Message, at: datetime, window_seconds: float) -> None:
    """The contract's rule for editing and deleting: an admin any message; an operator their own, within
    the edit window after it was sent. A deleted message is gone for everyone (404)."""
    if message.deleted:
        raise NotFound("message not found")
    if principal.has_role("admin"):
        return
    created = message.created
    if created.operator_id is None or created.operator_id != principal.operator_id:
        raise Forbidden("only the message's author or an admin can change it")
    if (at - created.at).total_seconds() > window_seconds:
        raise Forbidden(f"a message can be changed for {window_seconds:g} seconds after it was sent; ask an admin")


def decide_edit(principal: Principal, message: Message, content: str, at: datetime,
                window_seconds: float) -> list[Pending]:
    check_may_change(principal, message, at, window_seconds)
    if content == message.content:
        return []
    return message.follow(ev.MessageEdited(
        org_id=principal.org_id, at=at, message_id=message.created.message_id,
        conversation_id=message.created.conversation_id, website_id=message.created.website_id,
        internal=message.created.internal, previous_content=message.content, edited_content=content,
        operator_id=principal.operator_id))


def decide_delete(principal: Principal, message: Message, at: datetime, window_seconds: float) -> list[Pending]:
    check_may_change(principal, message, at, window_seconds)
    return message.follow(_deleted(principal, message, "operator", at))


def _deleted(principal: Principal, message: Message, sender: str, at: datetime) -> ev.MessageDeleted:
    return ev.MessageDeleted(org_id=principal.org_id, at=at, message_id=message.created.message_id,
                             conversation_id=message.created.conversation_id, website_id=message.created.website_id,
                             internal=message.created.internal, previous_content=message.content, sender=sender,
                             operator_id=principal.operator_id)


def decide_visitor_delete(principal: Principal, message: Message, last_message_id: uuid.UUID | None,
                          at: datetime) -> list[Pending]:
    """The visitor takes back their own message: only their conversation's last one, and only while no
    operator has read it (after that, the team may already have acted on it)."""
    created = message.created
    if message.deleted or created.sender != "customer":
        raise NotFound("no message of yours with this id in this session's transcript")
    if created.message_id != last_message_id:
        raise Conflict("only the conversation's last message can be deleted")
    if message.read:
        raise Conflict("the team has read this message; it can no longer be deleted")
    return message.follow(_deleted(principal, message, "customer", at))
