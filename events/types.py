"""The facts Parley records. Every change in the system is one of these, appended to the event store.

Each event is a msgspec Struct tagged with its type name; the tag is also the stored topic. Every event
names the organization it belongs to, so consumers can scope it without loading anything.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag=lambda name: name):
    org_id: uuid.UUID
    at: datetime


class OrganizationCreated(Event, frozen=True):
    name: str


class NameReserved(Event, frozen=True):
    """Claims a unique name (a website vanity id, an operator e-mail); its stream id is derived from
    the name, so a second claim conflicts in the store."""

    kind: str
    value: str
    owner_id: uuid.UUID


class WebsiteCreated(Event, frozen=True):
    website_id: uuid.UUID
    name: str
    brand_color: str | None
    identity_secret: str


class OperatorCreated(Event, frozen=True):
    operator_id: uuid.UUID
    email: str
    password_hash: str


class OperatorTokenIssued(Event, frozen=True):
    token_id: uuid.UUID
    operator_id: uuid.UUID
    token_hash: str


class OperatorTokenRevoked(Event, frozen=True):
    token_id: uuid.UUID


class ApiKeyCreated(Event, frozen=True):
    key_id: uuid.UUID
    secret_hash: str
    scopes: list[str]
    website_id: uuid.UUID | None = None
    rate_per_minute: int | None = None


class ApiKeyRevoked(Event, frozen=True):
    key_id: uuid.UUID


class CustomerCreated(Event, frozen=True):
    customer_id: uuid.UUID
    website_id: uuid.UUID
    email: str | None = None
    nickname: str | None = None
    phone: str | None = None
    language: str | None = None
    user_id: str | None = None


class CustomerUpdated(Event, frozen=True):
    customer_id: uuid.UUID
    changes: dict[str, str | None]


class ConversationCreated(Event, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool = False


class ConversationUpdated(Event, frozen=True):
    """Resolving, reopening, marking or unmarking spam: only the flags given change."""

    conversation_id: uuid.UUID
    resolved: bool | None = None
    spam: bool | None = None


class MessageCreated(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    content: str
    sender: str
    reply_to: uuid.UUID | None = None
    internal: bool = False
    operator_id: uuid.UUID | None = None


class MessageRead(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID


class ChatSessionStarted(Event, frozen=True):
    """A visitor's chat-session credential, bound to one customer of one website."""

    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    token_hash: str


class CustomerMetadataSet(Event, frozen=True):
    """Extra attributes a visitor's page attached (`setMetadata`); a null value removes the key."""

    customer_id: uuid.UUID
    values: dict[str, str | None]


class MessageRated(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    rating: str
    sender: str  # who rated: "customer" (the visitor) or "operator"
    operator_id: uuid.UUID | None = None


class Reaction(msgspec.Struct, frozen=True, rename={"sender": "from", "person_id": "personId"}):
    emoji: str
    sender: str  # "customer" or "operator"
    person_id: uuid.UUID  # the customer's or the operator's id: one reaction per person


class MessageReactionsChanged(Event, frozen=True):
    """One person set or cleared their reaction; `reactions` is the message's whole list afterwards."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    sender: str
    person_id: uuid.UUID
    emoji: str | None
    reactions: tuple[Reaction, ...]


# The keyless sandbox belongs to no customer: its events carry this fixed, well-known organization id,
# which no `parley admin org create` can ever return (real ids are UUIDv7).
SANDBOX_ORG_ID = uuid.UUID("00000000-0000-0000-0000-5a4db0c50000")


class SandboxJobCreated(Event, frozen=True):
    """A sandbox document-summary job; it succeeds by itself a fixed time after `at`."""

    job_id: uuid.UUID


class WebhookSubscribed(Event, frozen=True):
    subscription_id: uuid.UUID
    website_id: uuid.UUID
    url: str
    events: list[str]
    secret: str  # kept in the clear: every delivery is signed with it


class WebhookUpdated(Event, frozen=True):
    """Only the fields given change."""

    subscription_id: uuid.UUID
    url: str | None = None
    events: list[str] | None = None


class WebhookDisabled(Event, frozen=True):
    subscription_id: uuid.UUID
    reason: str


class WebhookEnabled(Event, frozen=True):
    subscription_id: uuid.UUID


class WebhookDeleted(Event, frozen=True):
    subscription_id: uuid.UUID


class DocumentState(Event, frozen=True):
    """A help document's whole state: creates and updates carry it all, so a consumer never loads."""

    document_id: uuid.UUID
    website_id: uuid.UUID
    title: str
    locale: str
    category: str | None
    published: bool
    content: str


class DocumentCreated(DocumentState, frozen=True):
    source: str | None = None  # the imported file's path, which re-imports find it by


class DocumentUpdated(DocumentState, frozen=True):
    pass


class DocumentDeleted(Event, frozen=True):
    document_id: uuid.UUID
    website_id: uuid.UUID


EVENT_TYPES: tuple[type[Event], ...] = (
    OrganizationCreated,
    NameReserved,
    WebsiteCreated,
    OperatorCreated,
    OperatorTokenIssued,
    OperatorTokenRevoked,
    ApiKeyCreated,
    ApiKeyRevoked,
    CustomerCreated,
    CustomerUpdated,
    ConversationCreated,
    ConversationUpdated,
    MessageCreated,
    MessageRead,
    ChatSessionStarted,
    CustomerMetadataSet,
    MessageRated,
    MessageReactionsChanged,
    SandboxJobCreated,
    WebhookSubscribed,
    WebhookUpdated,
    WebhookDisabled,
    WebhookEnabled,
    WebhookDeleted,
    DocumentCreated,
    DocumentUpdated,
    DocumentDeleted,
)
