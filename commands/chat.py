"""The visitor's side: chat sessions (the embedded surfaces' credential), their conversations,
messages and profile.

A session is bound to one customer of one website. A signed `userId` (or signed e-mail address) names
the same customer on every device: the first session for it reserves the name, later ones find it."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from commands.admin import EMAIL, Created, hash_secret
from commands.customers import Field
from commands.errors import Invalid, NotFound, Unauthorized
from commands.messages import MAX_CONTENT, append_message
from commands.principal import Principal
from commands.streams import Entity, created_of, load, load_created_async, name_stream, now
from commands.websites import website_state
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, Recorded, StreamConflict
from events.ids import new_id, parse_id

MAX_METADATA_KEYS = 50
MetadataKey = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
MetadataValue = Annotated[str, msgspec.Meta(max_length=1000)]


class SessionStart(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    user_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    signature: str | None = None
    email: Field | None = None
    email_signature: str | None = None


class VisitorMessage(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    conversation_id: str
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT)]
    reply_to_message_id: str | None = None


class ProfileUpdate(msgspec.Struct, forbid_unknown_fields=True):
    nickname: Field | None | msgspec.UnsetType = msgspec.UNSET
    phone: Field | None | msgspec.UnsetType = msgspec.UNSET


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


def identity_signature(identity_secret: str, value: str) -> str:
    """What the integrator's server mints: lowercase hex HMAC-SHA256 of the exact string."""
    return hmac.new(identity_secret.encode(), value.encode(), hashlib.sha256).hexdigest()


def _verify(identity_secret: str, value: str, signature: str | None, field: str) -> None:
    expected = identity_signature(identity_secret, value).encode()
    if signature is None or not hmac.compare_digest(expected, signature.encode()):
        raise Unauthorized(f"{field} is missing or does not sign the value with this website's identity secret",
                           field)


def _bound_customer(store: EventStore, kind: str, website_id: uuid.UUID, value: str) -> uuid.UUID | None:
    history = store.load(name_stream(kind, f"{website_id}:{value}"))
    return history[0].event.owner_id if history else None


def _customer_email(customer: Entity[ev.CustomerCreated]) -> str | None:
    email = customer.created.email
    for recorded in customer.history:
        if isinstance(recorded.event, ev.CustomerUpdated) and "email" in recorded.event.changes:
            email = recorded.event.changes["email"]
    return email


def start_session(store: EventStore, sealer: Sealer, body: SessionStart) -> Session:
    website_id = parse_id(body.website_id)
    state = website_state(store.load(website_id) if website_id else [])
    if state is None:
        raise NotFound("website not found", "websiteId")
    website = state.created
    if body.user_id is not None:
        _verify(sealer.open(state.identity_secret), body.user_id, body.signature, "signature")
    email = body.email.strip().lower() if body.email is not None else None
    if body.email is not None:
        _verify(sealer.open(state.identity_secret), body.email, body.email_signature, "emailSignature")
        if not EMAIL.match(email):
            raise Invalid("not an e-mail address", "email")
    # A userId names the person; an e-mail address alone names them when no userId is given.
    binding = ("customer-user", body.user_id) if body.user_id is not None else (
        ("customer-email", email) if email is not None else None)
    token = "cs_" + secrets.token_urlsafe(32)
    while True:
        try:
            return _append_session(store, website, binding, body.user_id, email, token)
        except StreamConflict:
            continue  # another device reserved the same person first: bind to that customer instead


def _append_session(store: EventStore, website: ev.WebsiteCreated, binding: tuple[str, str] | None,
                    user_id: str | None, email: str | None, token: str) -> Session:
    org_id, at = website.org_id, now()
    pending: list[Pending] = []
    customer_id = _bound_customer(store, binding[0], website.website_id, binding[1]) if binding else None
    if customer_id is None:
        customer_id = new_id()
        if binding:
            pending.append(Pending(name_stream(binding[0], f"{website.website_id}:{binding[1]}"), 1, ev.NameReserved(
                org_id=org_id, at=at, kind=binding[0], value=f"{website.website_id}:{binding[1]}",
                owner_id=customer_id)))
        pending.append(Pending(customer_id, 1, ev.CustomerCreated(
            org_id=org_id, at=at, customer_id=customer_id, website_id=website.website_id, email=email,
            user_id=user_id)))
    elif email is not None:
        customer = load(store, customer_id, ev.CustomerCreated, org_id, "customer")
        if _customer_email(customer) != email:
            pending.append(Pending(customer_id, customer.version + 1, ev.CustomerUpdated(
                org_id=org_id, at=at, customer_id=customer_id, changes={"email": email})))
    session_id = new_id()
    pending.append(Pending(session_id, 1, ev.ChatSessionStarted(
        org_id=org_id, at=at, session_id=session_id, website_id=website.website_id, customer_id=customer_id,
        token_hash=hash_secret(token))))
    return Session(token, customer_id, store.append(*pending))


def own_conversation(principal: Principal, conversation: ev.ConversationCreated) -> ev.ConversationCreated:
    """The visitor's own conversation; another visitor's or an operator-only one is 404."""
    if conversation.customer_id != principal.customer_id or conversation.operator_only:
        raise NotFound("conversation not found")
    return conversation


def merged(metadata: dict[str, str], values: dict[str, str | None]) -> dict[str, str]:
    """`values` applied to `metadata` (null removes); more keys than a conversation may hold is 400."""
    result = {**metadata, **values}
    result = {k: v for k, v in result.items() if v is not None}
    if len(result) > MAX_METADATA_KEYS:
        raise Invalid(f"a conversation holds at most {MAX_METADATA_KEYS} metadata keys", "metadata")
    return result


def held_metadata(customer: Entity[ev.CustomerCreated]) -> dict[str, str]:
    """What `setMetadata` held for the visitor's next conversation."""
    held: dict[str, str] = {}
    for recorded in customer.history:
        if isinstance(recorded.event, ev.MetadataPending):
            held = merged(held, recorded.event.values)
        elif isinstance(recorded.event, ev.MetadataPendingTaken):
            held = {}
    return held


def conversation_metadata(history: list[Recorded]) -> dict[str, str]:
    metadata = dict(history[0].event.metadata)
    for recorded in history:
        if isinstance(recorded.event, ev.ConversationMetadataSet):
            metadata = merged(metadata, recorded.event.values)
    return metadata


def start_conversation(store: EventStore, principal: Principal) -> Created:
    """A new conversation of the visitor's, which takes the metadata held for it."""
    while True:
        customer = load(store, principal.customer_id, ev.CustomerCreated, principal.org_id, "customer")
        held, at, conversation_id = held_metadata(customer), now(), new_id()
        pending = [Pending(conversation_id, 1, ev.ConversationCreated(
            org_id=principal.org_id, at=at, conversation_id=conversation_id, website_id=principal.website_id,
            customer_id=principal.customer_id, metadata=held, actor=principal.actor))]
        if held:
            pending.append(Pending(principal.customer_id, customer.version + 1, ev.MetadataPendingTaken(
                org_id=principal.org_id, at=at, customer_id=principal.customer_id, conversation_id=conversation_id)))
        try:
            return Created(conversation_id, store.append(*pending))
        except StreamConflict:
            continue  # the visitor's other tab held or took metadata meanwhile: decide again


def set_metadata(store: EventStore, principal: Principal, current: uuid.UUID | None,
                 body: MetadataUpdate) -> tuple[Created, Metadata]:
    """On the visitor's `current` conversation, or held for the next one when there is none."""
    at = now()
    if current is not None:
        history = store.load(current)
        own_conversation(principal, created_of(history[0] if history else None, ev.ConversationCreated,
                                               principal.org_id, "conversation"))
        metadata = merged(conversation_metadata(history), body.metadata)
        position = store.append(Pending(current, history[-1].version + 1, ev.ConversationMetadataSet(
            org_id=principal.org_id, at=at, conversation_id=current, values=body.metadata)))
        return Created(current, position), Metadata(current, metadata)
    customer = load(store, principal.customer_id, ev.CustomerCreated, principal.org_id, "customer")
    metadata = merged(held_metadata(customer), body.metadata)
    position = store.append(Pending(principal.customer_id, customer.version + 1, ev.MetadataPending(
        org_id=principal.org_id, at=at, customer_id=principal.customer_id, values=body.metadata)))
    return Created(principal.customer_id, position), Metadata(None, metadata)


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


async def post_message(store: EventStore, principal: Principal, body: VisitorMessage) -> Created:
    conversation = own_conversation(principal, await load_created_async(
        store, parse_id(body.conversation_id), ev.ConversationCreated, principal.org_id, "conversation"))
    return await append_message(store, principal, conversation, content=body.content, sender="customer",
                                reply_to=body.reply_to_message_id)


def update_profile(store: EventStore, principal: Principal, body: ProfileUpdate) -> Created:
    customer = load(store, principal.customer_id, ev.CustomerCreated, principal.org_id, "customer")
    changes = {k: v for k in ("nickname", "phone") if (v := getattr(body, k)) is not msgspec.UNSET}
    if not changes:
        return Created(customer.created.customer_id, store.org_position(principal.org_id))
    return Created(customer.created.customer_id, store.append(Pending(
        customer.created.customer_id, customer.version + 1, ev.CustomerUpdated(
            org_id=principal.org_id, at=now(), customer_id=customer.created.customer_id, changes=changes))))
