"""The facts Parley records. Every change in the system is one of these, appended to the event store.

Each event is a msgspec Struct tagged with its type name; the tag is also the stored topic. Every event
names the organization it belongs to, so consumers can scope it without loading anything.

What of an event may leave the system (the events API, the exports, the audit trail, time-travel reads)
is declared on its type with `@public(...)`: the allow-list of its fields that may be shown.
`events/public.py` derives each type's public shape from it; a type without one never leaves.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Callable, TypeVar

import msgspec


class Origin(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who appended an event and from where, for the audit log: the staff credential of the request
    (`operator`, `apikey`, `mcp` for an MCP client acting for operator `id`, `cli` for the CLI's login token
    or `parley admin`, where `id` is None), by the credential's owner `id` and the client's `address`.
    The store stamps it (events/origin.py); never public."""

    kind: str
    id: uuid.UUID | None = None
    credential_id: uuid.UUID | None = None
    address: str | None = None


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag=lambda name: name):
    org_id: uuid.UUID
    at: datetime
    # Unset (and so not encoded at all) for what no staff credential appended: a visitor, a worker, the
    # events recorded before origins were kept.
    origin: Origin | msgspec.UnsetType = msgspec.UNSET


PUBLIC: dict[type[Event], tuple[str, ...]] = {}

EventClass = TypeVar("EventClass", bound=type[Event])


def public(*fields: str) -> Callable[[EventClass], EventClass]:
    """Names the fields of an event type that may leave the system, by attribute name: never a secret, a
    hash, a token, a URL that works as a credential. Not inherited: a subclass is private until it says so.
    A name that is not a field of the type fails the import."""
    def declare(event_type: EventClass) -> EventClass:
        unknown = [name for name in fields if name not in event_type.__struct_fields__]
        if unknown:
            raise TypeError(f"@public on {event_type.__name__} names {', '.join(unknown)}: not a field of it")
        if len(set(fields)) != len(fields):
            raise TypeError(f"@public on {event_type.__name__} names a field twice")
        PUBLIC[event_type] = fields
        return event_type
    return declare


@public("name")
class OrganizationCreated(Event, frozen=True):
    name: str


# Not public, on purpose: the store's bookkeeping for unique names (website vanity ids, e-mail addresses,
# visitors' bindings), and what it names is in the events it guards.
class NameReserved(Event, frozen=True):
    """Claims a unique name (a website vanity id, an operator e-mail); its stream id is derived from
    the name, so a second claim conflicts in the store."""

    kind: str
    value: str
    owner_id: uuid.UUID


@public("website_id", "name", "brand_color")  # never the identity secret
class WebsiteCreated(Event, frozen=True):
    website_id: uuid.UUID
    name: str
    brand_color: str | None
    identity_secret: str  # sealed (events/sealing.py); in the clear when written before sealing


@public("website_id", "brand_color", "allowed_origins")
class WebsiteUpdated(Event, frozen=True):
    """A website's settings as they are after a change, all of them, so a consumer never loads (an empty
    list of allowed origins allows every origin)."""

    website_id: uuid.UUID
    brand_color: str | None
    allowed_origins: list[str]


@public("website_id", "brand_color", "title", "welcome_message", "away_message", "position", "launcher_label",
        "help_search", "ratings", "theme", "language")
class WebsiteWidgetConfigured(Event, frozen=True):
    """How the website's widget and mascot look and speak, all of it as it is after a change (the brand color
    is the website's own, which `WebsiteUpdated` may change too)."""

    website_id: uuid.UUID
    brand_color: str
    # the texts: None shows the widget's own words in the visitor's language (web/core/i18n.js)
    title: str | None
    welcome_message: str | None
    away_message: str | None
    position: str  # left or right
    launcher_label: str | None  # None: the launcher is its icon alone
    help_search: bool
    ratings: bool
    theme: str  # light, dark or auto (the visitor's system)
    language: str  # the default of the catalogues in web/core/i18n/


@public("website_id")  # that it happened, never the secret
class WebsiteIdentitySecretRotated(Event, frozen=True):
    """The website's identity secret was replaced: signatures made with the former one stop verifying."""

    website_id: uuid.UUID
    identity_secret: str  # sealed (events/sealing.py); in the clear when written before sealing


@public("website_id", "mode", "capacity", "team_id", "assign_on_reply")
class WebsiteAssignmentConfigured(Event, frozen=True):
    """How the website's new conversations get an assignee: `mode` `off`, `round-robin` or `least-busy` among
    the online operators (of `team_id`, when set) with fewer than `capacity` open conversations assigned; and
    whether an operator's reply to an unassigned conversation makes it theirs (`assign_on_reply`)."""

    website_id: uuid.UUID
    mode: str
    capacity: int
    team_id: uuid.UUID | None = None
    assign_on_reply: bool = False


@public("operator_id", "email", "role", "display_name")  # never the password hash
class OperatorCreated(Event, frozen=True):
    """The operator, a member of `org_id` with `role` (events recorded before roles existed read as owners:
    every operator could do everything then)."""

    operator_id: uuid.UUID
    email: str
    password_hash: str
    role: str = "owner"  # owner, admin or agent (commands/principal.py `Role`)
    display_name: str | None = None


@public("token_id", "operator_id")  # never the token's hash
class OperatorTokenIssued(Event, frozen=True):
    token_id: uuid.UUID
    operator_id: uuid.UUID
    token_hash: str
    expires_at: datetime | None = None  # a `parley login` token's end; the others live until revoked
    user_agent: str | None = None  # the signing-in client's User-Agent, to tell sessions apart (never public)


@public("token_id")
class OperatorTokenRevoked(Event, frozen=True):
    token_id: uuid.UUID


@public("operator_id", "role")  # the organization joined is the event's own org_id
class OperatorOrgAdded(Event, frozen=True):
    """The operator also belongs to `org_id` (beside the organization it was created in), with `role`."""

    operator_id: uuid.UUID
    role: str = "owner"


@public("operator_id")
class OperatorOrgRemoved(Event, frozen=True):
    """The operator no longer belongs to `org_id`: its sessions there end; what it did stays."""

    operator_id: uuid.UUID


@public("operator_id")
class OperatorSessionsRevoked(Event, frozen=True):
    """Every session of the operator issued before `at` ends: its access tokens and its MCP connections."""

    operator_id: uuid.UUID


@public("operator_id", "role")
class OperatorRoleChanged(Event, frozen=True):
    """The operator's role in `org_id` is now `role`."""

    operator_id: uuid.UUID
    role: str


@public("operator_id")
class OperatorDisabled(Event, frozen=True):
    """The operator's membership of `org_id` is suspended: its sessions there end and it cannot sign in to
    it; what it did stays."""

    operator_id: uuid.UUID


@public("operator_id")
class OperatorEnabled(Event, frozen=True):
    """A disabled membership of `org_id` is active again (the operator signs in anew)."""

    operator_id: uuid.UUID


@public("operator_id", "display_name")
class OperatorProfileChanged(Event, frozen=True):
    """The name the operator is shown by to visitors and to the team (never the e-mail address)."""

    operator_id: uuid.UUID
    display_name: str | None


@public("operator_id", "status")
class OperatorAvailabilityChanged(Event, frozen=True):
    """The availability the operator chose in `org_id`: `online`, `away` or `offline`. An operator who chose
    `online` reads as away once inactive for a while (projections/views/availability.py): that is not an event."""

    operator_id: uuid.UUID
    status: str


@public("key_id", "scopes", "website_id", "rate_per_minute", "name")  # never the secret's hash
class ApiKeyCreated(Event, frozen=True):
    key_id: uuid.UUID
    secret_hash: str
    scopes: list[str]
    website_id: uuid.UUID | None = None
    rate_per_minute: int | None = None
    name: str | None = None  # what the key is for, as the dashboard lists it


@public("key_id")
class ApiKeyRevoked(Event, frozen=True):
    key_id: uuid.UUID


@public("customer_id", "website_id", "email", "nickname", "phone", "language", "user_id")
class CustomerCreated(Event, frozen=True):
    customer_id: uuid.UUID
    website_id: uuid.UUID
    email: str | None = None
    nickname: str | None = None
    phone: str | None = None
    language: str | None = None
    user_id: str | None = None


@public("customer_id", "changes")
class CustomerUpdated(Event, frozen=True):
    customer_id: uuid.UUID
    changes: dict[str, str | None]


class Actor(msgspec.Struct, frozen=True):
    """Who made a change, for the audit trail: a visitor (`customer`), an `operator` or an `apikey`, by id;
    or a `campaign` (by its id) for the conversations a campaign opens."""

    kind: str
    id: uuid.UUID


@public("conversation_id", "website_id", "customer_id", "operator_only", "actor", "metadata")
class ConversationCreated(Event, frozen=True):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool = False
    actor: Actor | None = None  # None in events recorded before it was
    metadata: dict[str, str] = {}  # what the visitor's page set (`setMetadata`) before it existed


@public("conversation_id", "values")
class ConversationMetadataSet(Event, frozen=True):
    """Extra attributes the visitor's page attached to the conversation (`setMetadata`); a null value
    removes the key."""

    conversation_id: uuid.UUID
    values: dict[str, str | None]


@public("conversation_id", "resolved", "spam", "actor", "agent_paused", "agent_pause_reason", "handoff")
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


class AttachmentRef(msgspec.Struct, frozen=True):
    """A file as a message carries it: what any reader of the message may know of it (never where it is
    stored, which only its upload's event says)."""

    attachment_id: uuid.UUID
    name: str
    content_type: str
    size: int
    image: bool  # an image, with a thumbnail


@public("message_id", "conversation_id", "website_id", "content", "sender", "reply_to", "internal", "operator_id",
        "campaign_id", "author", "incomplete", "agent_run_id", "attachments")
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
    attachments: tuple[AttachmentRef, ...] = ()  # files uploaded before (AttachmentUploaded), in order


@public("attachment_id", "name", "content_type", "size", "website_id", "customer_id", "operator_id")
class AttachmentUploaded(Event, frozen=True):
    """A file stored for a message to come: its bytes (an image's re-encoded, without metadata) under
    `blob`, an image's thumbnail under `thumbnail`, both keys of the attachment store. Uploaded by a
    visitor (`customer_id`, `website_id`) or by the team (`operator_id`, None for an API key)."""

    attachment_id: uuid.UUID
    name: str
    content_type: str
    size: int
    blob: str
    thumbnail: str | None = None
    website_id: uuid.UUID | None = None
    customer_id: uuid.UUID | None = None
    operator_id: uuid.UUID | None = None


@public("attachment_id", "reason")
class AttachmentRemoved(Event, frozen=True):
    """The file's bytes were deleted: `abandoned` (never attached within a day of its upload)."""

    attachment_id: uuid.UUID
    reason: str


@public("message_id", "conversation_id", "actor")
class MessageRead(Event, frozen=True):
    message_id: uuid.UUID
    conversation_id: uuid.UUID
    actor: Actor | None = None


@public("session_id", "website_id", "customer_id")  # never the session token's hash
class ChatSessionStarted(Event, frozen=True):
    """A visitor's chat-session credential, bound to one customer of one website."""

    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    token_hash: str


@public("session_id", "customer_id")
class ChatSessionEnded(Event, frozen=True):
    """The visitor signed out on their browser (`["reset"]`): the session's token stops working at once."""

    session_id: uuid.UUID
    customer_id: uuid.UUID


@public("customer_id", "values")
class CustomerMetadataSet(Event, frozen=True):
    """Recorded by earlier versions, when `setMetadata` stored on the customer; no longer written (metadata
    belongs to the conversation now) and read by nothing, but stores hold it, so it stays decodable."""

    customer_id: uuid.UUID
    values: dict[str, str | None]


@public("customer_id", "values")
class MetadataPending(Event, frozen=True):
    """`setMetadata` while the visitor has no open conversation: held on the customer's stream for the
    next conversation the visitor starts (a null value removes a held key)."""

    customer_id: uuid.UUID
    values: dict[str, str | None]


@public("customer_id", "conversation_id")
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


@public("context_id", "session_id", "website_id", "customer_id", "readables", "actions")
class ChatContextSet(Event, frozen=True):
    """The page context a visitor's widget exposes to the AI agent, whole: it replaces the session's
    earlier set. Each set is a stream of its own, so setting one never reads the older ones."""

    context_id: uuid.UUID
    session_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    readables: tuple[Readable, ...]
    actions: tuple[Action, ...]


@public("message_id", "conversation_id", "rating", "sender", "operator_id")
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


@public("message_id", "conversation_id", "sender", "person_id", "emoji", "reactions")
class MessageReactionsChanged(Event, frozen=True):
    """One person set or cleared their reaction; `reactions` is the message's whole list afterwards."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    sender: str
    person_id: uuid.UUID
    emoji: str | None
    reactions: tuple[Reaction, ...]


@public("message_id", "conversation_id", "website_id", "internal", "previous_content", "edited_content",
        "operator_id")
class MessageEdited(Event, frozen=True):
    """An operator changed a message's text: the original stays here, for the history and the audit log."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID  # the message's, like `internal`: so webhooks know whom, and whether, to tell
    internal: bool
    previous_content: str
    edited_content: str
    operator_id: uuid.UUID | None = None  # who edited it; None for the visitor


@public("message_id", "conversation_id", "website_id", "internal", "previous_content", "sender", "operator_id")
class MessageDeleted(Event, frozen=True):
    """A message was taken back: readers see `deleted` and no text; the text it had stays here."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    internal: bool
    previous_content: str
    sender: str  # who deleted it: "operator" or "customer" (the visitor, their own last unread message)
    operator_id: uuid.UUID | None = None


# The keyless sandbox belongs to no customer: its events carry this fixed, well-known organization id,
# which no `parley admin org create` can ever return (real ids are UUIDv7).
SANDBOX_ORG_ID = uuid.UUID("00000000-0000-0000-0000-5a4db0c50000")


@public("job_id")
class SandboxJobCreated(Event, frozen=True):
    """A sandbox document-summary job; it succeeds by itself a fixed time after `at`."""

    job_id: uuid.UUID


# Webhook subscriptions: never the signing secret, and not the URL either: an endpoint's URL often is a
# credential itself (a path or query token that lets anyone post to it).
@public("subscription_id", "website_id", "events", "known_events")
class WebhookSubscribed(Event, frozen=True):
    subscription_id: uuid.UUID
    website_id: uuid.UUID
    url: str
    events: list[str]  # empty: every event of `known_events`; "*": every event, now and later
    secret: str  # sealed (events/sealing.py), opened to sign each delivery; in the clear when written before sealing
    # With `events` empty, the events there were when it was made (docs/decisions.md); None in a subscription
    # recorded before new kinds came: the first three (commands.webhooks.FIRST_EVENT_NAMES).
    known_events: list[str] | None = None


@public("subscription_id", "events", "known_events")
class WebhookUpdated(Event, frozen=True):
    """Only the fields given change."""

    subscription_id: uuid.UUID
    url: str | None = None
    events: list[str] | None = None
    known_events: list[str] | None = None  # with `events` set empty: as on `WebhookSubscribed`


@public("subscription_id", "reason")
class WebhookDisabled(Event, frozen=True):
    subscription_id: uuid.UUID
    reason: str


@public("subscription_id")
class WebhookEnabled(Event, frozen=True):
    subscription_id: uuid.UUID


@public("subscription_id")
class WebhookDeleted(Event, frozen=True):
    subscription_id: uuid.UUID


# Never the URL: it may carry a token of the agent's own.
@public("website_id", "enabled", "greeting", "fallback_message")
class AgentConfigured(Event, frozen=True):
    """A website's AG-UI agent: set or changed (the whole configuration, so a consumer never loads)."""

    website_id: uuid.UUID
    url: str
    enabled: bool
    greeting: str | None
    fallback_message: str | None


@public("website_id")  # that it happened, never the secret
class AgentSecretSet(Event, frozen=True):
    """The bearer secret sent to the agent on each call: made when the agent is first configured, and on
    each rotation. Sealed (events/sealing.py), opened for each call; in the clear when written before sealing."""

    website_id: uuid.UUID
    secret: str


@public("website_id")
class AgentRemoved(Event, frozen=True):
    website_id: uuid.UUID


@public("conversation_id", "website_id", "customer_id", "agent_run_id", "tool_call_id", "name", "arguments")
class AgentActionOffered(Event, frozen=True):
    """The agent offered one of the visitor's actions (an AG-UI tool call) in a run."""

    conversation_id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    agent_run_id: uuid.UUID
    tool_call_id: str
    name: str
    arguments: str  # JSON text, as the agent streamed it


@public("conversation_id", "website_id", "tool_call_id", "content")
class AgentActionResult(Event, frozen=True):
    """The visitor ran an offered action; the result goes to the agent in a follow-up run."""

    conversation_id: uuid.UUID
    website_id: uuid.UUID
    tool_call_id: str
    content: str


@public("agent_run_id", "conversation_id", "website_id", "reply_to", "outcome", "error_class", "error")
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


@public("document_id", "website_id", "title", "locale", "category", "published", "content", "source")
class DocumentCreated(DocumentState, frozen=True):
    source: str | None = None  # the imported file's path, which re-imports find it by


@public("document_id", "website_id", "title", "locale", "category", "published", "content")
class DocumentUpdated(DocumentState, frozen=True):
    pass


@public("document_id", "website_id")
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


@public("campaign_id", "website_id", "name", "content", "audience")
class CampaignCreated(CampaignContent, frozen=True):
    pass


@public("campaign_id", "website_id", "name", "content", "audience")
class CampaignUpdated(CampaignContent, frozen=True):
    pass


@public("campaign_id", "website_id")
class CampaignDeleted(Event, frozen=True):
    campaign_id: uuid.UUID
    website_id: uuid.UUID


@public("campaign_id", "scheduled_at")
class CampaignScheduled(Event, frozen=True):
    campaign_id: uuid.UUID
    scheduled_at: datetime


@public("campaign_id")
class CampaignStarted(Event, frozen=True):
    """The send began (now, or at its scheduled time); the sender resolves the audience next."""

    campaign_id: uuid.UUID


@public("campaign_id", "part", "total", "customer_ids")  # customer ids only, as conversation events show them
class CampaignRecipients(Event, frozen=True):
    """One part of the audience, resolved once when the send starts: the recipients in the order they are
    sent to. All parts are appended together; a part is kept small enough for one stream message."""

    campaign_id: uuid.UUID
    part: int
    total: int  # recipients in all parts
    customer_ids: tuple[uuid.UUID, ...]


@public("campaign_id", "first", "count")
class CampaignBatchSent(Event, frozen=True):
    """Recipients `first` .. `first + count - 1` got the campaign, appended with their conversations and
    messages in one transaction at the campaign's next version: a batch is recorded once or not at all."""

    campaign_id: uuid.UUID
    first: int
    count: int


@public("campaign_id", "sent")
class CampaignCompleted(Event, frozen=True):
    campaign_id: uuid.UUID
    sent: int


@public("campaign_id")
class CampaignCancelled(Event, frozen=True):
    campaign_id: uuid.UUID


@public("issuer", "client_id", "allowed_domains", "default_role", "button_label", "enabled")  # never the client secret
class SsoConfigured(Event, frozen=True):
    """The organization's single sign-on with an OpenID Connect provider, as a whole (the client secret kept
    from the previous settings when a change does not give one). Sealed (events/sealing.py), like the agent's
    secret, and opened for the token exchange of each sign-in; in the clear when written before sealing."""

    issuer: str
    client_id: str
    client_secret: str
    allowed_domains: list[str]  # e-mail domains whose verified addresses may sign in, lower case
    default_role: str  # the role of an operator the sign-in creates or adds to the organization
    button_label: str  # "Sign in with <button_label>"
    enabled: bool
# Invitations and password resets: single-use links whose token is kept only as a hash, in the private
# `NameReserved` that maps it to its stream; the events themselves hold no token.
@public("invitation_id", "email", "role", "expires_at", "invited_by")
class OperatorInvited(Event, frozen=True):
    """An admin or owner of `org_id` invited `email` to join it with `role`, until `expires_at`."""

    invitation_id: uuid.UUID
    email: str
    role: str
    expires_at: datetime
    invited_by: uuid.UUID


@public("invitation_id", "operator_id")
class InvitationAccepted(Event, frozen=True):
    """The invitee set a password (or gave its own, already an operator elsewhere) and joined as `operator_id`."""

    invitation_id: uuid.UUID
    operator_id: uuid.UUID


@public("invitation_id")
class InvitationRevoked(Event, frozen=True):
    invitation_id: uuid.UUID


@public("operator_id")  # never the hash
class OperatorPasswordChanged(Event, frozen=True):
    """The operator's password is now the one `password_hash` checks; every session of the operator issued
    before `at` ends but `kept_token_id` (the one that changed it, if any)."""

    operator_id: uuid.UUID
    password_hash: str
    kept_token_id: uuid.UUID | None = None


@public("reset_id", "operator_id", "expires_at")
class PasswordResetIssued(Event, frozen=True):
    """A link that sets the operator's password once, until `expires_at`; `issued_by` the admin who made it."""

    reset_id: uuid.UUID
    operator_id: uuid.UUID
    expires_at: datetime
    issued_by: uuid.UUID | None = None


@public("reset_id", "operator_id")
class PasswordResetUsed(Event, frozen=True):
    reset_id: uuid.UUID
    operator_id: uuid.UUID


@public("operator_id", "media_type", "digest")  # the image itself leaves only by GET /api/operators/{id}/avatar
class OperatorAvatarSet(Event, frozen=True):
    """The operator's avatar, shown to visitors and to the team: an image the service re-encoded (square,
    resized, without metadata) from the one uploaded, kept in the event so a rebuilt read model has it."""

    operator_id: uuid.UUID
    media_type: str
    digest: str  # "sha256:<hex>" of `image`: names the avatar's version in its URL
    image: bytes


@public("operator_id")
class OperatorAvatarRemoved(Event, frozen=True):
    """The operator is shown by generated initials again."""

    operator_id: uuid.UUID
# Two-factor sign-in (TOTP, RFC 6238). The secret and the recovery codes' hashes never leave: they are
# left out of each allow-list, so of the events API, the exports and MCP they show only that it happened.
@public("operator_id")  # never the secret
class OperatorTotpEnrolled(Event, frozen=True):
    """An enrolment started: `totp_secret` is the shared secret the operator's authenticator app was given;
    it counts only once a code computed from it confirms it (`OperatorTotpConfirmed`)."""

    operator_id: uuid.UUID
    totp_secret: str


@public("operator_id")  # never the recovery codes' hashes
class OperatorTotpConfirmed(Event, frozen=True):
    """Sign-in now asks the operator for a code of the enrolled secret, or one of these recovery codes
    (argon2 hashes, in the order they were shown), each usable once."""

    operator_id: uuid.UUID
    recovery_code_hashes: list[str]


@public("operator_id")
class OperatorTotpRemoved(Event, frozen=True):
    operator_id: uuid.UUID


@public("operator_id")
class RecoveryCodeUsed(Event, frozen=True):
    """The recovery code at `index` of the latest confirmation signed the operator in: it works no more."""

    operator_id: uuid.UUID
    index: int


@public("operator_id")
class OperatorTotpCodeUsed(Event, frozen=True):
    """A code of time step `step` (RFC 6238's T) signed the operator in: no code of it or of an earlier step
    passes again."""

    operator_id: uuid.UUID
    step: int


@public("require_two_factor")
class OrganizationSecurityChanged(Event, frozen=True):
    """Whether every operator signing in to `org_id` needs two-factor sign-in (those without are sent to
    enrol it)."""

    require_two_factor: bool


# Canned responses: the organization's (`personal` false) or one operator's own. All of an organization's are
# one stream, so a shortcut is unique in its namespace (the organization's, or each author's) by the store's
# version check. Never the content: a personal response is its author's only, and the history leaves the
# organization's credentials (an API key's events, exports); the read model holds it.
@public("response_id", "author_id", "personal", "shortcut")
class CannedResponseCreated(Event, frozen=True):
    response_id: uuid.UUID
    author_id: uuid.UUID
    personal: bool
    shortcut: str
    content: str


@public("response_id", "personal", "shortcut")
class CannedResponseUpdated(Event, frozen=True):
    """Only the fields given change."""

    response_id: uuid.UUID
    personal: bool | None = None
    shortcut: str | None = None
    content: str | None = None


@public("response_id")
class CannedResponseDeleted(Event, frozen=True):
    response_id: uuid.UUID
# Notifications (the operators' notification centre) and business hours.
NOTIFICATION_KINDS = ("conversation.new", "message.new", "mention", "assignment", "handoff", "webhook.disabled")
NOTIFICATION_CHANNELS = ("dashboard", "desktop", "email")


@public("operator_id", "notification_ids", "all")
class NotificationsRead(Event, frozen=True):
    """The operator read these notifications (`all`: every notification of theirs in `org_id` made before this
    event). Each mark is a stream of its own: it decides nothing, so it never conflicts."""

    operator_id: uuid.UUID
    notification_ids: list[uuid.UUID] = []
    all: bool = False


class ChannelChoice(msgspec.Struct, frozen=True):
    dashboard: bool
    desktop: bool
    email: bool


@public("operator_id", "preferences")
class NotificationPreferencesSet(Event, frozen=True):
    """Which channels the operator wants for each kind of notification in `org_id`, all of them."""

    operator_id: uuid.UUID
    preferences: dict[str, ChannelChoice]


@public("website_id", "timezone", "weekly", "holidays", "away_message")
class BusinessHoursSet(Event, frozen=True):
    """A website's business hours, whole: an IANA time zone, per weekday ("mon".."sun") the opening ranges
    as [["09:00", "17:00"]] in that zone (an end at or before its start runs past midnight), whole-day
    holidays ("2026-12-25") and the away message posted once in a conversation whose visitor writes while
    the website is closed (none: no away reply)."""

    website_id: uuid.UUID
    timezone: str
    weekly: dict[str, list[list[str]]]  # each range [start, end]
    holidays: list[str]
    away_message: str | None = None


# The team's workflow on a conversation: who owns it, its labels, priority and snooze, on the conversation's
# own stream (so its version is the conversation's ETag), and the organization's teams and labels, each
# organization's on one stream of their own (`commands.deciders.teams` / `labels`), so a label's name is
# unique per organization by the stream's version alone.
PRIORITIES = ("none", "low", "medium", "high", "urgent")


@public("conversation_id", "assignee_id", "team_id", "actor")
class ConversationAssigned(Event, frozen=True):
    """The conversation's assignment as it is after the change: its assignee (an operator) and its team,
    either or both null (both null: unassigned). `actor` None: the service assigned it (automatic assignment)."""

    conversation_id: uuid.UUID
    assignee_id: uuid.UUID | None
    team_id: uuid.UUID | None
    actor: Actor | None = None


@public("conversation_id", "added", "removed", "actor")
class ConversationLabelsChanged(Event, frozen=True):
    """Labels (by id) put on and taken off the conversation."""

    conversation_id: uuid.UUID
    added: list[uuid.UUID]
    removed: list[uuid.UUID]
    actor: Actor | None = None


@public("conversation_id", "priority", "actor")
class ConversationPrioritySet(Event, frozen=True):
    conversation_id: uuid.UUID
    priority: str  # one of PRIORITIES
    actor: Actor | None = None


@public("conversation_id", "until", "actor")
class ConversationSnoozed(Event, frozen=True):
    """The conversation leaves the open views until `until`, or until the visitor writes (`until` None);
    a visitor's message wakes it earlier either way."""

    conversation_id: uuid.UUID
    until: datetime | None
    actor: Actor | None = None


@public("conversation_id", "reason", "actor")
class ConversationWoken(Event, frozen=True):
    """A snoozed conversation is back in the open views: `reason` is `time` (its snooze ran out: the
    service's scheduled wake, recorded once) or `operator` (an operator woke it)."""

    conversation_id: uuid.UUID
    reason: str
    actor: Actor | None = None


@public("conversation_id", "operator_id", "message_id", "up_to")
class ConversationReadByOperator(Event, frozen=True):
    """The operator has read the conversation up to the message `message_id`, written at `up_to`: a message
    written after it is unread for this operator. On a stream per (operator, conversation)."""

    conversation_id: uuid.UUID
    operator_id: uuid.UUID
    message_id: uuid.UUID
    up_to: datetime


@public("team_id", "name", "member_ids")
class TeamCreated(Event, frozen=True):
    team_id: uuid.UUID
    name: str
    member_ids: list[uuid.UUID]


@public("team_id", "name")
class TeamRenamed(Event, frozen=True):
    team_id: uuid.UUID
    name: str


@public("team_id", "member_ids")
class TeamMembersSet(Event, frozen=True):
    """The team's members (operators) after the change, all of them."""

    team_id: uuid.UUID
    member_ids: list[uuid.UUID]


@public("team_id")
class TeamDeleted(Event, frozen=True):
    """The team is gone; conversations assigned to it keep their assignee and lose the team."""

    team_id: uuid.UUID


@public("label_id", "name", "color")
class LabelCreated(Event, frozen=True):
    label_id: uuid.UUID
    name: str
    color: str  # "#1a2b3c"


@public("label_id", "name", "color")
class LabelChanged(Event, frozen=True):
    """The label's name and colour after the change, both."""

    label_id: uuid.UUID
    name: str
    color: str


@public("label_id")
class LabelDeleted(Event, frozen=True):
    """The label is gone, and off every conversation that had it."""

    label_id: uuid.UUID
# E-mail (docs/mail.md). A link's mail carries the link's URL, a credential: sealed (events/sealing.py), and
# never public.
@public("link_id", "kind")
class LinkMailRequested(Event, frozen=True):
    """An invitation's or a password reset's link (`kind`: `invitation` or `password-reset`) is to be sent to
    `email`; `url` (sealed) is the link itself."""

    link_id: uuid.UUID
    kind: str
    email: str
    url: str


@public("recipient", "kind")
class MailUnsubscribed(Event, frozen=True):
    """The recipient followed an e-mail's unsubscribe link: `recipient` is `operator:<id>` (no more e-mail of
    `kind`: `mention`, `assignment`, `conversation.new`) or `customer:<id>` (`kind` `reply`: no more of the
    team's replies by e-mail)."""

    recipient: str
    kind: str


EVENT_TYPES: tuple[type[Event], ...] = (
    OrganizationCreated,
    NameReserved,
    WebsiteCreated,
    WebsiteUpdated,
    WebsiteIdentitySecretRotated,
    WebsiteAssignmentConfigured,
    OperatorCreated,
    OperatorTokenIssued,
    OperatorTokenRevoked,
    OperatorOrgAdded,
    OperatorOrgRemoved,
    OperatorSessionsRevoked,
    OperatorRoleChanged,
    OperatorDisabled,
    OperatorEnabled,
    OperatorProfileChanged,
    OperatorAvailabilityChanged,
    ApiKeyCreated,
    ApiKeyRevoked,
    CustomerCreated,
    CustomerUpdated,
    ConversationCreated,
    ConversationUpdated,
    ConversationMetadataSet,
    MessageCreated,
    MessageRead,
    AttachmentUploaded,
    AttachmentRemoved,
    ChatSessionStarted,
    CustomerMetadataSet,
    MetadataPending,
    MetadataPendingTaken,
    ChatContextSet,
    MessageRated,
    MessageReactionsChanged,
    MessageEdited,
    MessageDeleted,
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
    SsoConfigured,
    OperatorInvited,
    InvitationAccepted,
    InvitationRevoked,
    OperatorPasswordChanged,
    PasswordResetIssued,
    PasswordResetUsed,
    OperatorAvatarSet,
    OperatorAvatarRemoved,
    OperatorTotpEnrolled,
    OperatorTotpConfirmed,
    OperatorTotpRemoved,
    RecoveryCodeUsed,
    OperatorTotpCodeUsed,
    OrganizationSecurityChanged,
    CannedResponseCreated,
    CannedResponseUpdated,
    CannedResponseDeleted,
    NotificationsRead,
    NotificationPreferencesSet,
    BusinessHoursSet,
    WebsiteWidgetConfigured,
    ChatSessionEnded,
    ConversationAssigned,
    ConversationLabelsChanged,
    ConversationPrioritySet,
    ConversationSnoozed,
    ConversationWoken,
    ConversationReadByOperator,
    TeamCreated,
    TeamRenamed,
    TeamMembersSet,
    TeamDeleted,
    LabelCreated,
    LabelChanged,
    LabelDeleted,
    LinkMailRequested,
    MailUnsubscribed,
)

