"""The business-hours math (`projections.views.business_hours.open_state`) and the checks on hours given
(`commands.hours.check_hours`): time zones, DST, holidays, ranges past midnight."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import msgspec
import pytest

from commands.errors import Invalid
from commands.hours import HoursUpdate, check_hours
from projections.views.business_hours import DEFAULT_HOURS, BusinessHours, business_seconds, open_state

PARIS = ZoneInfo("Europe/Paris")
WEEKDAYS = {day: [("09:00", "17:00")] for day in ("mon", "tue", "wed", "thu", "fri")}


def paris(*args) -> datetime:
    return datetime(*args, tzinfo=PARIS)


def hours(weekly=None, holidays=(), zone="Europe/Paris") -> BusinessHours:
    return BusinessHours(zone, WEEKDAYS if weekly is None else weekly, list(holidays), "We're away")


def test_open_within_a_range_in_the_websites_zone_and_closed_outside_it():
    h = hours()
    assert open_state(h, paris(2026, 11, 25, 9, 0)).open  # a Wednesday, the start is inside
    assert open_state(h, paris(2026, 11, 25, 16, 59)).open
    closed = open_state(h, paris(2026, 11, 25, 17, 0))  # the end is outside
    assert not closed.open and closed.next_open_at == paris(2026, 11, 26, 9, 0)
    # the same instant seen from UTC: 08:30 UTC is 09:30 in Paris (winter, UTC+1)
    assert open_state(h, datetime(2026, 11, 25, 8, 30, tzinfo=timezone.utc)).open
    assert not open_state(h, datetime(2026, 11, 25, 7, 30, tzinfo=timezone.utc)).open


def test_the_weekend_waits_for_monday():
    state = open_state(hours(), paris(2026, 11, 28, 12, 0))  # Saturday
    assert not state.open and state.next_open_at == paris(2026, 11, 30, 9, 0)
    assert state.next_open_at.tzinfo is not None


def test_a_range_past_midnight_runs_into_the_next_day():
    night = hours({"fri": [("22:00", "02:00")]})
    assert open_state(night, paris(2026, 11, 27, 23, 0)).open  # Friday night
    assert open_state(night, paris(2026, 11, 28, 1, 59)).open  # Saturday, still Friday's range
    later = open_state(night, paris(2026, 11, 28, 2, 0))
    assert not later.open and later.next_open_at == paris(2026, 12, 4, 22, 0)
    assert not open_state(night, paris(2026, 11, 27, 1, 0)).open  # Thursday's night has no range
    whole = hours({"mon": [("00:00", "24:00")]})
    assert open_state(whole, paris(2026, 11, 30, 23, 59)).open
    assert not open_state(whole, paris(2026, 12, 1, 0, 0)).open


def test_holidays_close_the_ranges_starting_that_day_only():
    h = hours(holidays=["2026-12-25"])
    christmas = open_state(h, paris(2026, 12, 25, 10, 0))
    assert not christmas.open and christmas.next_open_at == paris(2026, 12, 28, 9, 0)  # Friday off, then Monday
    assert open_state(h, paris(2026, 12, 24, 10, 0)).open
    night = hours({"thu": [("22:00", "02:00")], "fri": [("22:00", "02:00")]}, holidays=["2026-12-25"])
    assert open_state(night, paris(2026, 12, 25, 1, 0)).open  # Thursday's range, begun the evening before
    assert not open_state(night, paris(2026, 12, 25, 23, 0)).open  # Friday's own range is off
    assert open_state(night, paris(2026, 12, 25, 23, 0)).next_open_at == paris(2026, 12, 31, 22, 0)


def test_ranges_keep_their_wall_clock_hours_across_dst():
    h = hours()
    # Paris moves from UTC+1 to UTC+2 on Sunday 29 March 2026: 09:00 is 08:00 UTC before, 07:00 UTC after
    assert open_state(h, datetime(2026, 3, 27, 8, 0, tzinfo=timezone.utc)).open
    assert not open_state(h, datetime(2026, 3, 30, 6, 59, tzinfo=timezone.utc)).open
    assert open_state(h, datetime(2026, 3, 30, 7, 0, tzinfo=timezone.utc)).open
    sunday = open_state(h, paris(2026, 3, 29, 12, 0))
    assert sunday.next_open_at == datetime(2026, 3, 30, 7, 0, tzinfo=timezone.utc)


def test_a_range_starting_in_the_dst_gap_starts_after_the_change():
    early = hours({"sun": [("02:30", "05:00")]})
    # 02:30 does not exist in Paris on 29 March 2026 (02:00 -> 03:00): read with the offset before (UTC+1),
    # it is 01:30 UTC, i.e. 03:30 local
    state = open_state(early, datetime(2026, 3, 29, 0, 0, tzinfo=timezone.utc))
    assert state.next_open_at == datetime(2026, 3, 29, 1, 30, tzinfo=timezone.utc)
    assert open_state(early, datetime(2026, 3, 29, 1, 45, tzinfo=timezone.utc)).open


def test_other_zones_and_the_default_that_is_always_open():
    tokyo = hours(zone="Asia/Tokyo")
    # 01:00 UTC on a Wednesday is 10:00 in Tokyo
    assert open_state(tokyo, datetime(2026, 11, 25, 1, 0, tzinfo=timezone.utc)).open
    assert not open_state(hours(zone="America/New_York"), datetime(2026, 11, 25, 13, 59, tzinfo=timezone.utc)).open
    assert open_state(hours(zone="America/New_York"), datetime(2026, 11, 25, 14, 0, tzinfo=timezone.utc)).open
    for at in (paris(2026, 11, 28, 3, 0), paris(2026, 12, 25, 23, 59)):
        assert open_state(DEFAULT_HOURS, at).open and open_state(None, at).open
    never = open_state(hours({}), paris(2026, 11, 25, 10, 0))
    assert not never.open and never.next_open_at is None


@pytest.mark.parametrize("body, field", [
    ({"timezone": "Mars/Olympus", "weekly": {}}, "timezone"),
    ({"timezone": "../../etc/passwd", "weekly": {}}, "timezone"),
    ({"timezone": "/usr/share/zoneinfo/UTC", "weekly": {}}, "timezone"),
    ({"timezone": "UTC", "weekly": {"monday": [["09:00", "17:00"]]}}, "weekly.monday"),
    ({"timezone": "UTC", "weekly": {"mon": [["9:00", "17:00"]]}}, "weekly.mon[0]"),
    ({"timezone": "UTC", "weekly": {"mon": [["09:00", "25:00"]]}}, "weekly.mon[0]"),
    ({"timezone": "UTC", "weekly": {"mon": [["24:00", "09:00"]]}}, "weekly.mon[0]"),
    ({"timezone": "UTC", "weekly": {"mon": [["09:00", "09:00"]]}}, "weekly.mon[0]"),
    ({"timezone": "UTC", "weekly": {}, "holidays": ["2026-02-30"]}, "holidays[0]"),
    ({"timezone": "UTC", "weekly": {}, "holidays": ["25/12/2026"]}, "holidays[0]"),
])
def test_bad_hours_are_refused_naming_the_field(body, field):
    with pytest.raises(Invalid) as refused:
        check_hours(msgspec.convert(body, HoursUpdate))
    assert refused.value.field == field


def test_good_hours_pass():
    check_hours(msgspec.convert({"timezone": "Europe/Paris", "weekly": {"mon": [["09:00", "12:00"], ["13:00", "24:00"]],
                                 "sat": [["22:00", "02:00"]]}, "holidays": ["2026-12-25"],
                                 "awayMessage": "Back soon"}, HoursUpdate))


def test_business_seconds_count_only_the_open_hours_between_two_times():
    # Monday 16:00 to Tuesday 10:00 in Paris, open 09:00-17:00 on weekdays: one hour each day
    assert business_seconds(hours(), paris(2026, 11, 23, 16), paris(2026, 11, 24, 10)) == 7200
    # a weekend and a holiday count nothing; without hours, every second counts
    assert business_seconds(hours(holidays=["2026-11-30"]), paris(2026, 11, 28, 8), paris(2026, 12, 1, 9)) == 0
    assert business_seconds(None, paris(2026, 11, 28, 8), paris(2026, 11, 28, 9)) == 3600
    assert business_seconds(hours(), paris(2026, 11, 24, 10), paris(2026, 11, 24, 9)) == 0  # an end before its start
