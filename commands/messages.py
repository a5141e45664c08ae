"""Posting messages and read receipts."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import msgspec

from commands.admin import Created
from commands.errors import Forbidden, NotFound
from commands.principal import Principal
from commands.streams import Entity, load, load_created_async, now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id, parse_id

MAX_CONTENT = 20_000


class MessageCreate(msgspec.Struct, forbid_unknown_fields=True, rename={"sender": "from", "conversation_id": "conversationId", "reply_to_message_id": "replyToMessageId"}):
    conversation_id: str
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT)]
    sender: Literal["operator", "customer"]
    reply_to_message_id: str | None = None
    internal: bool = False


def check_pinned_website(principal: Principal, created: ev.ConversationCreated | ev.MessageCreated, what: str) -> None:
    """A key pinned to a website sees only that website's conversations and messages."""
    if principal.website_id is not None and created.website_id != principal.website_id:
        raise NotFound(f"{what} not found")


def load_conversation(store: EventStore, principal: Principal,
                      conversation_id: uuid.UUID | None) -> Entity[ev.ConversationCreated]:
    """A conversation the principal may see: its organization's, and its website's for a pinned key."""
    conversation = load(store, conversation_id, ev.ConversationCreated, principal.org_id, "conversation")
    check_pinned_website(principal, conversation.created, "conversation")
    return conversation


async def conversation_created_async(store: EventStore, principal: Principal,
                                     conversation_id: uuid.UUID | None) -> ev.ConversationCreated:
    """`load_conversation` for a decision that needs only what the conversation was created as."""
    created = await load_created_async(store, conversation_id, ev.ConversationCreated, principal.org_id,
                                       "conversation")
    check_pinned_website(principal, created, "conversation")
    return created


def load_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None) -> Entity[ev.MessageCreated]:
    message = load(store, message_id, ev.MessageCreated, principal.org_id, "message")
    check_pinned_website(principal, message.created, "message")
    return message


async def quoted_message(store: EventStore, conversation_id: uuid.UUID, reply_to: str | None) -> uuid.UUID | None:
    """The contract's rule: a quote only of an earlier message of the same conversation, else ignored."""
    reply_id = parse_id(reply_to)
    if reply_id is None:
        return None
    first = await store.first_async(reply_id)
    if first and isinstance(first.event, ev.MessageCreated) and first.event.conversation_id == conversation_id:
        return reply_id
    return None


async def append_message(store: EventStore, principal: Principal, conversation: ev.ConversationCreated, *,
                         content: str, sender: str, reply_to: str | None = None, internal: bool = False) -> Created:
    """Runs on the event loop: posting messages is the hot write path, and a worker thread per post would
    queue behind the interpreter lock of a busy API process. The principal may be one the API kept from an
    earlier request: the append raises `CredentialsChanged` if its credential may have been revoked since."""
    message_id = new_id()
    created = ev.MessageCreated(
        org_id=principal.org_id, at=now(), message_id=message_id, conversation_id=conversation.conversation_id,
        website_id=conversation.website_id, content=content, sender=sender,
        reply_to=await quoted_message(store, conversation.conversation_id, reply_to), internal=internal,
        operator_id=principal.operator_id)
    position = await store.append_async(Pending(message_id, 1, created), credential_generation=principal.generation)
    return Created(message_id, position, created)


async def create_message(store: EventStore, principal: Principal, body: MessageCreate) -> Created:
    if body.internal and not principal.is_operator:
        raise Forbidden("only an operator can write an internal note", "internal")
    conversation = await conversation_created_async(store, principal, parse_id(body.conversation_id))
    return await append_message(store, principal, conversation, content=body.content, sender=body.sender,
                                reply_to=body.reply_to_message_id, internal=body.internal)


def mark_read(store: EventStore, principal: Principal, message_id: uuid.UUID | None) -> Created:
    message = load_message(store, principal, message_id)
    if any(isinstance(r.event, ev.MessageRead) for r in message.history):
        return Created(message.created.message_id, store.org_position(principal.org_id))
    position = store.append(Pending(message.created.message_id, message.version + 1, ev.MessageRead(
        org_id=principal.org_id, at=now(), message_id=message.created.message_id,
        conversation_id=message.created.conversation_id, actor=principal.actor)))
    return Created(message.created.message_id, position)
