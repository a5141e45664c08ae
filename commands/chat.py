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
from typing import Annotated

import msgspec

from commands.admin import EMAIL, Created, hash_secret
from commands.customers import Field
from commands.errors import Invalid, NotFound, Unauthorized
from commands.messages import MAX_CONTENT, append_message
from commands.principal import Principal
from commands.streams import Entity, load, load_created_async, name_stream, now
from events import types as ev
from events.store import EventStore, Pending, StreamConflict
from parley.ids import new_id, parse_id

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
    metadata: Annotated[dict[MetadataKey, MetadataValue | None],
                        msgspec.Meta(max_length=MAX_METADATA_KEYS)] | msgspec.UnsetType = msgspec.UNSET


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


def start_session(store: EventStore, body: SessionStart) -> Session:
    website_id = parse_id(body.website_id)
    history = store.load(website_id) if website_id else []
    if not history or not isinstance(history[0].event, ev.WebsiteCreated):
        raise NotFound("website not found", "websiteId")
    website = history[0].event
    if body.user_id is not None:
        _verify(website.identity_secret, body.user_id, body.signature, "signature")
    email = body.email.strip().lower() if body.email is not None else None
    if body.email is not None:
        _verify(website.identity_secret, body.email, body.email_signature, "emailSignature")
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


def start_conversation(store: EventStore, principal: Principal) -> Created:
    conversation_id = new_id()
    position = store.append(Pending(conversation_id, 1, ev.ConversationCreated(
        org_id=principal.org_id, at=now(), conversation_id=conversation_id, website_id=principal.website_id,
        customer_id=principal.customer_id)))
    return Created(conversation_id, position)


async def post_message(store: EventStore, principal: Principal, body: VisitorMessage) -> Created:
    conversation = own_conversation(principal, await load_created_async(
        store, parse_id(body.conversation_id), ev.ConversationCreated, principal.org_id, "conversation"))
    return await append_message(store, principal, conversation, content=body.content, sender="customer",
                                reply_to=body.reply_to_message_id)


def update_profile(store: EventStore, principal: Principal, body: ProfileUpdate) -> Created:
    customer = load(store, principal.customer_id, ev.CustomerCreated, principal.org_id, "customer")
    changes = {k: v for k in ("nickname", "phone") if (v := getattr(body, k)) is not msgspec.UNSET}
    metadata = body.metadata if body.metadata is not msgspec.UNSET else {}
    at, version, pending = now(), customer.version, []
    if changes:
        version += 1
        pending.append(Pending(customer.created.customer_id, version, ev.CustomerUpdated(
            org_id=principal.org_id, at=at, customer_id=customer.created.customer_id, changes=changes)))
    if metadata:
        pending.append(Pending(customer.created.customer_id, version + 1, ev.CustomerMetadataSet(
            org_id=principal.org_id, at=at, customer_id=customer.created.customer_id, values=metadata)))
    if not pending:
        return Created(customer.created.customer_id, store.org_position(principal.org_id))
    return Created(customer.created.customer_id, store.append(*pending))
