"""The queries behind the summary tools and views: counts from the inbox read model's per-website
counters, waiting and response times and daily activity from the activity read model. No query reads
a message or a customer."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta, timezone

import psycopg

from mcp_server.shapes import ConversationStates, DayActivity

DAYS = 7


def week_start(now: datetime) -> datetime:
    """Monday 00:00 UTC of this week."""
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=today.weekday())


async def websites(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID | None = None
                   ) -> list[tuple[uuid.UUID, str]]:
    return await (await conn.execute(
        "SELECT id, name FROM rm_websites WHERE org_id = %s AND (%s::uuid IS NULL OR id = %s) ORDER BY name, id",
        (org_id, website_id, website_id))).fetchall()


async def states(conn: psycopg.AsyncConnection, website_ids: list[uuid.UUID]
                 ) -> dict[uuid.UUID, tuple[ConversationStates, int]]:
    """Per website: conversations by state, and the unread ones (spam left out), from the counters."""
    rows = await (await conn.execute(
        "SELECT website_id, COALESCE(sum(n) FILTER (WHERE NOT spam AND NOT resolved), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE NOT spam AND resolved), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE spam), 0)::bigint, COALESCE(sum(n), 0)::bigint, "
        "COALESCE(sum(n) FILTER (WHERE unread AND NOT spam), 0)::bigint "
        "FROM rm_inbox_counts WHERE website_id = ANY(%s) GROUP BY website_id", (website_ids,))).fetchall()
    found = {row[0]: (ConversationStates(open=row[1], resolved=row[2], spam=row[3], total=row[4]), row[5])
             for row in rows}
    empty = (ConversationStates(open=0, resolved=0, spam=0, total=0), 0)
    return {website_id: found.get(website_id, empty) for website_id in website_ids}


async def oldest_waiting(conn: psycopg.AsyncConnection, website_ids: list[uuid.UUID]
                         ) -> dict[uuid.UUID, float | None]:
    """Per website, the seconds the longest-waiting visitor of an open (unresolved, not spam)
    conversation has waited: the waiting index in order, up to the first open conversation."""
    rows = await (await conn.execute(
        "SELECT w, extract(epoch FROM now() - (SELECT a.awaiting_since FROM rm_activity_conversations a "
        "JOIN rm_inbox i ON i.id = a.id WHERE a.website_id = w AND a.awaiting_since IS NOT NULL "
        "AND NOT i.resolved AND NOT i.spam ORDER BY a.awaiting_since LIMIT 1))::float8 "
        "FROM unnest(%s::uuid[]) AS w", (website_ids,))).fetchall()
    return {row[0]: row[1] for row in rows}


async def workload(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID | None,
                   website_ids: list[uuid.UUID]) -> dict:
    """The fields every summary shares, over the given websites."""
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
    return dict(
        conversations=ConversationStates(open=sum(s.open for s in totals), resolved=sum(s.resolved for s in totals),
                                         spam=sum(s.spam for s in totals), total=sum(s.total for s in totals)),
        unread=sum(unread for _, unread in per_website.values()), mentions=mentions,
        oldest_waiting_seconds=max(waits) if waits else None, median_first_response_seconds_this_week=median,
        help_documents_published=published, active_campaigns=campaigns)


async def days(conn: psycopg.AsyncConnection, website_ids: list[uuid.UUID], count: int = DAYS) -> list[DayActivity]:
    """The last `count` UTC days, oldest first, summed over the websites; a quiet day is zeros."""
    today = datetime.now(timezone.utc).date()
    first = today - timedelta(days=count - 1)
    rows = await (await conn.execute(
        "SELECT day, sum(conversations)::bigint, sum(visitor_messages)::bigint, sum(replies)::bigint "
        "FROM rm_activity_days WHERE website_id = ANY(%s) AND day >= %s GROUP BY day", (website_ids, first)
    )).fetchall()
    found: dict[date, tuple] = {row[0]: row[1:] for row in rows}
    result = []
    for offset in range(count):
        day = first + timedelta(days=offset)
        conversations, visitor, replies = found.get(day, (0, 0, 0))
        result.append(DayActivity(day=day.isoformat(), conversations=conversations, visitor_messages=visitor,
                                  replies=replies))
    return result
