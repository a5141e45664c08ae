"""The visitor's side: chat sessions (the embedded surfaces' credential), their conversations,
messages and profile. A session is bound to one customer of one website (`commands/deciders/chat_session.py`
says which)."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from commands.admin import Created, hash_secret
from commands.customers import Field, load_customer
from commands.deciders.chat_session import SessionTarget, binding_stream, check_identity, decide_start_session
from commands.deciders.conversation import (MAX_METADATA_KEYS, Conversation, decide_metadata, fold_conversation,
                                            merged, own_conversation)
from commands.deciders.customer import decide_hold_metadata, decide_start_conversation, decide_update, fold_customer
from commands.deciders.website import website_state
from commands.errors import Invalid, NotFound
from commands.messages import MAX_CONTENT, AttachmentIds, post_message as post_message_as
from commands.principal import Principal
from commands.streams import created_of, execute, load, load_created_async, now
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending
from events.ids import new_id, parse_id

UNVERIFIED_EMAIL = r'^[^@\s<>()\[\],;:"]+@[^@\s<>()\[\],;:"]+\.[^@\s<>()\[\],;:"]+$'
MetadataKey = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
MetadataValue = Annotated[str, msgspec.Meta(max_length=1000)]


class SessionStart(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    user_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    signature: str | None = None
    email: Field | None = None
    email_signature: str | None = None
    # the session this browser holds: an anonymous visitor who signs in keeps its conversations
    session_token: str | None = None


class VisitorMessage(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    conversation_id: str
    content: Annotated[str, msgspec.Meta(max_length=MAX_CONTENT)]
    reply_to_message_id: str | None = None
    attachment_ids: AttachmentIds = []  # the visitor's own uploads (`POST /api/chat/attachments`)


# a language tag as the widget sends it (`fr`, `pt-BR`): the visitor's language, which operators see
LanguageTag = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length=35)]


class ProfileUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """`email` needs no signature: it is stored as the customer's `unverifiedEmail` (never `email`, never an
    identity: it finds, merges and signs in nobody)."""

    nickname: Field | None | msgspec.UnsetType = msgspec.UNSET
    phone: Field | None | msgspec.UnsetType = msgspec.UNSET
    email: Annotated[str, msgspec.Meta(max_length=254, pattern=UNVERIFIED_EMAIL)] | None | msgspec.UnsetType = \
        msgspec.UNSET
    language: LanguageTag | None | msgspec.UnsetType = msgspec.UNSET


class MetadataUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """`setMetadata`: keys to set on the visitor's current conversation; a null value removes one."""

    metadata: Annotated[dict[MetadataKey, MetadataValue | None], msgspec.Meta(max_length=MAX_METADATA_KEYS)]


class Metadata(msgspec.Struct, rename="camel"):
    """Where `setMetadata` landed: the current conversation and its metadata, or (no conversation id)
    what is held for the visitor's next conversation."""

    conversation_id: uuid.UUID | None
    metadata: dict[str, str]


# Bounds of a page's context: the agent reads it all on every turn, and it is stored on every change.
MAX_READABLES = 50
MAX_ACTIONS = 50
MAX_READABLE_VALUE_BYTES = 8192
UserId = Annotated[str, msgspec.Meta(max_length=256)]


class ReadableIn(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    description: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
    value: Any
    user_id: UserId | None = None


class ActionIn(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    description: Annotated[str, msgspec.Meta(max_length=1000)] = ""
    user_id: UserId | None = None


class ContextUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """`PUT /api/chat/context`: the page's whole current set of readables and actions."""

    readables: Annotated[list[ReadableIn], msgspec.Meta(max_length=MAX_READABLES)] = []
    actions: Annotated[list[ActionIn], msgspec.Meta(max_length=MAX_ACTIONS)] = []


@dataclass(frozen=True)
class Session:
    token: str
    customer_id: uuid.UUID
    position: int


def start_session(store: EventStore, sealer: Sealer, body: SessionStart, anonymous: uuid.UUID | None = None) -> Session:
    """A session for the identity `body` names (none: a new anonymous customer); `anonymous`, the customer
    of the session the browser held, becomes the identified customer when the identity has none yet."""
    website_id = parse_id(body.website_id)
    state = website_state(store.load(website_id) if website_id else [])
    if state is None:
        raise NotFound("website not found", "websiteId")
    identity = check_identity(sealer.open(state.identity_secret), body.user_id, body.signature, body.email,
                              body.email_signature)
    token = "cs_" + secrets.token_urlsafe(32)
    customer_id, session_id = new_id(), new_id()

    def target() -> SessionTarget:
        binding = identity.binding
        reserved = store.load(binding_stream(state.created.website_id, binding)) if binding else []
        bound = reserved[0].event.owner_id if reserved else None
        customer = load(store, bound, ev.CustomerCreated, state.created.org_id, "customer") \
            if bound is not None and identity.email is not None else None
        held = load(store, anonymous, ev.CustomerCreated, state.created.org_id, "customer") \
            if anonymous is not None and bound is None else None
        return SessionTarget(state.created, bound, customer and fold_customer(customer.history),
                             held and fold_customer(held.history))

    # On a conflict another device reserved the same person first: the session binds to that customer.
    appended = execute(store, state.created.org_id, target, lambda session: decide_start_session(
        session, identity, customer_id=customer_id, session_id=session_id, token_hash=hash_secret(token), at=now()))
    return Session(token, appended.pending[-1].event.customer_id, appended.position)


def end_session(store: EventStore, principal: Principal) -> Created:
    """The visitor's sign-out on their browser: the session's token stops working (ended once; again is a
    no-op, since the token no longer reaches here)."""
    session_id = principal.credential_id
    position = store.append(Pending(session_id, 2, ev.ChatSessionEnded(
        org_id=principal.org_id, at=now(), session_id=session_id, customer_id=principal.customer_id)))
    return Created(session_id, position)


def start_conversation(store: EventStore, principal: Principal) -> Created:
    """A new conversation of the visitor's, which takes the metadata held for it; decided again when the
    visitor's other tab held or took metadata meanwhile."""
    conversation_id = new_id()
    appended = execute(store, principal.org_id, lambda: load_customer(store, principal, principal.customer_id),
                       lambda customer: decide_start_conversation(principal, customer, conversation_id, now()))
    return Created(conversation_id, appended.position)


def load_own_conversation(store: EventStore, principal: Principal, conversation_id: uuid.UUID) -> Conversation:
    history = store.load(conversation_id)
    own_conversation(principal, created_of(history[0] if history else None, ev.ConversationCreated,
                                           principal.org_id, "conversation"))
    return fold_conversation(history)


def set_metadata(store: EventStore, principal: Principal, current: uuid.UUID | None,
                 body: MetadataUpdate) -> tuple[Created, Metadata]:
    """On the visitor's `current` conversation, or held for the next one when there is none."""
    at = now()
    if current is not None:
        on_conversation = execute(store, principal.org_id, lambda: load_own_conversation(store, principal, current),
                                  lambda conversation: decide_metadata(conversation, body.metadata, at), retry=False)
        return (Created(current, on_conversation.position),
                Metadata(current, merged(on_conversation.state.metadata, body.metadata)))
    held = execute(store, principal.org_id, lambda: load_customer(store, principal, principal.customer_id),
                   lambda customer: decide_hold_metadata(customer, body.metadata, at), retry=False)
    return (Created(principal.customer_id, held.position),
            Metadata(None, merged(held.state.held_metadata, body.metadata)))


def set_context(store: EventStore, principal: Principal, body: ContextUpdate) -> Created:
    for index, readable in enumerate(body.readables):
        if len(msgspec.json.encode(readable.value)) > MAX_READABLE_VALUE_BYTES:
            raise Invalid(f"a readable's value is at most {MAX_READABLE_VALUE_BYTES} bytes of JSON",
                          f"readables[{index}].value")
    context_id = new_id()
    position = store.append(Pending(context_id, 1, ev.ChatContextSet(
        org_id=principal.org_id, at=now(), context_id=context_id, session_id=principal.credential_id,
        website_id=principal.website_id, customer_id=principal.customer_id,
        readables=tuple(ev.Readable(r.user_id, r.description, r.value) for r in body.readables),
        actions=tuple(ev.Action(a.user_id, a.name, a.description) for a in body.actions))))
    return Created(context_id, position)


async def post_message(store: EventStore, principal: Principal, body: VisitorMessage, *,
                       attachments_max_bytes: int = 0) -> Created:
    conversation_id = parse_id(body.conversation_id)

    async def conversation() -> ev.ConversationCreated:
        return own_conversation(principal, await load_created_async(
            store, conversation_id, ev.ConversationCreated, principal.org_id, "conversation"))

    return await post_message_as(store, principal, conversation, content=body.content, sender="customer",
                                 reply_to=body.reply_to_message_id, attachment_ids=body.attachment_ids,
                                 attachments_max_bytes=attachments_max_bytes)


def update_profile(store: EventStore, principal: Principal, body: ProfileUpdate) -> Created:
    changes = {k: v for k in ("nickname", "phone", "language") if (v := getattr(body, k)) is not msgspec.UNSET}
    if body.email is not msgspec.UNSET:
        changes["unverifiedEmail"] = body.email
    appended = execute(store, principal.org_id, lambda: load_customer(store, principal, principal.customer_id),
                       lambda customer: decide_update(customer, changes, now()), retry=False)
    return Created(appended.state.created.customer_id, appended.position)
