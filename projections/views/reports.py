"""The dashboard's reports: what an organization's conversations look like over the last days, read from
the core read models in one snapshot. Days and hours are counted in the caller's time zone."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta, timezone
from typing import Mapping

import msgspec
import psycopg

from commands.errors import Invalid, NotFound
from commands.principal import Principal
from events.ids import parse_id
from projections.views.collections import parse_int
from projections.views.inbox import parse_timezone

DEFAULT_DAYS, MAX_DAYS = 30, 366


class Ratings(msgspec.Struct):
    happy: int = 0
    neutral: int = 0
    unhappy: int = 0


class Day(msgspec.Struct, rename="camel"):
    date: date
    conversations: int
    # the median, over the conversations started that day, of the wait from the visitor's first message
    # to the team's first reply (internal notes do not count); null when none was answered
    median_first_response_seconds: float | None
    ratings: Ratings


class WebsiteTotal(msgspec.Struct, rename={"website_id": "websiteId", "website_name": "websiteName"}):
    website_id: uuid.UUID
    website_name: str
    conversations: int


class Report(msgspec.Struct, rename={"busiest_hours": "busiestHours", "by_website": "byWebsite"}):
    timezone: str
    days: list[Day]
    busiest_hours: list[int]  # visitors' messages per hour of the day, 0 to 23
    by_website: list[WebsiteTotal]


FIRST_RESPONSES = """
SELECT day, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM (
    SELECT (c.created_at AT TIME ZONE %(zone)s)::date AS day,
           EXTRACT(EPOCH FROM (SELECT min(o.creation_time) FROM rm_messages o
                               WHERE o.org_id = c.org_id AND o.conversation_id = c.id AND o.sender = 'operator'
                                 AND NOT o.internal AND o.creation_time >= first.at) - first.at) AS seconds
    FROM rm_conversations c
    CROSS JOIN LATERAL (SELECT min(m.creation_time) AS at FROM rm_messages m
                        WHERE m.org_id = c.org_id AND m.conversation_id = c.id AND m.sender = 'customer'
                          AND NOT m.internal) AS first
    WHERE c.org_id = %(org)s AND c.created_at >= %(since)s AND first.at IS NOT NULL {website}
) AS answered WHERE seconds IS NOT NULL GROUP BY day
"""


def parse_days(params: Mapping[str, str]) -> int:
    days = parse_int(params, "days", DEFAULT_DAYS)
    if not 1 <= days <= MAX_DAYS:
        raise Invalid(f"days must be 1 to {MAX_DAYS}", "days")
    return days


async def website_filter(conn: psycopg.AsyncConnection, principal: Principal,
                         params: Mapping[str, str]) -> uuid.UUID | None:
    raw = params.get("websiteId")
    if raw is None:
        return None
    website_id = parse_id(raw)
    if website_id is None:
        raise Invalid("websiteId is not an id", "websiteId")
    if not await (await conn.execute(
            "SELECT 1 FROM rm_websites WHERE id = %s AND org_id = %s", (website_id, principal.org_id))).fetchone():
        raise NotFound("website not found", "websiteId")
    return website_id


async def read_report(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str]) -> Report:
    days, zone = parse_days(params), parse_timezone(params)
    website_id = await website_filter(conn, principal, params)
    today = datetime.now(timezone.utc).astimezone(zone).date()
    first_day = today - timedelta(days=days - 1)
    since = datetime.combine(first_day, datetime.min.time(), zone)
    args = {"zone": zone.key, "org": principal.org_id, "since": since, "website": website_id}
    website = "AND {alias}website_id = %(website)s" if website_id else ""

    async def rows(sql: str, alias: str = "") -> list[tuple]:
        return await (await conn.execute(sql.format(website=website.format(alias=alias)), args)).fetchall()

    started = dict(await rows(
        "SELECT (created_at AT TIME ZONE %(zone)s)::date, count(*) FROM rm_conversations "
        "WHERE org_id = %(org)s AND created_at >= %(since)s {website} GROUP BY 1"))
    medians = dict(await rows(FIRST_RESPONSES, "c."))
    ratings: dict[date, Ratings] = {}
    for day, rating, count in await rows(
            "SELECT (rating_time AT TIME ZONE %(zone)s)::date, rating, count(*) FROM rm_messages "
            "WHERE org_id = %(org)s AND rating_time >= %(since)s {website} GROUP BY 1, 2"):
        setattr(ratings.setdefault(day, Ratings()), rating, count)
    hours = [0] * 24
    for hour, count in await rows(
            "SELECT extract(hour FROM creation_time AT TIME ZONE %(zone)s)::int, count(*) FROM rm_messages "
            "WHERE org_id = %(org)s AND creation_time >= %(since)s AND sender = 'customer' AND NOT internal "
            "{website} GROUP BY 1"):
        hours[hour] = count
    by_website = [WebsiteTotal(*row) for row in await rows(
        "SELECT w.id, w.name, count(c.id) FROM rm_websites w LEFT JOIN rm_conversations c "
        "ON c.org_id = w.org_id AND c.website_id = w.id AND c.created_at >= %(since)s "
        "WHERE w.org_id = %(org)s GROUP BY w.id, w.name ORDER BY w.name")]
    return Report(zone.key, [
        Day(day, started.get(day, 0), medians.get(day), ratings.get(day, Ratings()))
        for day in (first_day + timedelta(days=n) for n in range(days))], hours, by_website)
