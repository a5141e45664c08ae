"""Reading a conversation as it was: `asOf` on `GET /api/conversations/{id}` and `GET /api/messages`, and
the conversation's audit trail; and an inbox as it was (`asOf` with `inboxFilter` on `GET /api/conversations`). Both fold the conversation's events from the store (never the current read
model), with the same rules the core read model applies, so an answer as of a moment is what the REST API
answered then."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Mapping

import msgspec

from commands.errors import Forbidden, Invalid, NotFound
from commands.principal import Principal
from events import types as ev
from events.history import HEAD, HistoryFilter, pages_async
from events.public import Shape, public_of
from events.store import Recorded, decode_event
from events.ids import parse_id
from projections.richtext import render_markdown
from projections.views.collections import (MESSAGES, ConversationRecord, Message, new_conversation_record, new_message, parse_fields, parse_int,
                                 parse_sort, project)
from projections.views.history_query import parse_time
from projections.views.identities import OperatorIdentity, identities
from projections.views.inbox import InboxPage, website_of
from projections.views.inbox_as_of import INBOX_EVENTS, check_params, past_inbox, read_inbox_as_of
from projections.views.parameters import PositionOrTime, query
from projections.views.workflow import LABELS, read_all
from readapi.services import Services


AS_OF = query("asOf", PositionOrTime, "Answer as the API did at this position, or this RFC 3339 time: folded from the events "
                           "(GET /api/messages then needs conversationId, GET /api/conversations inboxFilter: "
                           "an inbox as it was is read only).")


class AsOf(msgspec.Struct, frozen=True):
    position: int | None = None
    time: datetime | None = None


def parse_as_of(params: Mapping[str, str]) -> AsOf | None:
    """`asOf`: a position (digits) or an RFC 3339 time; None when absent."""
    raw = params.get("asOf")
    if not raw:
        return None
    if raw.isascii() and raw.isdigit():
        return AsOf(position=parse_int(params, "asOf"))
    return AsOf(time=parse_time(params, "asOf"))


async def events_until(svc: Services, flt: HistoryFilter, as_of: AsOf) -> list[Recorded]:
    """The filter's events up to the position `as_of` names (its time is the filter's `until_time`)."""
    async with svc.pool.connection() as conn:
        head = (await (await conn.execute(HEAD)).fetchone())[0]
    until = head if as_of.position is None else min(head, as_of.position)
    return [Recorded(position, uuid.UUID(stream_id), 0, decode_event(state))
            async for rows in pages_async(svc.pool, flt, 0, until) for position, stream_id, _, state in rows]


async def conversation_events(svc: Services, principal: Principal, conversation_id: uuid.UUID | None,
                              as_of: AsOf = AsOf()) -> list[Recorded]:
    """The events that name the conversation, in the principal's organization (and pinned website), up to
    `as_of`. A conversation's history is short, so it is read whole."""
    if conversation_id is None:
        return []
    return await events_until(svc, HistoryFilter(principal.org_id, until_time=as_of.time,
                                                  website_id=principal.website_id, conversation_id=conversation_id),
                               as_of)


async def inbox_as_of(svc: Services, principal: Principal, params: Mapping[str, str], as_of: AsOf) -> InboxPage:
    """`GET /api/conversations?inboxFilter=…&asOf=…`: the inbox page and its counts as they were, folded
    from the website's events (every one of them up to the moment: the cost grows with its history)."""
    if not params.get("inboxFilter"):
        raise Invalid("asOf on the conversation list reads an inbox as it was: give inboxFilter and websiteId",
                      "inboxFilter")
    if not principal.is_operator:
        raise Forbidden("inboxFilter is for operators; use an operator access token")
    check_params(params)
    async with svc.pool.connection() as conn:
        website_id = await website_of(conn, principal, params)
        past = await past_inbox(conn, principal, website_id, params)
    records = await events_until(svc, HistoryFilter(
        principal.org_id, until_time=as_of.time, website_id=website_id,
        types=tuple(kind.__name__ for kind in INBOX_EVENTS)), as_of)
    return read_inbox_as_of(records, past, as_of.time)


def fold(records: list[Recorded], authors: Mapping[uuid.UUID, OperatorIdentity] | None = None,
         label_names: Mapping[uuid.UUID, str] | None = None,
         ) -> tuple[ConversationRecord | None, dict[uuid.UUID, Message]]:
    """The conversation and its messages after these events, as projections/core.py writes them; a message's
    author as `authors` names them today (an operator's name and avatar are not history), and its labels by
    their names today (`label_names`; a label deleted since is left out, as the read model leaves it)."""
    conversation, messages, labels = None, {}, set()
    for recorded in records:
        e = recorded.event
        if isinstance(e, ev.ConversationCreated):
            conversation = new_conversation_record(e)
        elif conversation is None:
            continue
        elif isinstance(e, ev.ConversationUpdated):
            conversation.resolved = conversation.resolved if e.resolved is None else e.resolved
            conversation.spam = conversation.spam if e.spam is None else e.spam
            conversation.agent_paused = conversation.agent_paused if e.agent_paused is None else e.agent_paused
        elif isinstance(e, ev.ConversationMetadataSet):
            conversation.metadata = {k: v for k, v in {**conversation.metadata, **e.values}.items() if v is not None}
        elif isinstance(e, ev.ConversationAssigned):
            conversation.assignee_id, conversation.team_id = e.assignee_id, e.team_id
        elif isinstance(e, ev.ConversationLabelsChanged):
            labels = (labels | set(e.added)) - set(e.removed)
            conversation.labels = sorted((label_names[i] for i in labels if i in (label_names or {})), key=str.lower)
        elif isinstance(e, ev.ConversationPrioritySet):
            conversation.priority = e.priority
        elif isinstance(e, (ev.ConversationSnoozed, ev.ConversationWoken)):
            conversation.snoozed = isinstance(e, ev.ConversationSnoozed)
            conversation.snoozed_until = e.until if isinstance(e, ev.ConversationSnoozed) else None
        elif isinstance(e, ev.MessageCreated):
            messages.setdefault(e.message_id, new_message(e, (authors or {}).get(e.operator_id)))
            conversation.last_edit_time = max(conversation.last_edit_time, e.at)
            # the team's own reply pauses the AI agent there
            conversation.agent_paused |= (e.sender == "operator" and e.author is None and e.campaign_id is None
                                          and not e.internal)
            if e.sender == "customer" and not e.internal:  # the visitor's message wakes a snoozed conversation
                conversation.snoozed, conversation.snoozed_until = False, None
        elif (message := messages.get(getattr(e, "message_id", None))) is not None:
            if isinstance(e, ev.MessageRead):
                message.read = True
            elif isinstance(e, ev.MessageRated) and e.sender == "operator":
                message.operator_rating, message.operator_rating_time = e.rating, e.at
            elif isinstance(e, ev.MessageRated):
                message.rating, message.rating_time = e.rating, e.at
            elif isinstance(e, ev.MessageReactionsChanged):
                message.reactions = msgspec.to_builtins(e.reactions)
            elif isinstance(e, ev.MessageEdited):
                message.content, message.content_html, message.edited_at = (
                    e.edited_content, render_markdown(e.edited_content), e.at)
            elif isinstance(e, ev.MessageDeleted):
                message.content, message.content_html, message.deleted, message.reactions = "", "", True, []
    return conversation, messages


async def conversation_as_of(svc: Services, principal: Principal, conversation_id: uuid.UUID | None,
                             as_of: AsOf) -> ConversationRecord:
    records = await conversation_events(svc, principal, conversation_id, as_of)
    async with svc.pool.connection() as conn:
        label_names = {label.id: label.name for label in await read_all(conn, LABELS, principal)}
    conversation, _ = fold(records, label_names=label_names)
    if conversation is None:
        raise NotFound("conversation not found at that moment")
    return conversation


async def messages_as_of(svc: Services, principal: Principal, params: Mapping[str, str], as_of: AsOf) -> list[Any]:
    """`GET /api/messages?conversationId=…&asOf=…`: the list's sort, limit, skip and fields, over the fold."""
    if not params.get("conversationId"):
        raise Invalid("asOf reads one conversation's messages: name it with conversationId", "conversationId")
    fields = parse_fields(params, Message)
    limit, skip = parse_int(params, "limit"), parse_int(params, "skip")
    column, direction = parse_sort(MESSAGES, params)
    records = await conversation_events(svc, principal, parse_id(params["conversationId"]), as_of)
    async with svc.pool.connection() as conn:
        authors = await identities(conn, {r.event.operator_id for r in records
                                          if isinstance(r.event, ev.MessageCreated) and r.event.operator_id})
    _, messages = fold(records, authors)
    ordered = sorted(messages.values(), key=lambda m: (getattr(m, column), m.id), reverse=direction == "DESC")
    return project(ordered[skip:skip + limit] if limit else ordered[skip:], fields)


class AuditEntry(msgspec.Struct, frozen=True, rename="camel"):
    """One change in a conversation's life: where it stands in history, what, when, by whom."""

    position: int
    type: str
    at: datetime
    stream_id: uuid.UUID
    actor: ev.Actor | None  # None where the event does not say (recorded before it did, or an API key's message)
    data: Shape


class AuditTrail(msgspec.Struct, frozen=True, rename="camel"):
    conversation_id: uuid.UUID
    entries: list[AuditEntry]
    omitted: dict[str, int]  # events left out for want of a public shape, by type


def actor_of(event: ev.Event, customer_id: uuid.UUID) -> ev.Actor | None:
    """Who made the change: recorded on the event, or told by who sent, rated or reacted."""
    if (actor := getattr(event, "actor", None)) is not None:
        return actor
    if isinstance(event, ev.ConversationReadByOperator):  # an operator's own read mark
        return ev.Actor("operator", event.operator_id)
    sender = getattr(event, "sender", None)
    person = getattr(event, "person_id", None) or getattr(event, "operator_id", None)
    if sender == "customer":
        return ev.Actor("customer", person or customer_id)
    return ev.Actor("operator", person) if sender == "operator" and person else None


async def audit_trail(svc: Services, principal: Principal, conversation_id: uuid.UUID | None) -> AuditTrail:
    records = await conversation_events(svc, principal, conversation_id)
    conversation, _ = fold(records)
    if conversation is None:
        raise NotFound("conversation not found")
    entries, omitted = [], {}
    for recorded in records:
        e, data = recorded.event, public_of(recorded.event)
        if data is None:
            omitted[type(e).__name__] = omitted.get(type(e).__name__, 0) + 1
            continue
        entries.append(AuditEntry(recorded.position, type(e).__name__, e.at, recorded.stream_id,
                                  actor_of(e, conversation.customer_id), data))
    return AuditTrail(conversation.id, entries, omitted)
