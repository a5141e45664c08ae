"""The shapes the API returns and the one generic way lists are read: filters, sort, limit, skip, fields.

Each resource is a msgspec Struct whose fields follow the SELECT column order of its collection, so
a row becomes a response object without a hand-written mapping."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Literal, Mapping

import msgspec
import psycopg

from commands.errors import Invalid, NotFound
from commands.feedback import Rating
from commands.principal import Principal
from commands.webhooks import EventName
from events import types as ev
from events.ids import parse_id
from commands.apikeys import RatePerMinute
from commands.principal import Role, Scope
from commands.websites import BrandColor
from projections.richtext import render_markdown
from projections.views.availability import EFFECTIVE, Availability
from projections.views.attachments import AttachmentView, attachment_views, stored_views
from projections.views.identities import OperatorIdentity, identity_of_row, profile_column
from projections.workflow import ASLEEP


class Website(msgspec.Struct, rename={"id": "_id", "website_name": "websiteName", "brand_color": "brandColor",
                                      "created_at": "createdAt", "allowed_origins": "allowedOrigins"}):
    id: uuid.UUID
    website_name: str
    brand_color: BrandColor | None
    created_at: datetime
    allowed_origins: list[str]  # empty: visitors' pages may call from any origin


class WebsiteWithSecret(Website, rename={"identity_secret": "identitySecret"}):
    """Only the answers to creating a website and rotating its identity secret carry the secret."""

    identity_secret: str


class Customer(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "user_id": "userId",
                                       "created_at": "createdAt", "updated_at": "updatedAt",
                                       "unverified_email": "unverifiedEmail"}):
    id: uuid.UUID
    website_id: uuid.UUID
    email: str | None
    nickname: str | None
    phone: str | None
    language: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime
    # An address the visitor typed in the widget, never checked: shown as unverified, never `email`, never an
    # identity (it finds, merges and signs in nobody)
    unverified_email: str | None = None


Priority = Literal["none", "low", "medium", "high", "urgent"]


class Conversation(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "customer_id": "customerId",
                                           "created_at": "createdAt", "last_edit_time": "lastEditTime",
                                           "operator_only": "operatorOnly", "agent_paused": "agentPaused",
                                           "assignee_id": "assigneeId", "team_id": "teamId",
                                           "snoozed_until": "snoozedUntil"}):
    id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    created_at: datetime
    last_edit_time: datetime
    resolved: bool
    spam: bool
    operator_only: bool
    agent_paused: bool  # the website's AI agent does not answer here (an operator replied or paused it)
    assignee_id: uuid.UUID | None  # the operator who owns it
    team_id: uuid.UUID | None
    labels: list[str]  # the labels' names, in alphabetical order
    priority: Priority
    snoozed: bool  # out of the open views until `snoozedUntil`, or (null) until the visitor writes
    snoozed_until: datetime | None

    def __post_init__(self) -> None:
        # sorted here rather than by the query: a sort in each row's label subquery would sit in the plan of
        # every conversation list that is otherwise read in index order
        self.labels.sort(key=str.casefold)


def workflow_columns(table: str) -> str:
    """The SELECT of the workflow fields of a conversation table (`rm_conversations`, `rm_inbox`), in the
    shape's order: label ids as their current names; `snoozed` is whether it is asleep now."""
    return (f"{table}.assignee_id, {table}.team_id, "
            f"ARRAY(SELECT l.name FROM rm_labels l WHERE l.id = ANY({table}.labels)), {table}.priority, {ASLEEP.replace('snoozed', f'{table}.snoozed')}, "
            f"CASE WHEN {ASLEEP.replace('snoozed', f'{table}.snoozed')} THEN {table}.snoozed_until END")


class ConversationRecord(Conversation):
    """One conversation as the operator reads it, with what the visitor's page attached (`setMetadata`)."""

    metadata: dict[str, str]


def new_conversation(e: ev.ConversationCreated) -> Conversation:
    """A conversation as the API shows it the moment it is created (what the read model will hold)."""
    return Conversation(e.conversation_id, e.website_id, e.customer_id, e.at, e.at, False, False, e.operator_only,
                        False, None, None, [], "none", False, None)


def new_conversation_record(e: ev.ConversationCreated) -> ConversationRecord:
    return ConversationRecord(*msgspec.structs.astuple(new_conversation(e)), dict(e.metadata))


Sender = Literal["operator", "customer"]


class MessageReaction(msgspec.Struct, rename={"sender": "from", "person_id": "personId"}):
    """One person's reaction, as `events.types.Reaction` records it: one per person per message."""

    emoji: str
    sender: Sender
    person_id: uuid.UUID  # the customer's or the operator's id


class Message(msgspec.Struct, rename={"id": "_id", "conversation_id": "conversationId", "website_id": "websiteId",
                                      "sender": "from", "reply_to": "replyToMessageId",
                                      "creation_time": "creationTime", "rating_time": "ratingTime",
                                      "operator_rating": "operatorRating",
                                      "operator_rating_time": "operatorRatingTime", "campaign_id": "campaignId",
                                      "content_html": "contentHtml", "edited_at": "editedAt"}):
    id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    content: str
    sender: Sender
    reply_to: uuid.UUID | None
    internal: bool
    creation_time: datetime
    rating: Rating | None  # the visitor's
    rating_time: datetime | None
    operator_rating: Rating | None  # the team's own (`/rating/operator`), never counted as the visitor's
    operator_rating_time: datetime | None
    reactions: list[MessageReaction]  # stored as the event's builtins, encoded as they are
    read: bool
    campaign_id: uuid.UUID | None  # the campaign that sent it
    # "customer", "operator" (the team), "agent" (the website's AI agent, from "operator") or "away" (the
    # website's away reply outside its business hours, from "operator")
    author: Literal["customer", "operator", "agent", "away"]
    incomplete: bool  # the agent's answer was cut short: what it had streamed
    # the operator who wrote a reply or a note (None for the visitor, the AI agent, a campaign, an API key)
    operator: OperatorIdentity | None
    attachments: list[AttachmentView]  # files, each with signed, expiring links to its bytes
    edited_at: datetime | None = None  # when an operator last changed its text
    deleted: bool = False  # taken back: `content` is empty and no file shows for every reader (the history keeps them)
    # the sanitized rendering of `content` (projections.richtext), computed on read: never stored
    content_html: str = ""

    def __post_init__(self) -> None:
        self.content_html = render_markdown(self.content)
        if self.deleted:
            self.attachments = []


def author_of(created: ev.MessageCreated) -> str:
    return created.author or created.sender


def new_message(created: ev.MessageCreated, operator: OperatorIdentity | None = None) -> Message:
    """A message as the API shows it the moment it is created: what the read model will hold, with its
    author's identity as the caller looked it up (`identities`)."""
    return Message(created.message_id, created.conversation_id, created.website_id, created.content, created.sender,
                   created.reply_to, created.internal, created.at, None, None, None, None, [], False, created.campaign_id,
                   author_of(created), created.incomplete, operator, attachment_views(created.attachments))


def message_of_row(row: tuple) -> Message:
    *fields, operator_id, profile, attachments, edited_at, deleted = row
    return Message(*fields, identity_of_row(operator_id, profile), stored_views(attachments), edited_at, deleted)


FilterKind = Literal["uuid", "str", "bool", "labels"]


@dataclass(frozen=True)
class Collection:
    name: str
    table: str
    shape: type[msgspec.Struct]
    select: str
    filters: Mapping[str, tuple[str, FilterKind]]
    sorts: Mapping[str, str]
    default_sort: str
    # sort fields that read newest first unless a direction is given
    descending_by_default: frozenset[str] = frozenset()
    website_column: str | None = "website_id"
    extra_where: str = ""
    from_row: Callable[[tuple], msgspec.Struct] | None = None  # when a row is not the shape's fields in order

    def row_object(self, row: tuple) -> msgspec.Struct:
        return self.from_row(row) if self.from_row else self.shape(*row)


# The workflow's filters of the conversation lists (`labels`: names, comma-separated, all must be on it)
WORKFLOW_FILTERS: dict[str, tuple[str, FilterKind]] = {
    "assigneeId": ("assignee_id", "uuid"), "teamId": ("team_id", "uuid"), "labels": ("labels", "labels"),
    "priority": ("priority", "str")}


def labels_clause(table: str, raw: str, org_id: uuid.UUID | None) -> tuple[str, list[Any]]:
    """Every label named (case aside) is on the conversation: the organization's labels of those names, as
    many as names given (a name no label has matches nothing), are all on it. The labels are looked up once
    per statement, not per row, so the GIN index on the labels can serve the filter."""
    names = sorted({name.strip().lower() for name in raw.split(",") if name.strip()})
    if not names:
        raise Invalid("labels names no label; leave it out to read every conversation", "labels")
    named = "SELECT l.id FROM rm_labels l WHERE l.org_id = %s AND lower(l.name) = ANY(%s)"
    return (f"{table}.labels @> ARRAY({named}) AND cardinality(ARRAY({named})) = %s",
            [org_id, names, org_id, names, len(names)])


WEBSITES = Collection(
    name="websites", table="rm_websites", shape=Website,
    select="id, name, brand_color, created_at, allowed_origins",
    filters={}, sorts={"_id": "id", "createdAt": "created_at"}, default_sort="_id", website_column="id",
)
CUSTOMERS = Collection(
    name="customers", table="rm_customers", shape=Customer,
    select="id, website_id, email, nickname, phone, language, user_id, created_at, updated_at, unverified_email",
    filters={"websiteId": ("website_id", "uuid"), "email": ("email", "str"), "userId": ("user_id", "str")},
    sorts={"_id": "id", "createdAt": "created_at"}, default_sort="_id",
)
CONVERSATIONS = Collection(
    name="conversations", table="rm_conversations", shape=Conversation,
    select="id, website_id, customer_id, created_at, last_edit_time, resolved, spam, operator_only, agent_paused, "
           + workflow_columns("rm_conversations"),
    filters={"websiteId": ("website_id", "uuid"), "customerId": ("customer_id", "uuid"),
             "resolved": ("resolved", "bool"), "spam": ("spam", "bool"), **WORKFLOW_FILTERS},
    sorts={"_id": "id", "lastEditTime": "last_edit_time", "createdAt": "created_at"},
    default_sort="lastEditTime", descending_by_default=frozenset({"lastEditTime"}),
)
# the single record (GET /api/conversations/{id}), which the list does not burden with metadata
CONVERSATION_RECORD = Collection(
    name="conversations", table="rm_conversations", shape=ConversationRecord,
    select=CONVERSATIONS.select + ", metadata", filters={}, sorts={"_id": "id"}, default_sort="_id",
)
MESSAGES = Collection(
    name="messages", table="rm_messages", shape=Message,
    select="id, conversation_id, website_id, content, sender, reply_to, internal, creation_time, rating, "
           "rating_time, operator_rating, operator_rating_time, reactions, read_at IS NOT NULL, campaign_id, COALESCE(author, sender), incomplete, "
           f"operator_id, {profile_column('rm_messages.operator_id')}, attachments, edited_at, deleted",
    filters={"conversationId": ("conversation_id", "uuid")},
    sorts={"_id": "id", "creationTime": "creation_time"}, default_sort="creationTime", from_row=message_of_row,
)


MAX_COUNT = 2**63 - 1  # PostgreSQL's LIMIT and OFFSET take a bigint


def parse_int(params: Mapping[str, str], name: str, default: int = 0) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise Invalid(f"{name} must be an integer", name) from None
    if value < 0:
        raise Invalid(f"{name} must not be negative", name)
    if value > MAX_COUNT:
        raise Invalid(f"{name} must be at most {MAX_COUNT}", name)
    return value


def parse_bool(params: Mapping[str, str], name: str) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    lowered = raw.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise Invalid(f"{name} must be true or false", name)


def parse_fields(params: Mapping[str, str], shape: type[msgspec.Struct]) -> list[str] | None:
    """The `fields` projection: comma-separated names, as the OpenAPI document's pattern says; `_id` is
    always kept, and an unknown name is refused rather than guessed."""
    raw = params.get("fields")
    if raw is None:
        return None
    if not raw:
        raise Invalid("fields names no field; leave it out for whole records", "fields")
    known = {f.encode_name for f in msgspec.structs.fields(shape)}
    wanted = raw.split(",")
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise Invalid(f"unknown field {unknown[0]!r}; known fields: {sorted(known)}", "fields")
    return ["_id", *[name for name in wanted if name != "_id"]]


def project(objects: list[msgspec.Struct], fields: list[str] | None) -> list[Any]:
    if fields is None:
        return objects
    return [{k: v for k, v in msgspec.to_builtins(obj).items() if k in fields} for obj in objects]


def scope_clauses(collection: Collection, principal: Principal) -> tuple[list[str], list[Any]]:
    where = ["org_id = %s"]
    args: list[Any] = [principal.org_id]
    if principal.website_id is not None and collection.website_column:
        where.append(f"{collection.website_column} = %s")
        args.append(principal.website_id)
    if collection.extra_where:
        where.append(collection.extra_where)
    return where, args


def filter_clauses(collection: Collection, params: Mapping[str, str],
                   org_id: uuid.UUID | None = None) -> tuple[list[str], list[Any]]:
    """The filters' SQL conditions and their arguments; `org_id` is the reader's organization, whose label
    names a `labels` filter means."""
    where: list[str] = []
    args: list[Any] = []
    for name, (column, kind) in collection.filters.items():
        raw = params.get(name)
        if raw is None or (raw == "" and kind == "str"):
            continue
        if raw == "":
            # an empty id or flag filters nothing: refused like any malformed value, never read as "all"
            raise Invalid(f"{name} is empty; leave it out to read every record", name)
        if kind == "labels":
            clause, values = labels_clause(collection.table, raw, org_id)
            where.append(clause)
            args.extend(values)
            continue
        if kind == "bool":
            value: Any = parse_bool(params, name)
        elif kind == "uuid":
            value = parse_id(raw)
            if value is None:
                raise Invalid(f"{name} is not an id", name)
        else:
            value = raw
        where.append(f"{column} = %s")
        args.append(value)
    return where, args


def parse_sort(collection: Collection, params: Mapping[str, str]) -> tuple[str, str]:
    """`sortField` and `sortDirection`: the column to sort by and ASC or DESC."""
    sort_field = params.get("sortField") or collection.default_sort
    if sort_field not in collection.sorts:
        raise Invalid(f"sortField must be one of {sorted(collection.sorts)}", "sortField")
    direction = params.get("sortDirection")
    if direction is None or direction == "":
        direction = "DESC" if sort_field in collection.descending_by_default else "ASC"
    direction = direction.upper()
    if direction not in ("ASC", "DESC"):
        raise Invalid("sortDirection must be ASC or DESC", "sortDirection")
    return collection.sorts[sort_field], direction


def order_clause(collection: Collection, params: Mapping[str, str]) -> str:
    column, direction = parse_sort(collection, params)
    return f"{column} {direction}, id {direction}"


def list_query(collection: Collection, principal: Principal, params: Mapping[str, str]) -> tuple[str, list[Any]]:
    """The SQL of GET /api/<collection> with the contract's offset parameters: `limit` 0 means no limit."""
    limit, skip = parse_int(params, "limit"), parse_int(params, "skip")
    where, args = scope_clauses(collection, principal)
    more_where, more_args = filter_clauses(collection, params, principal.org_id)
    sql = (f"SELECT {collection.select} FROM {collection.table} WHERE {' AND '.join(where + more_where)} "
           f"ORDER BY {order_clause(collection, params)}")
    if limit:
        sql += f" LIMIT {limit}"
    if skip:
        sql += f" OFFSET {skip}"
    return sql, [*args, *more_args]


async def read_list(conn: psycopg.AsyncConnection, collection: Collection, principal: Principal,
                    params: Mapping[str, str]) -> list[Any]:
    fields = parse_fields(params, collection.shape)
    rows = await (await conn.execute(*list_query(collection, principal, params))).fetchall()
    return project([collection.row_object(row) for row in rows], fields)


async def read_one(conn: psycopg.AsyncConnection, collection: Collection, principal: Principal,
                   record_id: uuid.UUID | None, key_column: str = "id") -> msgspec.Struct:
    """A single record of the principal's organization (and pinned website); anything else is 404."""
    if record_id is None and key_column == "id":
        raise NotFound(f"{collection.name[:-1]} not found")
    where, args = scope_clauses(collection, principal)
    row = await (await conn.execute(
        f"SELECT {collection.select} FROM {collection.table} WHERE {' AND '.join(where)} AND {key_column} = %s",
        [*args, record_id])).fetchone()
    if row is None:
        raise NotFound(f"{collection.name[:-1]} not found")
    return collection.row_object(row)


class WebhookSubscription(msgspec.Struct, rename={
        "id": "_id", "website_id": "websiteId", "disabled_reason": "disabledReason",
        "consecutive_failures": "consecutiveFailures", "created_at": "createdAt", "updated_at": "updatedAt"}):
    id: uuid.UUID
    website_id: uuid.UUID
    url: str
    events: list[EventName]
    active: bool
    disabled_reason: str | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime


class WebhookSubscriptionWithSecret(WebhookSubscription):
    """Only the answer to the create request carries the secret."""

    secret: str


WEBHOOK_SUBSCRIPTIONS = Collection(
    name="webhooksubscriptions", table="rm_webhook_subscriptions", shape=WebhookSubscription,
    select="id, website_id, url, events, active, disabled_reason, consecutive_failures, created_at, updated_at",
    filters={"websiteId": ("website_id", "uuid")},
    sorts={"_id": "id", "createdAt": "created_at"}, default_sort="_id",
)


class ApiKey(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "rate_per_minute": "ratePerMinute",
                                     "created_at": "createdAt"}):
    id: uuid.UUID
    name: str | None
    scopes: list[Scope]
    website_id: uuid.UUID | None
    rate_per_minute: RatePerMinute | None
    revoked: bool
    created_at: datetime


class ApiKeyWithSecret(ApiKey):
    """Only the answer to the create request carries the secret."""

    secret: str


API_KEYS = Collection(
    name="apikeys", table="rm_api_keys", shape=ApiKey,
    select="id, name, scopes, website_id, rate_per_minute, revoked, created_at",
    filters={"websiteId": ("website_id", "uuid"), "revoked": ("revoked", "bool")},
    sorts={"_id": "id", "createdAt": "created_at"}, default_sort="_id", website_column=None,
)


class Operator(msgspec.Struct, rename={"id": "_id", "display_name": "displayName", "created_at": "createdAt"}):
    """An operator as a member of the organization: its role and status there (`active`, `invited`,
    `disabled`) and its availability now (`online`, `away`: chosen, or inactive for a while; `offline`: chosen,
    or not an active member); the display name is what visitors and the team see."""

    id: uuid.UUID
    email: str
    display_name: str | None
    role: Role
    status: Literal["active", "invited", "disabled"]
    created_at: datetime
    availability: Availability


# an organization's operators: every membership of it but those that ended, and the invitations that still
# work (the invitation's id stands for the operator until it is accepted)
MEMBERS = ("(SELECT o.id, o.email, o.display_name, m.role, m.status, o.created_at, m.org_id, "
           f"{EFFECTIVE} AS availability FROM rm_operator_orgs m "
           "JOIN rm_operators o ON o.id = m.operator_id WHERE m.status <> 'removed' "
           "UNION ALL SELECT i.id, i.email, NULL, i.role, 'invited', i.created_at, i.org_id, 'offline' "
           "FROM rm_invitations i WHERE i.state = 'pending' AND i.expires_at > now()) AS members")

OPERATORS = Collection(
    name="operators", table=MEMBERS, shape=Operator,
    select="id, email, display_name, role, status, created_at, availability",
    filters={"email": ("email", "str"), "role": ("role", "str"), "status": ("status", "str"),
             "availability": ("availability", "str")},
    sorts={"_id": "id", "email": "email", "createdAt": "created_at"},
    default_sort="email", website_column=None,
)
