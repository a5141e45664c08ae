"""The figures behind the MCP server's summary tools and views: counts from the inbox read model's
per-website counters, and the workload across read models (mentions, response times, published help
documents, active campaigns). No query reads a message or a customer."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import msgspec
import psycopg

from projections.views.activity import oldest_waiting


class ConversationCounts(msgspec.Struct):
    open: int  # unresolved, spam left out
    resolved: int
    spam: int
    total: int  # spam included


class Workload(msgspec.Struct):
    conversations: ConversationCounts
    unread: int
    mentions: int  # conversations whose internal notes mention the operator
    oldest_waiting_seconds: float | None
    median_first_response_seconds_this_week: float | None
    help_documents_published: int
    active_campaigns: int  # scheduled or sending


def week_start(now: datetime) -> datetime:
    """Monday 00:00 UTC of this week."""
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=today.weekday())


async def states(conn: psycopg.AsyncConnection, website_ids: list[uuid.UUID]
                 ) -> dict[uuid.UUID, tuple[ConversationCounts, int]]:
    """Per website: conversations by state, and the unread ones (spam left out), from the counters."""
    rows = await (await conn.execute(
        "SELECT website_id, COALESCE(sum(n) FILTER (WHERE NOT spam AND NOT resolved), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE NOT spam AND resolved), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE spam), 0)::bigint, COALESCE(sum(n), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE unread AND NOT spam), 0)::bigint "
        "FROM rm_inbox_counts WHERE website_id = ANY(%s) GROUP BY website_id", (website_ids,))).fetchall()
    found = {row[0]: (ConversationCounts(open=row[1], resolved=row[2], spam=row[3], total=row[4]), row[5])
             for row in rows}
    empty = (ConversationCounts(open=0, resolved=0, spam=0, total=0), 0)
    return {website_id: found.get(website_id, empty) for website_id in website_ids}


async def workload(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID | None,
                   website_ids: list[uuid.UUID]) -> Workload:
    """The figures every summary shares, over the given websites."""
    per_website = await states(conn, website_ids)
    waits = [wait for wait in (await oldest_waiting(conn, website_ids)).values() if wait is not None]
    mentions, median, published, campaigns = await (await conn.execute(
        "SELECT (SELECT count(*) FROM rm_inbox_mentions WHERE operator_id = %s AND website_id = ANY(%s) AND NOT spam), "
        "(SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY first_response_seconds) FROM rm_activity_conversations "
        "WHERE website_id = ANY(%s) AND first_response_at >= %s), "
        "(SELECT count(*) FROM rm_documents WHERE org_id = %s AND website_id = ANY(%s) AND published), "
        "(SELECT count(*) FROM rm_campaigns WHERE org_id = %s AND website_id = ANY(%s) "
        "AND status IN ('scheduled', 'sending'))",
        (operator_id, website_ids, website_ids, week_start(datetime.now(timezone.utc)), org_id, website_ids, org_id,
         website_ids)
    )).fetchone()
    totals = [states_ for states_, _ in per_website.values()]
    return Workload(
        conversations=ConversationCounts(open=sum(s.open for s in totals), resolved=sum(s.resolved for s in totals),
                                         spam=sum(s.spam for s in totals), total=sum(s.total for s in totals)),
        unread=sum(unread for _, unread in per_website.values()), mentions=mentions,
        oldest_waiting_seconds=max(waits) if waits else None, median_first_response_seconds_this_week=median,
        help_documents_published=published, active_campaigns=campaigns)
