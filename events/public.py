"""What of each event may leave the store: one public shape per event type, an explicit allow-list.

Every way events leave (the events API, the Parquet and JSON Lines exports, the audit trail) goes through
`SHAPES`. A shape is a msgspec Struct naming the event fields that may be shown; its fields must be fields
of the event, of the same type, so the stored JSON decodes straight into it and everything else (hashes,
secrets, anything a credential could be rebuilt from) is never even read. An event type with no shape
here is left out of every export and counted (so a new event type is private until someone writes its
shape: see docs/history.md).
"""

from __future__ import annotations

import types
import typing
import uuid
from datetime import datetime
from typing import Any

import msgspec

from events import types as ev
from events.store import ESCAPED_NUL, JSON_NUL


class Shape(msgspec.Struct, frozen=True, rename="camel"):
    """A public shape: its fields are written in the API's camelCase."""


class OrganizationCreated(Shape, frozen=True):
    name: str


class WebsiteCreated(Shape, frozen=True):  # never the identity secret
    website_id: uuid.UUID
    name: str
    brand_color: str | None


class WebsiteUpdated(Shape, frozen=True):
    website_id: uuid.UUID
    brand_color: str | None
    allowed_origins: list[str]


class WebsiteIdentitySecretRotated(Shape, frozen=True):  # that it happened, never the secret
    website_id: uuid.UUID


class OperatorCreated(Shape, frozen=True):  # never the password hash
    operator_id: uuid.UUID
    email: str


class OperatorTokenIssued(Shape, frozen=True):  # never the token's hash
    token_id: uuid.UUID
    operator_id: uuid.UUID


class OperatorTokenRevoked(Shape, frozen=True):
    token_id: uuid.UUID


class OperatorOrgAdded(Shape, frozen=True):  # the organization joined is the event's own org_id
    operator_id: uuid.UUID


class OperatorOrgRemoved(Shape, frozen=True):
    operator_id: uuid.UUID


class OperatorSessionsRevoked(Shape, frozen=True):
    operator_id: uuid.UUID


class ApiKeyCreated(Shape, frozen=True):  # never the secret's hash
    key_id: uuid.UUID
    scopes: list[str]
    website_id: uuid.UUID | None = None
    rate_per_minute: int | None = None
    name: str | None = None


class ApiKeyRevoked(Shape, frozen=True):
    key_id: uuid.UUID


class CustomerCreated(Shape, frozen=True):
    customer_id: uuid.UUID
    website_id: uuid.UUID
    email: str | None = None
    nickname: str | None = None
    phone: str | None = None
    language: str | None = None
    user_id: str | None = None


class CustomerUpdated(Shape, frozen=True):
    customer_id: uuid.UUID
    changes: dict[str, str | None]


class ConversationCreated(Shape, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool = False
    actor: ev.Actor | None = None
    metadata: dict[str, str] = {}


class ConversationMetadataSet(Shape, frozen=True):
    conversation_id: uuid.UUID
    values: dict[str, str | None]


class ConversationUpdated(Shape, frozen=True):
    conversation_id: uuid.UUID
    resolved: bool | None = None
    spam: bool | None = None
    actor: ev.Actor | None = None
    agent_paused: bool | None = None
    agent_pause_reason: str | None = None
    handoff: bool = False


class MessageCreated(Shape, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    content: str
    sender: str
    reply_to: uuid.UUID | None = None
    internal: bool = False
    operator_id: uuid.UUID | None = None
    campaign_id: uuid.UUID | None = None
    author: str | None = None
    incomplete: bool = False
    agent_run_id: uuid.UUID | None = None


class MessageRead(Shape, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    actor: ev.Actor | None = None


class ChatSessionStarted(Shape, frozen=True):  # never the session token's hash
    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID


class CustomerMetadataSet(Shape, frozen=True):
    customer_id: uuid.UUID
    values: dict[str, str | None]


class MetadataPending(Shape, frozen=True):
    customer_id: uuid.UUID
    values: dict[str, str | None]


class MetadataPendingTaken(Shape, frozen=True):
    customer_id: uuid.UUID
    conversation_id: uuid.UUID


class ChatContextSet(Shape, frozen=True):  # the page context the visitor's widget exposed, as the agent reads it
    context_id: uuid.UUID
    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    readables: tuple[ev.Readable, ...]
    actions: tuple[ev.Action, ...]


class MessageRated(Shape, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    rating: str
    sender: str
    operator_id: uuid.UUID | None = None


class MessageReactionsChanged(Shape, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    sender: str
    person_id: uuid.UUID
    emoji: str | None
    reactions: tuple[ev.Reaction, ...]


class SandboxJobCreated(Shape, frozen=True):
    job_id: uuid.UUID


# Webhook subscriptions: never the signing secret, and not the URL either: an endpoint's URL often is a
# credential itself (a path or query token that lets anyone post to it).
class WebhookSubscribed(Shape, frozen=True):
    subscription_id: uuid.UUID
    website_id: uuid.UUID
    events: list[str]


class WebhookUpdated(Shape, frozen=True):
    subscription_id: uuid.UUID
    events: list[str] | None = None


class WebhookDisabled(Shape, frozen=True):
    subscription_id: uuid.UUID
    reason: str


class WebhookEnabled(Shape, frozen=True):
    subscription_id: uuid.UUID


class WebhookDeleted(Shape, frozen=True):
    subscription_id: uuid.UUID


class AgentConfigured(Shape, frozen=True):  # never the URL (it may carry a token of the agent's own)
    website_id: uuid.UUID
    enabled: bool
    greeting: str | None
    fallback_message: str | None


class AgentSecretSet(Shape, frozen=True):  # that it happened, never the secret
    website_id: uuid.UUID


class AgentRemoved(Shape, frozen=True):
    website_id: uuid.UUID


class AgentActionOffered(Shape, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    agent_run_id: uuid.UUID
    tool_call_id: str
    name: str
    arguments: str


class AgentActionResult(Shape, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    tool_call_id: str
    content: str


class AgentRunEnded(Shape, frozen=True):
    agent_run_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    reply_to: uuid.UUID | None
    outcome: str
    error_class: str | None = None
    error: str | None = None


class DocumentState(Shape, frozen=True):
    document_id: uuid.UUID
    website_id: uuid.UUID
    title: str
    locale: str
    category: str | None
    published: bool
    content: str


class DocumentCreated(DocumentState, frozen=True):
    source: str | None = None


class DocumentUpdated(DocumentState, frozen=True):
    pass


class DocumentDeleted(Shape, frozen=True):
    document_id: uuid.UUID
    website_id: uuid.UUID


class CampaignCreated(Shape, frozen=True):
    campaign_id: uuid.UUID
    website_id: uuid.UUID
    name: str
    content: str
    audience: ev.Audience


class CampaignUpdated(CampaignCreated, frozen=True):
    pass


class CampaignDeleted(Shape, frozen=True):
    campaign_id: uuid.UUID
    website_id: uuid.UUID


class CampaignScheduled(Shape, frozen=True):
    campaign_id: uuid.UUID
    scheduled_at: datetime


class CampaignStarted(Shape, frozen=True):
    campaign_id: uuid.UUID


class CampaignRecipients(Shape, frozen=True):  # customer ids only, as conversation events show them
    campaign_id: uuid.UUID
    part: int
    total: int
    customer_ids: tuple[uuid.UUID, ...]


class CampaignBatchSent(Shape, frozen=True):
    campaign_id: uuid.UUID
    first: int
    count: int


class CampaignCompleted(Shape, frozen=True):
    campaign_id: uuid.UUID
    sent: int


class CampaignCancelled(Shape, frozen=True):
    campaign_id: uuid.UUID


# NameReserved has no shape on purpose: it is the store's bookkeeping for unique names (website vanity
# ids, e-mail addresses, visitors' bindings), and what it names is in the events it guards.
SHAPES: dict[type[ev.Event], type[Shape]] = {
    ev.OrganizationCreated: OrganizationCreated,
    ev.WebsiteCreated: WebsiteCreated,
    ev.WebsiteUpdated: WebsiteUpdated,
    ev.WebsiteIdentitySecretRotated: WebsiteIdentitySecretRotated,
    ev.OperatorCreated: OperatorCreated,
    ev.OperatorTokenIssued: OperatorTokenIssued,
    ev.OperatorTokenRevoked: OperatorTokenRevoked,
    ev.OperatorOrgAdded: OperatorOrgAdded,
    ev.OperatorOrgRemoved: OperatorOrgRemoved,
    ev.OperatorSessionsRevoked: OperatorSessionsRevoked,
    ev.ApiKeyCreated: ApiKeyCreated,
    ev.ApiKeyRevoked: ApiKeyRevoked,
    ev.CustomerCreated: CustomerCreated,
    ev.CustomerUpdated: CustomerUpdated,
    ev.ConversationCreated: ConversationCreated,
    ev.ConversationUpdated: ConversationUpdated,
    ev.ConversationMetadataSet: ConversationMetadataSet,
    ev.MessageCreated: MessageCreated,
    ev.MessageRead: MessageRead,
    ev.ChatSessionStarted: ChatSessionStarted,
    ev.CustomerMetadataSet: CustomerMetadataSet,
    ev.MetadataPending: MetadataPending,
    ev.MetadataPendingTaken: MetadataPendingTaken,
    ev.ChatContextSet: ChatContextSet,
    ev.MessageRated: MessageRated,
    ev.MessageReactionsChanged: MessageReactionsChanged,
    ev.SandboxJobCreated: SandboxJobCreated,
    ev.WebhookSubscribed: WebhookSubscribed,
    ev.WebhookUpdated: WebhookUpdated,
    ev.WebhookDisabled: WebhookDisabled,
    ev.WebhookEnabled: WebhookEnabled,
    ev.WebhookDeleted: WebhookDeleted,
    ev.DocumentCreated: DocumentCreated,
    ev.DocumentUpdated: DocumentUpdated,
    ev.DocumentDeleted: DocumentDeleted,
    ev.CampaignCreated: CampaignCreated,
    ev.CampaignUpdated: CampaignUpdated,
    ev.CampaignDeleted: CampaignDeleted,
    ev.CampaignScheduled: CampaignScheduled,
    ev.CampaignStarted: CampaignStarted,
    ev.CampaignRecipients: CampaignRecipients,
    ev.CampaignBatchSent: CampaignBatchSent,
    ev.CampaignCompleted: CampaignCompleted,
    ev.CampaignCancelled: CampaignCancelled,
    ev.AgentConfigured: AgentConfigured,
    ev.AgentSecretSet: AgentSecretSet,
    ev.AgentRemoved: AgentRemoved,
    ev.AgentActionOffered: AgentActionOffered,
    ev.AgentActionResult: AgentActionResult,
    ev.AgentRunEnded: AgentRunEnded,
}

EVENT_NAMES = frozenset(event_type.__name__ for event_type in ev.EVENT_TYPES)


def check(shapes: dict[type[ev.Event], type[Shape]]) -> None:
    """Every shape names fields of its event, with the event's type and default: what makes decoding the
    stored event straight into the shape sound. Raises TypeError naming the first that does not."""
    for event_type, shape in shapes.items():
        if event_type not in ev.EVENT_TYPES:
            raise TypeError(f"{event_type.__name__} is not in events.types.EVENT_TYPES")
        fields = {f.name: f for f in msgspec.structs.fields(event_type)}
        for field in msgspec.structs.fields(shape):
            own = fields.get(field.name)
            if own is None:
                raise TypeError(f"{shape.__qualname__}.{field.name} is not a field of {event_type.__name__}")
            if (field.type, field.default, field.default_factory) != (own.type, own.default, own.default_factory):
                raise TypeError(f"{shape.__qualname__}.{field.name} differs from {event_type.__name__}'s "
                                f"in type or default")


check(SHAPES)

SHAPE_BY_NAME: dict[str, type[Shape]] = {event_type.__name__: shape for event_type, shape in SHAPES.items()}


def _as_text(tp: Any) -> Any:
    """The type a stored field is decoded as for export: ids and times as the text they are stored as,
    which encodes back to the same JSON without a UUID or datetime made and written again per value."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.Union[tuple(_as_text(arg) for arg in typing.get_args(tp))]  # type: ignore[return-value]
    return str if tp in (uuid.UUID, datetime) else tp


def _stored_twin(shape: type[Shape]) -> type[msgspec.Struct]:
    """The event's time as recorded, then the shape's fields under their stored (snake_case) names, ids
    and times as text: what is decoded of a stored event to export it."""
    def spec(f: msgspec.structs.FieldInfo) -> tuple:
        if f.default is not msgspec.NODEFAULT:
            return f.name, _as_text(f.type), f.default
        if f.default_factory is not msgspec.NODEFAULT:
            return f.name, _as_text(f.type), msgspec.field(default_factory=f.default_factory)
        return f.name, _as_text(f.type)
    return msgspec.defstruct(f"Stored{shape.__name__}", [("at", str), *(spec(f) for f in msgspec.structs.fields(shape))])


_DECODERS = {name: (msgspec.json.Decoder(_stored_twin(shape)), shape) for name, shape in SHAPE_BY_NAME.items()}


def decode_public(type_name: str, stored: bytes) -> tuple[str, Shape] | None:
    """The time (as recorded) and the public shape of a stored event (its JSON, as the store keeps it), or
    None for a type without a shape. Only those fields are decoded, ids and times left as their text (the
    shape is for encoding: it writes the same JSON); U+0000 is read as U+FFFD, as `decode_event` does."""
    found = _DECODERS.get(type_name)
    if found is None:
        return None
    decoder, shape = found
    at, *values = msgspec.structs.astuple(decoder.decode(readable(stored)))
    return at, shape(*values)


def readable(stored: bytes) -> bytes:
    """A stored event's JSON with U+0000 read as U+FFFD, as `decode_event` reads it."""
    return ESCAPED_NUL.sub(rb"\1\\ufffd", stored) if JSON_NUL in stored else stored


def public_of(event: ev.Event) -> Shape | None:
    """The public shape of an event already decoded, or None for a type without one."""
    shape = SHAPES.get(type(event))
    return None if shape is None else msgspec.convert(event, shape, from_attributes=True)


class Line(msgspec.Struct, frozen=True, rename={"stream_id": "streamId"}):
    """One exported event: where it stands in history, what it is, when, in which stream, and its shape."""

    position: int
    type: str
    at: str  # RFC 3339, UTC, as recorded
    stream_id: str
    data: Shape
