"""The inbox as it was: `GET /api/conversations?inboxFilter=…&asOf=…`. The website's conversations are
folded from its events up to that position or time, with the rules the inbox read model applies
(`projections/inbox.py`, and the workflow's in `projections/workflow.py`), then scoped, counted and paged
as the live inbox does (`projections/views/inbox.py`), so the page and its counts are what an operator saw
then. Read only: what was is shown, nothing is changed.

What is not history is read as it is now: whether the website's AI agent is enabled, the label names, the
operator's e-mail address that a note's mention names. The `online` scope (who is on the site now) has no
past and is refused with `asOf`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping

import msgspec
import psycopg

from commands.deciders.conversation import evolve
from commands.errors import Invalid
from commands.principal import Principal
from events import types as ev
from events.store import Recorded
from projections.inbox import mentioned_emails
from projections.views.collections import parse_fields, parse_int, parse_sort, project
from projections.views.inbox import (CONVERSATION_FILTERS, DEFAULT_PAGE, INBOX, INBOX_FILTERS, MAX_PAGE, NOT_WITH_INBOX,
                                     InboxConversation, InboxCounts, InboxPage, NamedCount, one_of, parse_timezone, window_start)

# the events that change what the inbox shows of a conversation
INBOX_EVENTS = (ev.ConversationCreated, ev.ConversationUpdated, ev.MessageCreated, ev.MessageRead,
                ev.ConversationAssigned, ev.ConversationLabelsChanged, ev.ConversationPrioritySet,
                ev.ConversationSnoozed, ev.ConversationWoken)
PREVIEW = 140  # the characters of the latest message a row shows
EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class Folded:
    """A conversation as the inbox read model held it at that moment (its workflow fields named as the
    conversation's fold names them, which `evolve` sets)."""

    id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    created_at: datetime
    last_edit_time: datetime
    operator_only: bool
    resolved: bool = False
    spam: bool = False
    agent_paused: bool = False
    unread: bool = False
    last_customer_message_id: uuid.UUID | None = None
    last_message: ev.MessageCreated | None = None
    mentioned: set[str] = field(default_factory=set)  # the e-mail addresses its notes mention
    assignee_id: uuid.UUID | None = None
    team_id: uuid.UUID | None = None
    labels: set[uuid.UUID] = field(default_factory=set)
    priority: str = "none"
    snoozed: bool = False
    snoozed_until: datetime | None = None
    waiting_since: datetime | None = None  # the visitor's first message since the team's last visible one


def _message(row: Folded, e: ev.MessageCreated) -> None:
    """A visitor's message is unread until a receipt names it or the AI agent answers it, and wakes a
    snoozed conversation; the team's own reply pauses the agent there."""
    row.last_edit_time = max(row.last_edit_time, e.at)
    row.last_message = e
    visible = not e.internal
    if e.sender == "customer" and visible:
        row.last_customer_message_id, row.unread = e.message_id, True
        row.snoozed, row.snoozed_until = False, None
        row.waiting_since = row.waiting_since or e.at
    elif e.author == "agent" and e.reply_to is not None and e.reply_to == row.last_customer_message_id:
        row.unread = False
    row.agent_paused |= e.sender == "operator" and e.author is None and e.campaign_id is None and visible
    if e.sender == "operator" and visible:
        row.waiting_since = None
    if e.internal:
        row.mentioned.update(mentioned_emails(e.content))


def fold_inbox(records: Iterable[Recorded]) -> dict[uuid.UUID, Folded]:
    rows: dict[uuid.UUID, Folded] = {}
    for recorded in records:
        e = recorded.event
        if isinstance(e, ev.ConversationCreated):
            rows.setdefault(e.conversation_id, Folded(e.conversation_id, e.website_id, e.customer_id, e.at, e.at,
                                                      e.operator_only))
        elif (row := rows.get(getattr(e, "conversation_id", None))) is None:
            continue
        elif isinstance(e, ev.MessageCreated):
            _message(row, e)
        elif isinstance(e, ev.MessageRead):
            row.unread = row.unread and e.message_id != row.last_customer_message_id
        else:  # resolve, spam and the workflow's fields as the conversation's own fold has them
            evolve(row, e)
            if isinstance(e, ev.ConversationUpdated):
                row.agent_paused = row.agent_paused if e.agent_paused is None else e.agent_paused
                row.unread = row.unread or (e.handoff and row.last_customer_message_id is not None)
    return rows


def _open(row: Folded) -> bool:
    """In the open tabs then: neither resolved, spam nor snoozed (a snooze ends with its wake event)."""
    return not row.resolved and not row.spam and not row.snoozed


@dataclass(frozen=True)
class Reader:
    """Who reads the past inbox, for the tabs that depend on them."""

    operator_id: uuid.UUID | None
    email: str | None


# tab -> the rows it holds, as `TAB_ROWS` selects them from the live inbox
TABS: dict[str, Callable[[Folded, Reader], bool]] = {
    "all": lambda row, reader: not row.spam,
    "unread": lambda row, reader: row.unread and _open(row),
    "unresolved": lambda row, reader: _open(row),
    "resolved": lambda row, reader: row.resolved and not row.spam,
    "mentions": lambda row, reader: reader.email in row.mentioned and not row.spam,
    "spam": lambda row, reader: row.spam,
    "mine": lambda row, reader: row.assignee_id is not None and row.assignee_id == reader.operator_id and _open(row),
    "unassigned": lambda row, reader: row.assignee_id is None and _open(row),
    "snoozed": lambda row, reader: row.snoozed and not row.resolved and not row.spam,
}


def counts_of(rows: list[Folded], reader: Reader) -> InboxCounts:
    """Every tab the inbox counts, as it counted them then."""
    return InboxCounts(**{f.name: sum(TABS[f.name](row, reader) for row in rows)
                          for f in msgspec.structs.fields(InboxCounts)})


def shown(row: Folded, agent_enabled: bool, label_names: Mapping[uuid.UUID, str]) -> InboxConversation:
    """The row as the inbox answered it; fields the inbox does not carry are left out by the shape."""
    last = row.last_message
    values: dict[str, Any] = {
        "_id": row.id, "websiteId": row.website_id, "customerId": row.customer_id, "createdAt": row.created_at,
        "lastEditTime": row.last_edit_time, "resolved": row.resolved, "spam": row.spam,
        "operatorOnly": row.operator_only, "agentPaused": row.agent_paused, "unread": row.unread,
        "agentHolds": agent_enabled and not row.operator_only and not row.agent_paused,
        "assigneeId": row.assignee_id, "teamId": row.team_id, "priority": row.priority,
        "labels": sorted(label_names[label] for label in row.labels if label in label_names),
        "snoozed": row.snoozed, "snoozedUntil": row.snoozed_until, "waitingSince": row.waiting_since,
        "lastMessage": last and {"from": last.sender, "preview": last.content[:PREVIEW], "creationTime": last.at,
                                 "internal": last.internal},
    }
    return msgspec.convert(msgspec.to_builtins(values), InboxConversation)


@dataclass(frozen=True)
class PastInbox:
    """What `read_inbox_as_of` needs besides the events: the request, and what is read as it is now."""

    params: Mapping[str, str]
    reader: Reader
    agent_enabled: bool
    label_names: Mapping[uuid.UUID, str]
    team_names: Mapping[uuid.UUID, str]


def named_counts(names: Mapping[uuid.UUID, str], counted: Callable[[uuid.UUID], int]) -> list[NamedCount]:
    """Every label or team (as they are named now) with its open conversations then, by name."""
    return sorted((NamedCount(id, name, counted(id)) for id, name in names.items()), key=lambda n: n.name.lower())


def check_params(params: Mapping[str, str]) -> tuple[str, str]:
    """The tab and the scope; what the past inbox cannot answer is refused before any event is read."""
    inbox_filter = one_of(params, "inboxFilter", INBOX_FILTERS)
    conversation_filter = one_of(params, "conversationFilter", CONVERSATION_FILTERS)
    if conversation_filter == "online":
        raise Invalid("who is online has no past: conversationFilter=online cannot be combined with asOf",
                      "conversationFilter")
    if misplaced := next((name for name in NOT_WITH_INBOX if params.get(name)), None):
        raise Invalid(f"{misplaced} cannot be combined with inboxFilter", misplaced)
    return inbox_filter, conversation_filter


def read_inbox_as_of(records: list[Recorded], past: PastInbox, moment: datetime | None) -> InboxPage:
    """The page and counts of the inbox after `records` (the website's events up to the moment); windows
    (`last-hour` ...) end at `moment`, the time asked for or that of the latest event folded."""
    params = past.params
    inbox_filter, conversation_filter = check_params(params)
    fields = parse_fields(params, InboxConversation)
    limit = min(parse_int(params, "limit") or DEFAULT_PAGE, MAX_PAGE)
    skip = parse_int(params, "skip")
    column, direction = parse_sort(INBOX, params)
    end = moment or (records[-1].event.at if records else datetime.now(timezone.utc))
    try:
        start = window_start(conversation_filter, parse_timezone(params), end) or EARLIEST
    except OverflowError:  # a window reaching before the calendar's first day
        raise Invalid("asOf is too early for this conversationFilter", "asOf") from None
    in_scope = [row for row in fold_inbox(records).values() if row.last_edit_time >= start]
    counts = counts_of(in_scope, past.reader)
    tab = [row for row in in_scope if TABS[inbox_filter](row, past.reader)]
    tab.sort(key=lambda row: (getattr(row, column), row.id), reverse=direction == "DESC")
    page = [shown(row, past.agent_enabled, past.label_names) for row in tab[skip:skip + limit]]
    open_rows = [row for row in in_scope if _open(row)]
    return InboxPage(conversations=project(page, fields), total=counts.all + counts.spam,
                     filtered_total=getattr(counts, inbox_filter), counts=counts,
                     label_counts=named_counts(past.label_names, lambda id: sum(id in row.labels for row in open_rows)),
                     team_counts=named_counts(past.team_names, lambda id: sum(row.team_id == id for row in open_rows)))


async def past_inbox(conn: psycopg.AsyncConnection, principal: Principal, website_id: uuid.UUID,
                     params: Mapping[str, str]) -> PastInbox:
    """What is read as it is now, beside the events."""
    email = await (await conn.execute("SELECT email FROM rm_operators WHERE id = %s",
                                      (principal.operator_id,))).fetchone()
    agent = await (await conn.execute("SELECT 1 FROM rm_agents WHERE website_id = %s AND enabled",
                                      (website_id,))).fetchone()
    labels = await (await conn.execute("SELECT id, name FROM rm_labels WHERE org_id = %s",
                                       (principal.org_id,))).fetchall()
    teams = await (await conn.execute("SELECT id, name FROM rm_teams WHERE org_id = %s",
                                      (principal.org_id,))).fetchall()
    return PastInbox(params, Reader(principal.operator_id, email and email[0]), agent is not None, dict(labels),
                     dict(teams))
