"""The inbox mode of `GET /api/conversations`: one website's conversations as an operator's inbox sees
them, a bounded page newest first, with the count of every inbox tab in the same answer.

Scope: the website, narrowed by `conversationFilter` (a window on `lastEditTime`, or the conversations
whose visitor holds an open realtime channel). Tabs (`inboxFilter`): `all`, `unread` (the latest visitor
message has no read receipt), `unresolved`, `resolved`, `mentions` (an internal note mentions the
requesting operator as `@<e-mail>`) and `spam`; every tab but `spam` leaves spam out. `total` counts
everything in scope, spam included; `filteredTotal` counts the requested tab.

The counts come from the inbox read model (`projections/inbox.py`): the unwindowed scope sums the
per-website counters; a windowed or online scope counts over the covering index of that scope.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
import psycopg

from commands.errors import Forbidden, Invalid, NotFound
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import (CONVERSATIONS, Collection, Conversation, order_clause, parse_fields, parse_int,
                                 project, read_list)
from projections.views.parameters import partial, query

DEFAULT_PAGE = 20
MAX_PAGE = 100  # a larger `limit` is capped to this

# tab -> the rows it holds; the same predicates select pages (matching the partial indexes) and counts
TAB_ROWS: dict[str, str] = {
    "all": "NOT spam",
    "unread": "unread AND NOT spam",
    "unresolved": "NOT resolved AND NOT spam",
    "resolved": "resolved AND NOT spam",
    "spam": "spam",
}
# an operator's mentions, with the columns a scope and an order name, as a relation like rm_inbox
MENTIONED = ("(SELECT conversation_id AS id, website_id, customer_id, last_edit_time FROM rm_inbox_mentions "
             "WHERE operator_id = %s AND NOT spam) AS mentioned")
INBOX_FILTERS = ("all", "unread", "unresolved", "resolved", "mentions", "spam")
CONVERSATION_FILTERS = ("all", "last-hour", "today", "last-week", "online")
# list-mode filters that have no meaning beside the inbox tabs
NOT_WITH_INBOX = ("customerId", "resolved", "spam")
INBOX_ONLY = ("conversationFilter", "timezone")
INBOX_QUERY = (
    query("inboxFilter", Literal[INBOX_FILTERS], "Inbox mode: the tab to page through (operator tokens only; "
          "needs `websiteId`, excludes `customerId`, `resolved` and `spam`)."),
    query("conversationFilter", Literal[CONVERSATION_FILTERS], "Inbox mode: narrows the scope; `all` by default."),
    query("timezone", str, "Inbox mode: the IANA time zone that `today` is counted in; UTC by default."),
)


class InboxConversation(Conversation, rename={"agent_holds": "agentHolds"}):
    unread: bool
    agent_holds: bool  # the website's enabled AI agent answers this conversation's visitor


# The agent's columns come from the agent's read model (projections/agent.py) and the core one.
AGENT_PAUSED = "(SELECT c.agent_paused FROM rm_conversations c WHERE c.id = rm_inbox.id)"
AGENT_HOLDS = (f"(NOT rm_inbox.operator_only AND NOT {AGENT_PAUSED} AND EXISTS (SELECT 1 FROM rm_agents a "
               "WHERE a.website_id = rm_inbox.website_id AND a.enabled))")


class InboxCounts(msgspec.Struct):
    all: int
    unread: int
    unresolved: int
    resolved: int
    mentions: int
    spam: int


InboxConversationFields = partial(InboxConversation)  # a conversation, or (with `fields`) the fields it names


class InboxPage(msgspec.Struct, rename={"filtered_total": "filteredTotal"}):
    conversations: list[InboxConversationFields]
    total: int
    filtered_total: int
    counts: InboxCounts


INBOX = Collection(
    name="conversations", table="rm_inbox", shape=InboxConversation,
    select=f"id, website_id, customer_id, created_at, last_edit_time, resolved, spam, operator_only, {AGENT_PAUSED}, "
           f"unread, {AGENT_HOLDS}",
    filters={}, sorts={"lastEditTime": "last_edit_time"}, default_sort="lastEditTime",
    descending_by_default=frozenset({"lastEditTime"}),
)


@dataclass(frozen=True)
class Scope:
    """The SQL condition on `rm_inbox` for the conversations in scope; `whole_website` when nothing
    narrows it, so the website's counters answer."""

    website_id: uuid.UUID
    where: str
    args: tuple[Any, ...]
    whole_website: bool


def one_of(params: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    value = params.get(name) or "all"
    if value not in allowed:
        raise Invalid(f"{name} must be one of {', '.join(allowed)}", name)
    return value


def parse_timezone(params: Mapping[str, str]) -> ZoneInfo:
    name = params.get("timezone") or "UTC"
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"timezone {name!r} is not a known IANA time zone", "timezone") from None


def window_start(conversation_filter: str, zone: ZoneInfo, now: datetime) -> datetime | None:
    if conversation_filter == "last-hour":
        return now - timedelta(hours=1)
    if conversation_filter == "last-week":
        return now - timedelta(days=7)
    if conversation_filter == "today":
        return now.astimezone(zone).replace(hour=0, minute=0, second=0, microsecond=0)
    return None


async def website_of(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> uuid.UUID:
    raw = params.get("websiteId")
    if not raw:
        raise Invalid("websiteId is required with inboxFilter", "websiteId")
    website_id = parse_id(raw)
    found = website_id and await (await conn.execute(
        "SELECT 1 FROM rm_websites WHERE id = %s AND org_id = %s", (website_id, principal.org_id))).fetchone()
    if not found:
        raise NotFound("website not found")
    return website_id


async def scope_of(conn: psycopg.AsyncConnection, website_id: uuid.UUID, conversation_filter: str,
                   zone: ZoneInfo) -> Scope:
    start = window_start(conversation_filter, zone, datetime.now(timezone.utc))
    if start is not None:
        return Scope(website_id, "website_id = %s AND last_edit_time >= %s", (website_id, start), False)
    if conversation_filter == "online":
        online = await (await conn.execute(
            "SELECT customer_id FROM parley_presence WHERE website_id = %s",
            (website_id,))).fetchall()
        return Scope(website_id, "website_id = %s AND customer_id = ANY(%s)",
                     (website_id, [row[0] for row in online]), False)
    return Scope(website_id, "website_id = %s", (website_id,), True)


async def count_tabs(conn: psycopg.AsyncConnection, scope: Scope, operator_id: uuid.UUID | None) -> InboxCounts:
    """Every tab's count in one statement: the tabs from the counters or the scope's index, the mentions
    from the operator's own."""
    mentions = f"(SELECT count(*) FROM {MENTIONED} WHERE {scope.where})"
    if scope.whole_website:
        sums = ", ".join(f"COALESCE(sum(n) FILTER (WHERE {rows}), 0)::bigint" for rows in TAB_ROWS.values())
        sql, args = f"SELECT {sums}, {mentions} FROM rm_inbox_counts WHERE website_id = %s", (scope.website_id,)
    else:
        counts = ", ".join(f"count(*) FILTER (WHERE {rows})" for rows in TAB_ROWS.values())
        sql, args = f"SELECT {counts}, {mentions} FROM rm_inbox WHERE {scope.where}", scope.args
    *tabs, mentioned = await (await conn.execute(sql, (operator_id, *scope.args, *args))).fetchone()
    return InboxCounts(mentions=mentioned, **dict(zip(TAB_ROWS, tabs)))


class Walk(msgspec.Struct):
    conversations: int
    pages: int  # the pages that hold them; an empty tab is one empty page


# A full page ends at its `page_size`-th conversation; the walk follows full pages from one page's last
# conversation to the next (keyset, the listing's own order and partial index), then counts the last,
# partial page. The sentinel before the first page sorts above every (last_edit_time, id).
WALK = """
WITH RECURSIVE full_pages(n, last_time, last_id) AS (
    SELECT 0, 'infinity'::timestamptz, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
    UNION ALL
    SELECT walked.n + 1, page_end.last_edit_time, page_end.id FROM full_pages walked CROSS JOIN LATERAL (
        SELECT last_edit_time, id FROM rm_inbox WHERE {rows} AND (last_edit_time, id) < (walked.last_time, walked.last_id)
        ORDER BY last_edit_time DESC, id DESC OFFSET %s LIMIT 1) page_end
), last_full AS (SELECT n, last_time, last_id FROM full_pages ORDER BY n DESC LIMIT 1)
SELECT last_full.n, (SELECT count(*) FROM (
    SELECT 1 FROM rm_inbox WHERE {rows} AND (last_edit_time, id) < (last_full.last_time, last_full.last_id)
    ORDER BY last_edit_time DESC, id DESC LIMIT %s) partial_page)
FROM last_full
"""


async def walk_tab(conn: psycopg.AsyncConnection, scope: Scope, inbox_filter: str, page_size: int = MAX_PAGE) -> Walk:
    """Walks a tab (any but `mentions`) of the listing (`GET /api/conversations` in inbox mode, newest
    first) page by page to its end, each page starting after the previous page's last conversation, in one
    statement, so one snapshot: the exact number of conversations, and of pages, a client paging sees."""
    rows = f"{scope.where} AND {TAB_ROWS[inbox_filter]}"
    full, partial = await (await conn.execute(WALK.format(rows=rows), (
        *scope.args, page_size - 1, *scope.args, page_size))).fetchone()
    conversations = full * page_size + partial
    return Walk(conversations=conversations, pages=full + (1 if partial or not full else 0))


async def page_of(conn: psycopg.AsyncConnection, scope: Scope, inbox_filter: str, operator_id: uuid.UUID | None,
                  order: str, limit: int, skip: int) -> list[tuple]:
    if inbox_filter == "mentions":  # the page of ids comes from the operator's mentions, the rows from the inbox
        sql = (f"SELECT {INBOX.select} FROM rm_inbox WHERE id IN (SELECT id FROM {MENTIONED} WHERE {scope.where} "
               f"ORDER BY {order} LIMIT %s OFFSET %s) ORDER BY {order}")
        args = (operator_id, *scope.args, limit, skip)
    else:
        sql = (f"SELECT {INBOX.select} FROM rm_inbox WHERE {scope.where} AND {TAB_ROWS[inbox_filter]} "
               f"ORDER BY {order} LIMIT %s OFFSET %s")
        args = (*scope.args, limit, skip)
    return await (await conn.execute(sql, args)).fetchall()


async def read_inbox(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> InboxPage:
    if not principal.is_operator:
        raise Forbidden("inboxFilter is for operators; use an operator access token")
    inbox_filter = one_of(params, "inboxFilter", INBOX_FILTERS)
    conversation_filter = one_of(params, "conversationFilter", CONVERSATION_FILTERS)
    zone = parse_timezone(params)
    if misplaced := next((name for name in NOT_WITH_INBOX if params.get(name)), None):
        raise Invalid(f"{misplaced} cannot be combined with inboxFilter", misplaced)
    order = order_clause(INBOX, params)
    fields = parse_fields(params, InboxConversation)
    limit = min(parse_int(params, "limit") or DEFAULT_PAGE, MAX_PAGE)
    skip = parse_int(params, "skip")
    website_id = await website_of(conn, principal, params)

    scope = await scope_of(conn, website_id, conversation_filter, zone)
    counts = await count_tabs(conn, scope, principal.operator_id)
    found = await page_of(conn, scope, inbox_filter, principal.operator_id, order, limit, skip)
    return InboxPage(
        conversations=project([INBOX.row_object(row) for row in found], fields),
        total=counts.all + counts.spam, filtered_total=getattr(counts, inbox_filter), counts=counts)


async def read_conversations(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> Any:
    """`GET /api/conversations`: the plain list, or the inbox once `inboxFilter` is given."""
    if params.get("inboxFilter"):
        return await read_inbox(conn, principal, params)
    if misplaced := next((name for name in INBOX_ONLY if params.get(name)), None):
        raise Invalid(f"{misplaced} applies only together with inboxFilter", misplaced)
    return await read_list(conn, CONVERSATIONS, principal, params)
