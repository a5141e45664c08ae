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
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
import psycopg

from commands.errors import Forbidden, Invalid, NotFound
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import (CONVERSATIONS, WORKFLOW_FILTERS, Collection, Conversation, filter_clauses,
                                           order_clause, parse_fields, parse_int, project, read_list, workflow_columns)
from projections.workflow import ASLEEP
from projections.views.parameters import partial, query

DEFAULT_PAGE = 20
MAX_PAGE = 100  # a larger `limit` is capped to this

# Whether the reader has unread visitor messages here: the visitor wrote after the reader's own read mark
# (rm_operator_reads). A row from before the inbox kept the visitor's time falls back on the team-wide flag.
# `{read_up_to}` is the reader's mark: a subquery per row for a page, the joined READS for a count.
UNREAD_AFTER = ("CASE WHEN rm_inbox.last_customer_message_at IS NULL THEN rm_inbox.unread "
                "ELSE rm_inbox.last_customer_message_at > COALESCE({read_up_to}, '-infinity') END")
UNREAD_FOR = UNREAD_AFTER.replace("{read_up_to}", "(SELECT r.up_to FROM rm_operator_reads r "
                                  "WHERE r.operator_id = '{operator}'::uuid AND r.conversation_id = rm_inbox.id)")
READS = ("LEFT JOIN rm_operator_reads reads ON reads.operator_id = '{operator}'::uuid "
         "AND reads.conversation_id = rm_inbox.id")
UNREAD_JOINED = UNREAD_AFTER.replace("{read_up_to}", "reads.up_to")
AWAKE = f"NOT {ASLEEP.replace('snoozed', 'rm_inbox.snoozed')}"
OPEN = f"NOT rm_inbox.resolved AND NOT rm_inbox.spam AND {AWAKE}"
# tab -> the rows it holds, for the reader `{operator}`; the same predicates select pages and counts. The
# open views (unread, unresolved, mine, unassigned) leave snoozed conversations out; `snoozed` holds them.
TAB_ROWS: dict[str, str] = {
    "all": "NOT spam",
    "unread": f"NOT spam AND {AWAKE} AND {{unread}}",
    "unresolved": OPEN,
    "resolved": "resolved AND NOT spam",
    "spam": "spam",
    "mine": f"{OPEN} AND rm_inbox.assignee_id = '{{operator}}'::uuid",
    "unassigned": f"{OPEN} AND rm_inbox.assignee_id IS NULL",
    "snoozed": f"NOT spam AND NOT {AWAKE}",
}
# an operator's mentions, with the columns a scope and an order name, as a relation like rm_inbox
MENTIONED = ("(SELECT conversation_id AS id, website_id, customer_id, last_edit_time FROM rm_inbox_mentions "
             "WHERE operator_id = %s AND NOT spam) AS mentioned")
INBOX_FILTERS = ("all", "unread", "unresolved", "resolved", "mentions", "spam", "mine", "unassigned", "snoozed")
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


class LastMessage(msgspec.Struct, rename={"sender": "from", "creation_time": "creationTime"}):
    """The conversation's latest message, for triage: its first 140 characters; `internal` for a note."""

    sender: Literal["operator", "customer"]
    preview: str
    creation_time: datetime
    internal: bool


def last_message_of(row: tuple) -> "InboxConversation":
    *fields, sender, preview, at, internal = row
    return InboxConversation(*fields, LastMessage(sender, preview, at, internal) if sender else None)


class InboxConversation(Conversation, rename={"agent_holds": "agentHolds", "waiting_since": "waitingSince",
                                              "last_message": "lastMessage"}):
    unread: bool  # the reader's own: the visitor wrote after the reader last read this conversation
    agent_holds: bool  # the website's enabled AI agent answers this conversation's visitor
    # the team-wide "needs a reply": since when the visitor waits (their first message after the team's last reply)
    waiting_since: datetime | None
    last_message: LastMessage | None


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
    mine: int
    unassigned: int
    snoozed: int


class NamedCount(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    name: str
    count: int  # open conversations in scope (not resolved, not spam, not snoozed)


InboxConversationFields = partial(InboxConversation)  # a conversation, or (with `fields`) the fields it names


class InboxPage(msgspec.Struct, rename={"filtered_total": "filteredTotal", "label_counts": "labelCounts",
                                        "team_counts": "teamCounts"}):
    conversations: list[InboxConversationFields]
    total: int
    filtered_total: int
    counts: InboxCounts
    label_counts: list[NamedCount]  # every label of the organization, with its open conversations in scope
    team_counts: list[NamedCount]


INBOX = Collection(
    name="conversations", table="rm_inbox", shape=InboxConversation,
    select=f"id, website_id, customer_id, created_at, last_edit_time, resolved, spam, operator_only, {AGENT_PAUSED}, "
           f"{workflow_columns('rm_inbox')}, {UNREAD_FOR}, {AGENT_HOLDS}, waiting_since, last_message_from, "
           "last_message_preview, last_message_at, last_message_internal",
    filters=WORKFLOW_FILTERS, sorts={"lastEditTime": "last_edit_time"}, default_sort="lastEditTime",
    descending_by_default=frozenset({"lastEditTime"}), from_row=last_message_of,
)


@dataclass(frozen=True)
class Scope:
    """The SQL condition on `rm_inbox` for the conversations in scope (`where`, with the workflow filters
    given: assignee, team, labels, priority) and the same without those filters (`base`, what the label and
    team counts are counted in); `whole_website` when nothing narrows it, so the website's counters and
    tallies answer the tabs, and `base_whole_website` when nothing but the workflow filters does, so they
    answer the label and team counts."""

    website_id: uuid.UUID
    where: str
    args: tuple[Any, ...]
    whole_website: bool
    base: str = ""
    base_args: tuple[Any, ...] = ()
    base_whole_website: bool = False  # the scope without the workflow filters is the whole website

    def narrowed(self, params: Mapping[str, str], org_id: uuid.UUID) -> "Scope":
        where, args = filter_clauses(INBOX, params, org_id)
        if not where:
            return replace(self, base=self.where, base_args=self.args, base_whole_website=self.whole_website)
        return Scope(self.website_id, " AND ".join([self.where, *where]), (*self.args, *args), False,
                     self.where, self.args, self.whole_website)


def tab_rows(tab: str, operator_id: uuid.UUID | None, unread: str = UNREAD_FOR) -> str:
    """The rows of a tab for this reader (a nil id, which no operator has, for no reader); `unread` says how
    the reader's read mark is found (UNREAD_JOINED where READS is joined)."""
    operator = operator_id or uuid.UUID(int=0)
    return TAB_ROWS[tab].format(operator=operator, unread=unread.format(operator=operator))


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


# the tabs the website's counters answer (they do not depend on the reader nor on the time)
COUNTED = ("all", "resolved", "spam")
# The conversations awake now of every key of `rm_inbox_tally_keys` (projections/inbox.py), as `tallied`:
# for the whole website, its tallies (and changes not folded yet) less the rows asleep now (few: the
# snoozed ones); for a narrower scope, counted over the scope's rows. `{where}` is the scope.
WEBSITE_TALLIED = (
    "tallied AS (SELECT key, sum(n)::bigint AS n FROM (SELECT key, n FROM rm_inbox_tallies WHERE website_id = %s "
    "UNION ALL SELECT key, n FROM rm_inbox_tally_changes WHERE website_id = %s "
    "UNION ALL SELECT key, -1 FROM rm_inbox, unnest(rm_inbox_tally_keys(spam, resolved, unread, assignee_id, team_id, "
    f"labels, last_customer_message_at)) AS key WHERE website_id = %s AND snoozed AND NOT {AWAKE}) AS counted "
    "GROUP BY key)")
SCOPE_TALLIED = (
    "tallied AS (SELECT key, count(*) AS n FROM rm_inbox, unnest(rm_inbox_tally_keys(spam, resolved, unread, "
    f"assignee_id, team_id, labels, last_customer_message_at)) AS key WHERE {{where}} AND {AWAKE} GROUP BY key)")


def tallied(key: str) -> str:
    """A key's count in `tallied` (a literal key: `open`, or an expression: `'label:' || l.id`)."""
    return f"COALESCE((SELECT n FROM tallied WHERE key = {key}), 0)"


def counter(tab: str) -> str:
    """A COUNTED tab's count from the website's counters (argument: the website)."""
    return f"(SELECT COALESCE(sum(n), 0)::bigint FROM rm_inbox_counts WHERE website_id = %s AND {TAB_ROWS[tab]})"


async def count_website_tabs(conn: psycopg.AsyncConnection, website_id: uuid.UUID,
                             operator_id: uuid.UUID | None) -> InboxCounts:
    """Every tab's count over the whole website, without a scan of its conversations: the counters and the
    tallies (less what is asleep); the reader's own from their rows (`mine`: their assigned ones; `unread`:
    the visitor-written ones less those the reader's read marks cover)."""
    operator = operator_id or uuid.UUID(int=0)
    read = ("(SELECT count(*) FROM rm_operator_reads r JOIN rm_inbox ON rm_inbox.id = r.conversation_id "
            f"WHERE r.operator_id = %s AND rm_inbox.website_id = %s AND NOT rm_inbox.spam AND {AWAKE} "
            "AND r.up_to >= rm_inbox.last_customer_message_at)")
    visitor_wrote, unread_before, open_, unassigned = (tallied(f"'{key}'") for key in (
        "visitor-wrote", "unread-before", "open", "open-unassigned"))
    sql = (f"WITH {WEBSITE_TALLIED} SELECT {visitor_wrote} + {unread_before} - {read}, {open_}, "
           f"(SELECT count(*) FROM rm_inbox WHERE website_id = %s AND {tab_rows('mine', operator)}), {unassigned}, "
           f"(SELECT count(*) FROM rm_inbox WHERE website_id = %s AND {tab_rows('snoozed', operator)}), "
           f"{', '.join(counter(tab) for tab in COUNTED)}, (SELECT count(*) FROM {MENTIONED} WHERE website_id = %s)")
    args = (website_id, website_id, website_id, operator, website_id, website_id, website_id, *[website_id] * len(COUNTED),
            operator, website_id)
    unread, unresolved, mine, unassigned, snoozed, every, resolved, spam, mentions = await (
        await conn.execute(sql, args)).fetchone()
    return InboxCounts(all=every, unread=unread, unresolved=unresolved, resolved=resolved, mentions=mentions,
                       spam=spam, mine=mine, unassigned=unassigned, snoozed=snoozed)


async def count_tabs(conn: psycopg.AsyncConnection, scope: Scope, operator_id: uuid.UUID | None) -> InboxCounts:
    """Every tab's count in one statement: over the whole website from its counters and tallies, else over
    the scope's rows (the reader's read marks joined once), the mentions from the operator's own."""
    if scope.whole_website:
        return await count_website_tabs(conn, scope.website_id, operator_id)
    operator = operator_id or uuid.UUID(int=0)
    columns = [f"count(*) FILTER (WHERE {tab_rows(tab, operator_id, UNREAD_JOINED)})" for tab in TAB_ROWS]
    mentions = f"(SELECT count(*) FROM {MENTIONED} WHERE {scope.base or scope.where})"
    sql = (f"SELECT {', '.join(columns)}, {mentions} FROM rm_inbox {READS.format(operator=operator)} "
           f"WHERE {scope.where}")
    *tabs, mentioned = await (await conn.execute(sql, (operator_id, *(scope.base_args or scope.args),
                                                       *scope.args))).fetchone()
    return InboxCounts(mentions=mentioned, **dict(zip(TAB_ROWS, tabs)))


async def named_counts(conn: psycopg.AsyncConnection, principal: Principal, scope: Scope) -> tuple[
        list[NamedCount], list[NamedCount]]:
    """Every label and team of the organization with its open conversations in the scope (without the
    workflow filters), in one statement: from the tallies for the whole website, else over the scope."""
    if scope.base_whole_website:
        tally, args = WEBSITE_TALLIED, (scope.website_id,) * 3
    else:
        tally, args = SCOPE_TALLIED.format(where=scope.base or scope.where), scope.base_args or scope.args
    label, team = tallied("'label:' || l.id"), tallied("'team:' || t.id")
    rows = await (await conn.execute(
        f"WITH {tally} SELECT 'label', l.id, l.name, {label} FROM rm_labels l WHERE l.org_id = %s "
        f"UNION ALL SELECT 'team', t.id, t.name, {team} FROM rm_teams t WHERE t.org_id = %s",
        (*args, principal.org_id, principal.org_id))).fetchall()
    ordered = sorted(rows, key=lambda row: row[2].lower())
    return ([NamedCount(*row[1:]) for row in ordered if row[0] == "label"],
            [NamedCount(*row[1:]) for row in ordered if row[0] == "team"])


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


async def walk_tab(conn: psycopg.AsyncConnection, scope: Scope, inbox_filter: str, page_size: int = MAX_PAGE,
                   operator_id: uuid.UUID | None = None) -> Walk:
    """Walks a tab (any but `mentions`) of the listing (`GET /api/conversations` in inbox mode, newest
    first) page by page to its end, each page starting after the previous page's last conversation, in one
    statement, so one snapshot: the exact number of conversations, and of pages, a client paging sees."""
    rows = f"{scope.where} AND {tab_rows(inbox_filter, operator_id)}"
    full, partial = await (await conn.execute(WALK.format(rows=rows), (
        *scope.args, page_size - 1, *scope.args, page_size))).fetchone()
    conversations = full * page_size + partial
    return Walk(conversations=conversations, pages=full + (1 if partial or not full else 0))


async def page_of(conn: psycopg.AsyncConnection, scope: Scope, inbox_filter: str, operator_id: uuid.UUID | None,
                  order: str, limit: int, skip: int) -> list[tuple]:
    select = INBOX.select.format(operator=operator_id or uuid.UUID(int=0))
    if inbox_filter == "mentions":  # the page of ids comes from the operator's mentions, the rows from the inbox
        sql = (f"SELECT {select} FROM rm_inbox WHERE id IN (SELECT id FROM {MENTIONED} WHERE {scope.base or scope.where} "
               f"ORDER BY {order} LIMIT %s OFFSET %s) AND {scope.where} ORDER BY {order}")
        args = (operator_id, *(scope.base_args or scope.args), limit, skip, *scope.args)
    else:
        sql = (f"SELECT {select} FROM rm_inbox WHERE {scope.where} AND {tab_rows(inbox_filter, operator_id)} "
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

    scope = (await scope_of(conn, website_id, conversation_filter, zone)).narrowed(params, principal.org_id)
    counts = await count_tabs(conn, scope, principal.operator_id)
    found = await page_of(conn, scope, inbox_filter, principal.operator_id, order, limit, skip)
    label_counts, team_counts = await named_counts(conn, principal, scope)
    return InboxPage(
        conversations=project([INBOX.row_object(row) for row in found], fields),
        total=counts.all + counts.spam, filtered_total=getattr(counts, inbox_filter), counts=counts,
        label_counts=label_counts, team_counts=team_counts)


async def read_conversations(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> Any:
    """`GET /api/conversations`: the plain list, or the inbox once `inboxFilter` is given."""
    if params.get("inboxFilter"):
        return await read_inbox(conn, principal, params)
    if misplaced := next((name for name in INBOX_ONLY if params.get(name)), None):
        raise Invalid(f"{misplaced} applies only together with inboxFilter", misplaced)
    return await read_list(conn, CONVERSATIONS, principal, params)
