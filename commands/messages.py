"""Posting messages and read receipts."""

from __future__ import annotations

import uuid
from typing import Annotated, Awaitable, Callable, Literal, Sequence

import msgspec

from commands.admin import Created
from commands.attachments import attachments_to_post
from commands.deciders.conversation import check_pinned_website
from commands.deciders.read_state import ReadState, fold_read_state, read_state_stream
from commands.deciders.read_state import decide_read as decide_read_up_to
from commands.deciders.message import (Message, check_may_post, decide_delete, decide_edit, decide_post, decide_read,
                                       fold_message)
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import Entity, execute, execute_async, load, load_created_async, now
from events import types as ev
from events.store import EventStore
from events.ids import new_id, parse_id

MAX_CONTENT = 20_000
# what `attachmentIds` may name: uploads (`POST /api/attachments`); `content` may then be empty
AttachmentIds = Annotated[list[str], msgspec.Meta(max_length=100)]


class MessageCreate(msgspec.Struct, forbid_unknown_fields=True, rename={"sender": "from", "conversation_id": "conversationId", "reply_to_message_id": "replyToMessageId", "attachment_ids": "attachmentIds"}):
    conversation_id: str
    content: Annotated[str, msgspec.Meta(max_length=MAX_CONTENT)]
    sender: Literal["operator", "customer"]
    reply_to_message_id: str | None = None
    internal: bool = False
    attachment_ids: AttachmentIds = []


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


def load_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None) -> Message:
    message = load(store, message_id, ev.MessageCreated, principal.org_id, "message")
    check_pinned_website(principal, message.created, "message")
    return fold_message(message.history)


async def quoted_event(store: EventStore, reply_to: str | None) -> ev.Event | None:
    """The first event of the stream a reply names (the decision checks it is a message of the same
    conversation): a cached read, like the conversation's."""
    reply_id = parse_id(reply_to)
    first = await store.first_async(reply_id) if reply_id is not None else None
    return first.event if first else None


async def post_message(store: EventStore, principal: Principal,
                       conversation: Callable[[], Awaitable[ev.ConversationCreated]], *, content: str, sender: str,
                       reply_to: str | None = None, internal: bool = False, attachment_ids: Sequence[str] = (),
                       attachments_max_bytes: int = 0) -> Created:
    """Runs on the event loop: posting messages is the hot write path, and a worker thread per post would
    queue behind the interpreter lock of a busy API process. `conversation` reads the conversation the
    principal posts to (a cached read). The principal may be one the API kept from an earlier request:
    the append raises `CredentialsChanged` if its credential may have been revoked since. The uploads
    `attachment_ids` names go with it, together at most `attachments_max_bytes`."""
    message_id = new_id()
    attachments = (await attachments_to_post(store, principal, attachment_ids, attachments_max_bytes)
                   if attachment_ids else ())
    if not content and not attachments:
        raise Invalid("a message needs content or at least one attachment", "content")

    async def target() -> tuple[ev.ConversationCreated, ev.Event | None]:
        return await conversation(), await quoted_event(store, reply_to)

    appended = await execute_async(store, target, lambda state: decide_post(
        principal, *state, message_id=message_id, content=content, sender=sender, internal=internal, at=now(),
        attachments=attachments),
        credential_generation=principal.generation)
    return Created(message_id, appended.position, appended.pending[0].event)


async def create_message(store: EventStore, principal: Principal, body: MessageCreate, *,
                         attachments_max_bytes: int = 0) -> Created:
    """`POST /api/messages`, and the MCP server's operator reply (which names no attachments)."""
    check_may_post(principal, body.internal)
    conversation_id = parse_id(body.conversation_id)
    return await post_message(store, principal, lambda: conversation_created_async(store, principal, conversation_id),
                              content=body.content, sender=body.sender, reply_to=body.reply_to_message_id,
                              internal=body.internal, attachment_ids=body.attachment_ids,
                              attachments_max_bytes=attachments_max_bytes)


def mark_read(store: EventStore, principal: Principal, message_id: uuid.UUID | None) -> Created:
    """The message's read receipt (the visitor sees it), and for an operator their own read state of the
    conversation, up to this message (their unread count and badges)."""
    appended = execute(store, principal.org_id, lambda: load_message(store, principal, message_id),
                       lambda message: decide_read(message, principal.actor, now()), retry=False)
    position = appended.position
    if principal.is_operator and principal.operator_id is not None:
        position = max(position, read_up_to(store, principal.org_id, principal.operator_id, appended.state.created))
    return Created(appended.state.created.message_id, position)


def read_up_to(store: EventStore, org_id: uuid.UUID, operator_id: uuid.UUID, message: ev.MessageCreated) -> int:
    """The operator has read the message's conversation up to it (a mark that only moves forward)."""
    def loaded() -> ReadState:
        return fold_read_state(org_id, operator_id, message.conversation_id,
                               store.load(read_state_stream(operator_id, message.conversation_id)))
    return execute(store, org_id, loaded, lambda state: decide_read_up_to(state, message.message_id, message.at,
                                                                          now())).position


class MessageEdit(msgspec.Struct, forbid_unknown_fields=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT)]


def edit_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None, body: MessageEdit,
                 window_seconds: float) -> Created:
    appended = execute(store, principal.org_id, lambda: load_message(store, principal, message_id),
                       lambda message: decide_edit(principal, message, body.content, now(), window_seconds),
                       retry=False)
    return Created(appended.state.created.message_id, appended.position)


def delete_message(store: EventStore, principal: Principal, message_id: uuid.UUID | None,
                   window_seconds: float) -> Created:
    appended = execute(store, principal.org_id, lambda: load_message(store, principal, message_id),
                       lambda message: decide_delete(principal, message, now(), window_seconds), retry=False)
    return Created(appended.state.created.message_id, appended.position)
