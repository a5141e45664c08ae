"""A website's business hours: the read model's query (`projections/hours.py` fills it), the API's shape,
and `open_state`, the pure function saying whether the website is open at a time and when it opens next
(the widget's `GET /api/chat/config` and the away auto-reply both ask it).

The rules, in the website's time zone (wall-clock times, so a range keeps its local hours across DST):
- `weekly` maps "mon".."sun" to ranges [["09:00", "17:00"], ...]; a day left out is closed.
- A range whose end is at or before its start runs past midnight into the next day ("22:00"-"02:00");
  "24:00" as an end is the midnight that ends the day.
- A holiday ("2026-12-25") cancels the ranges that start on that date; one that started the evening
  before runs to its end.
- A wall time that does not exist (skipped by a DST change) counts as the same time after the change;
  one that happens twice counts at its first occurrence.
- A website without business hours is always open (`DEFAULT_HOURS`).

Also the queue of away replies (`away_replies`), which the projection fills and `delivery/away.py` works.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, time, timedelta, timezone
from typing import Iterator
from zoneinfo import ZoneInfo

import msgspec
import psycopg

from commands.hours import OpeningRange

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
SEARCH_DAYS = 400  # how far ahead `nextOpenAt` looks (past a year of holidays)


class BusinessHours(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """`{timezone, weekly, holidays, awayMessage}`."""

    timezone: str
    weekly: dict[str, list[OpeningRange]]
    holidays: list[str] = []
    away_message: str | None = None


DEFAULT_HOURS = BusinessHours("UTC", {day: [["00:00", "24:00"]] for day in DAYS})


class OpenState(msgspec.Struct, rename="camel"):
    open: bool
    next_open_at: datetime | None  # null while open, or when it never opens


def clock(value: str) -> time | None:
    """"HH:MM" as a time; "24:00" is None (the end of the day)."""
    hours, minutes = value.split(":")
    return None if (hours, minutes) == ("24", "00") else time(int(hours), int(minutes))


def local_instant(day: date, at: time | None, zone: ZoneInfo) -> datetime:
    """The instant of a wall-clock time on a day (None: midnight after it), in UTC. With fold=0 (PEP 495) a
    time skipped by a DST change is read with the offset before it (02:30 becomes 03:30 after the change) and
    a repeated one is its first occurrence."""
    if at is None:
        day, at = day + timedelta(days=1), time(0, 0)
    return datetime.combine(day, at, tzinfo=zone).astimezone(timezone.utc)


def opening_ranges(hours: BusinessHours, first: date, days: int) -> Iterator[tuple[datetime, datetime]]:
    """The ranges that start on each of `days` dates from `first`, as UTC instants, in order of their day."""
    zone = ZoneInfo(hours.timezone)
    holidays = set(hours.holidays)
    for offset in range(days):
        day = first + timedelta(days=offset)
        if day.isoformat() in holidays:
            continue
        for start_text, end_text in sorted(hours.weekly.get(DAYS[day.weekday()], [])):
            start, end = clock(start_text), clock(end_text)
            end_day = day + timedelta(days=1) if end is not None and start is not None and end <= start else day
            yield local_instant(day, start, zone), local_instant(end_day, end, zone)


def business_seconds(hours: BusinessHours | None, start: datetime, end: datetime) -> float:
    """The seconds of [start, end) the website was open (all of them without business hours): what a
    response or resolution time counts in "business hours only" reports."""
    if hours is None or end <= start:
        return max(0.0, (end - start).total_seconds())
    first = start.astimezone(ZoneInfo(hours.timezone)).date() - timedelta(days=1)
    days = (end - start).days + 3
    return sum(max(0.0, (min(end, close) - max(start, opening)).total_seconds())
               for opening, close in opening_ranges(hours, first, days))


def open_state(hours: BusinessHours | None, at: datetime) -> OpenState:
    """Whether the website is open at `at` (an aware datetime), and if not, when it opens next."""
    if hours is None:
        return OpenState(True, None)
    at = at.astimezone(timezone.utc)
    today = at.astimezone(ZoneInfo(hours.timezone)).date()
    upcoming: datetime | None = None
    for start, end in opening_ranges(hours, today - timedelta(days=1), SEARCH_DAYS):
        if start <= at < end:
            return OpenState(True, None)
        if start > at and (upcoming is None or start < upcoming):
            upcoming = start
        if upcoming is not None and start - upcoming > timedelta(days=2):
            break  # ranges come day by day: none later can start earlier
    return OpenState(False, upcoming)


def hours_of(row: tuple | None) -> BusinessHours | None:
    if row is None:
        return None
    timezone_name, weekly, holidays, away_message = row
    return BusinessHours(timezone_name, {day: [list(r) for r in ranges] for day, ranges in weekly.items()},
                         list(holidays), away_message)


async def website_hours(conn: psycopg.AsyncConnection, website_id: uuid.UUID) -> BusinessHours | None:
    """The website's business hours, or None when it has none (always open)."""
    return hours_of(await (await conn.execute(
        "SELECT timezone, weekly, holidays, away_message FROM rm_website_hours WHERE website_id = %s",
        (website_id,))).fetchone())


async def all_hours(conn: psycopg.AsyncConnection) -> dict[uuid.UUID, BusinessHours]:
    rows = await (await conn.execute(
        "SELECT website_id, timezone, weekly, holidays, away_message FROM rm_website_hours")).fetchall()
    return {row[0]: hours_of(row[1:]) for row in rows}  # type: ignore[misc]


# The away replies' queue: one row per conversation (its key), so a conversation gets one at most.
DUE_AWAY_REPLIES = """
SELECT conversation_id, org_id, website_id, content FROM away_replies WHERE status = 'pending'
ORDER BY created_at LIMIT %s"""


async def due_away_replies(conn: psycopg.AsyncConnection, limit: int) -> list[tuple[uuid.UUID, uuid.UUID, uuid.UUID, str]]:
    return await (await conn.execute(DUE_AWAY_REPLIES, (limit,))).fetchall()


async def away_reply_posted(conn: psycopg.AsyncConnection, conversation_id: uuid.UUID) -> None:
    await conn.execute("UPDATE away_replies SET status = 'posted', posted_at = now() WHERE conversation_id = %s",
                       (conversation_id,))
