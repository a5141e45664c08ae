"""Websites' business hours (set whole by an admin, checked before anything is stored) and the away reply
the away worker posts once per conversation."""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from commands.admin import Created
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import now
from events import types as ev
from events.ids import new_id
from events.store import EventStore, Pending, StreamConflict

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
CLOCK = re.compile(r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$")
MAX_RANGES_PER_DAY = 12
MAX_HOLIDAYS = 400
MAX_AWAY_MESSAGE = 2000
AWAY_AUTHOR = "away"  # the author of an away reply (sender operator, no operator)


# One opening range, ["09:00", "17:00"]: a two-item array (not a tuple, whose JSON Schema, prefixItems, some
# OpenAPI tools cannot read).
OpeningRange = Annotated[list[str], msgspec.Meta(min_length=2, max_length=2)]


class HoursUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """A website's business hours, whole: `{timezone, weekly, holidays, awayMessage}`."""

    timezone: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    weekly: dict[str, list[OpeningRange]]
    holidays: list[str] = []
    away_message: Annotated[str, msgspec.Meta(max_length=MAX_AWAY_MESSAGE)] | None = None


def check_hours(body: HoursUpdate) -> None:
    """Refuses, naming the field, a time zone that is not an IANA name, a day that is not mon..sun, a time
    that is not HH:MM (an end may be 24:00), an empty range, a holiday that is not a date."""
    try:
        if body.timezone.startswith(("/", ".")) or "\\" in body.timezone:
            raise ValueError(body.timezone)
        ZoneInfo(body.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"unknown time zone {body.timezone!r}: use an IANA name such as Europe/Paris", "timezone") from None
    for day, ranges in body.weekly.items():
        if day not in DAYS:
            raise Invalid(f"weekly's days are {', '.join(DAYS)}, not {day!r}", f"weekly.{day}")
        if len(ranges) > MAX_RANGES_PER_DAY:
            raise Invalid(f"at most {MAX_RANGES_PER_DAY} ranges a day", f"weekly.{day}")
        for index, (start, end) in enumerate(ranges):
            where = f"weekly.{day}[{index}]"
            if not CLOCK.match(start) or not (CLOCK.match(end) or end == "24:00"):
                raise Invalid("a range is [start, end] as HH:MM (an end may be 24:00)", where)
            if start == end:
                raise Invalid("a range must not be empty (an end before its start runs past midnight)", where)
    if len(body.holidays) > MAX_HOLIDAYS:
        raise Invalid(f"at most {MAX_HOLIDAYS} holidays", "holidays")
    for index, holiday in enumerate(body.holidays):
        try:
            if len(holiday) != 10:
                raise ValueError(holiday)
            date.fromisoformat(holiday)
        except ValueError:
            raise Invalid("a holiday is a date, YYYY-MM-DD", f"holidays[{index}]") from None


def set_hours(store: EventStore, principal: Principal, website_id: uuid.UUID, body: HoursUpdate) -> Created:
    """Whole, so it decides nothing from a stream: each change is a stream of its own."""
    check_hours(body)
    stream_id = new_id()
    position = store.append(Pending(stream_id, 1, ev.BusinessHoursSet(
        org_id=principal.org_id, at=now(), website_id=website_id, timezone=body.timezone,
        weekly={day: [list(r) for r in body.weekly[day]] for day in DAYS if day in body.weekly},
        holidays=sorted(set(body.holidays)), away_message=body.away_message or None)))
    return Created(stream_id, position)


def away_reply_id(conversation_id: uuid.UUID) -> uuid.UUID:
    """The away reply's message id, one per conversation: its stream's first version can be written once."""
    return uuid.uuid5(conversation_id, "parley:away-reply")


def post_away_reply(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID, conversation_id: uuid.UUID,
                    content: str) -> int | None:
    """Posts the conversation's away reply; None when it was posted already (by this worker before a kill, or
    by another)."""
    message_id = away_reply_id(conversation_id)
    try:
        return store.append(Pending(message_id, 1, ev.MessageCreated(
            org_id=org_id, at=now(), message_id=message_id, conversation_id=conversation_id, website_id=website_id,
            content=content, sender="operator", author=AWAY_AUTHOR)))
    except StreamConflict:
        return None
