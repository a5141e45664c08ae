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
    DocumentCreated,
    DocumentUpdated,
    DocumentDeleted,
)
