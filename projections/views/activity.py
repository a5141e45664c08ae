"""Reading the activity read model (`rm_activity_conversations`, `rm_activity_days`): conversations' message
counts and waiting visitors, and activity per UTC day. No query reads a message or a customer."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta, timezone

import msgspec
import psycopg

DAYS = 7


class DayCounts(msgspec.Struct):
    day: date  # UTC
    conversations: int  # started
    visitor_messages: int
    replies: int  # the team's


async def conversation_activity(conn: psycopg.AsyncConnection, ids: list[uuid.UUID]
                                ) -> dict[uuid.UUID, tuple[int, bool]]:
    """Per conversation given: its message count and whether its visitor awaits a reply."""
    rows = await (await conn.execute(
        "SELECT id, message_count, awaiting_since IS NOT NULL FROM rm_activity_conversations WHERE id = ANY(%s)",
        (ids,))).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


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


async def activity_by_day(conn: psycopg.AsyncConnection, website_ids: list[uuid.UUID], count: int = DAYS
                          ) -> list[DayCounts]:
    """The last `count` UTC days, oldest first, summed over the websites; a quiet day is zeros."""
    today = datetime.now(timezone.utc).date()
    first = today - timedelta(days=count - 1)
    rows = await (await conn.execute(
        "SELECT day, sum(conversations)::bigint, sum(visitor_messages)::bigint, sum(replies)::bigint "
        "FROM rm_activity_days WHERE website_id = ANY(%s) AND day >= %s GROUP BY day", (website_ids, first)
    )).fetchall()
    found: dict[date, tuple] = {row[0]: row[1:] for row in rows}
    return [DayCounts(day, *found.get(day, (0, 0, 0))) for day in (first + timedelta(days=n) for n in range(count))]
