"""The facts Parley records. Every change in the system is one of these, appended to the event store.

Each event is a msgspec Struct tagged with its type name; the tag is also the stored topic. Every event
names the organization it belongs to, so consumers can scope it without loading anything.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

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


class WebsiteUpdated(Event, frozen=True):
    """A website's settings as they are after a change, all of them, so a consumer never loads (an empty
    list of allowed origins allows every origin)."""

    website_id: uuid.UUID
    brand_color: str | None
    allowed_origins: list[str]


class WebsiteIdentitySecretRotated(Event, frozen=True):
    """The website's identity secret was replaced: signatures made with the former one stop verifying."""

    website_id: uuid.UUID
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


class OperatorOrgAdded(Event, frozen=True):
    """The operator also belongs to `org_id` (beside the organization it was created in)."""

    operator_id: uuid.UUID


class OperatorOrgRemoved(Event, frozen=True):
    operator_id: uuid.UUID


class OperatorSessionsRevoked(Event, frozen=True):
    """Every session of the operator issued before `at` ends: its access tokens and its MCP connections."""

    operator_id: uuid.UUID


class ApiKeyCreated(Event, frozen=True):
    key_id: uuid.UUID
    secret_hash: str
    scopes: list[str]
    website_id: uuid.UUID | None = None
    rate_per_minute: int | None = None
    name: str | None = None  # what the key is for, as the dashboard lists it


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


class Actor(msgspec.Struct, frozen=True):
    """Who made a change, for the audit trail: a visitor (`customer`), an `operator` or an `apikey`, by id;
    or a `campaign` (by its id) for the conversations a campaign opens."""

    kind: str
    id: uuid.UUID


class ConversationCreated(Event, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool = False
    actor: Actor | None = None  # None in events recorded before it was
    metadata: dict[str, str] = {}  # what the visitor's page set (`setMetadata`) before it existed


class ConversationMetadataSet(Event, frozen=True):
    """Extra attributes the visitor's page attached to the conversation (`setMetadata`); a null value
    removes the key."""

    conversation_id: uuid.UUID
    values: dict[str, str | None]


class ConversationUpdated(Event, frozen=True):
    """Resolving, reopening, marking or unmarking spam, pausing or resuming the website's AI agent in
    this conversation: only the flags given change. `agent_pause_reason` says why the agent was paused
    (the agent's own handoff, a failed run)."""

    conversation_id: uuid.UUID
    resolved: bool | None = None
    spam: bool | None = None
    actor: Actor | None = None
    agent_paused: bool | None = None
    agent_pause_reason: str | None = None
    handoff: bool = False  # the agent, or its failed run, handed the conversation to the team


class MessageCreated(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    content: str
    sender: str
    reply_to: uuid.UUID | None = None
    internal: bool = False
    operator_id: uuid.UUID | None = None
    campaign_id: uuid.UUID | None = None  # the campaign that sent it, for a campaign's message
    # Who wrote it when not the sender itself: "agent" for the website's AI agent (sender "operator").
    author: str | None = None
    incomplete: bool = False  # the agent's answer was cut short (an error, a time-out): what was streamed
    agent_run_id: uuid.UUID | None = None  # the agent run that wrote it


class MessageRead(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    actor: Actor | None = None


class ChatSessionStarted(Event, frozen=True):
    """A visitor's chat-session credential, bound to one customer of one website."""

    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    token_hash: str


class CustomerMetadataSet(Event, frozen=True):
    """Recorded by earlier versions, when `setMetadata` stored on the customer; no longer written (metadata
    belongs to the conversation now) and read by nothing, but stores hold it, so it stays decodable."""

    customer_id: uuid.UUID
    values: dict[str, str | None]


class MetadataPending(Event, frozen=True):
    """`setMetadata` while the visitor has no open conversation: held on the customer's stream for the
    next conversation the visitor starts (a null value removes a held key)."""

    customer_id: uuid.UUID
    values: dict[str, str | None]


class MetadataPendingTaken(Event, frozen=True):
    """The held metadata went into this conversation's `ConversationCreated`: nothing is held any more."""

    customer_id: uuid.UUID
    conversation_id: uuid.UUID


class Readable(msgspec.Struct, frozen=True, rename="camel"):
    user_id: str | None
    description: str
    value: Any  # any JSON the page gives


class Action(msgspec.Struct, frozen=True, rename="camel"):
    user_id: str | None
    name: str
    description: str


class ChatContextSet(Event, frozen=True):
    """The page context a visitor's widget exposes to the AI agent, whole: it replaces the session's
    earlier set. Each set is a stream of its own, so setting one never reads the older ones."""

    context_id: uuid.UUID
    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    readables: tuple[Readable, ...]
    actions: tuple[Action, ...]


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


class AgentConfigured(Event, frozen=True):
    """A website's AG-UI agent: set or changed (the whole configuration, so a consumer never loads)."""

    website_id: uuid.UUID
    url: str
    enabled: bool
    greeting: str | None
    fallback_message: str | None


class AgentSecretSet(Event, frozen=True):
    """The bearer secret sent to the agent on each call: made when the agent is first configured, and on
    each rotation. Kept in the clear: every call carries it."""

    website_id: uuid.UUID
    secret: str


class AgentRemoved(Event, frozen=True):
    website_id: uuid.UUID


class AgentActionOffered(Event, frozen=True):
    """The agent offered one of the visitor's actions (an AG-UI tool call) in a run."""

    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    agent_run_id: uuid.UUID
    tool_call_id: str
    name: str
    arguments: str  # JSON text, as the agent streamed it


class AgentActionResult(Event, frozen=True):
    """The visitor ran an offered action; the result goes to the agent in a follow-up run."""

    conversation_id: uuid.UUID
    website_id: uuid.UUID
    tool_call_id: str
    content: str


class AgentRunEnded(Event, frozen=True):
    """One agent run's outcome. `outcome` is succeeded or failed; a failure's `error_class` is one of
    unreachable, refused, timed_out, protocol_error, run_error (and `error` says more)."""

    agent_run_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    reply_to: uuid.UUID | None
    outcome: str
    error_class: str | None = None
    error: str | None = None


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


class Audience(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True,
               rename="camel"):
    """Which of a website's customers a campaign goes to: every filter given must hold; none given means
    every customer of the website. What each filter means is `projections.views.campaigns.audience_clauses`."""

    language: tuple[str, ...] | None = None
    email_domain: tuple[str, ...] | None = None
    identified: bool | None = None
    seen_within_days: int | None = None
    has_conversation: bool | None = None


class CampaignContent(Event, frozen=True):
    """A draft's whole content: creates and edits carry it all, so a consumer never loads."""

    campaign_id: uuid.UUID
    website_id: uuid.UUID
    name: str
    content: str
    audience: Audience


class CampaignCreated(CampaignContent, frozen=True):
    pass


class CampaignUpdated(CampaignContent, frozen=True):
    pass


class CampaignDeleted(Event, frozen=True):
    campaign_id: uuid.UUID
    website_id: uuid.UUID


class CampaignScheduled(Event, frozen=True):
    campaign_id: uuid.UUID
    scheduled_at: datetime


class CampaignStarted(Event, frozen=True):
    """The send began (now, or at its scheduled time); the sender resolves the audience next."""

    campaign_id: uuid.UUID


class CampaignRecipients(Event, frozen=True):
    """One part of the audience, resolved once when the send starts: the recipients in the order they are
    sent to. All parts are appended together; a part is kept small enough for one stream message."""

    campaign_id: uuid.UUID
    part: int
    total: int  # recipients in all parts
    customer_ids: tuple[uuid.UUID, ...]


class CampaignBatchSent(Event, frozen=True):
    """Recipients `first` .. `first + count - 1` got the campaign, appended with their conversations and
    messages in one transaction at the campaign's next version: a batch is recorded once or not at all."""

    campaign_id: uuid.UUID
    first: int
    count: int


class CampaignCompleted(Event, frozen=True):
    campaign_id: uuid.UUID
    sent: int


class CampaignCancelled(Event, frozen=True):
    campaign_id: uuid.UUID


EVENT_TYPES: tuple[type[Event], ...] = (
    OrganizationCreated,
    NameReserved,
    WebsiteCreated,
    WebsiteUpdated,
    WebsiteIdentitySecretRotated,
    OperatorCreated,
    OperatorTokenIssued,
    OperatorTokenRevoked,
    OperatorOrgAdded,
    OperatorOrgRemoved,
    OperatorSessionsRevoked,
    ApiKeyCreated,
    ApiKeyRevoked,
    CustomerCreated,
    CustomerUpdated,
    ConversationCreated,
    ConversationUpdated,
    ConversationMetadataSet,
    MessageCreated,
    MessageRead,
    ChatSessionStarted,
    CustomerMetadataSet,
    MetadataPending,
    MetadataPendingTaken,
    ChatContextSet,
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
    CampaignCreated,
    CampaignUpdated,
    CampaignDeleted,
    CampaignScheduled,
    CampaignStarted,
    CampaignRecipients,
    CampaignBatchSent,
    CampaignCompleted,
    CampaignCancelled,
    AgentConfigured,
    AgentSecretSet,
    AgentRemoved,
    AgentActionOffered,
    AgentActionResult,
    AgentRunEnded,
)
