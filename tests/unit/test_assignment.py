"""Automatic assignment's choice (round-robin and least-busy, capacity) and the website's setting. No server."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timezone

import pytest

from commands.deciders.assignment import choose_assignee
from commands.deciders.website import decide_assignment, website_state
from commands.errors import Invalid
from events import types as ev
from events.store import Recorded

AT = datetime(2026, 1, 2, tzinfo=timezone.utc)
OPERATORS = sorted(uuid.uuid4() for _ in range(5))


def assign_many(mode: str, count: int, capacity: int, online=OPERATORS) -> Counter:
    counts: Counter = Counter()
    last = None
    for _ in range(count):
        chosen = choose_assignee(mode, online, counts, capacity, last)
        if chosen is None:
            break
        counts[chosen] += 1
        last = chosen
    return counts


def test_round_robin_takes_each_online_operator_in_turn_from_after_the_last():
    assert [choose_assignee("round-robin", OPERATORS, {}, 10, last) for last in (None, OPERATORS[0], OPERATORS[4])] \
        == [OPERATORS[0], OPERATORS[1], OPERATORS[0]]
    counts = assign_many("round-robin", 1000, 1000)
    assert sorted(counts.values()) == [200] * 5
    # one that is not online (any more) is passed over, and the turn goes on from where it was
    assert choose_assignee("round-robin", OPERATORS[2:], {}, 10, OPERATORS[0]) == OPERATORS[2]


def test_nobody_gets_more_than_the_capacity_and_then_nobody_is_chosen():
    counts = assign_many("round-robin", 1000, 3)
    assert sum(counts.values()) == 15 and max(counts.values()) == 3
    assert choose_assignee("round-robin", OPERATORS, counts, 3, None) is None
    assert max(assign_many("least-busy", 1000, 4).values()) == 4


def test_least_busy_takes_the_fewest_and_breaks_ties_in_turn():
    counts = {OPERATORS[0]: 3, OPERATORS[1]: 1, OPERATORS[2]: 1, OPERATORS[3]: 2, OPERATORS[4]: 5}
    assert choose_assignee("least-busy", OPERATORS, counts, 10, None) == OPERATORS[1]
    assert choose_assignee("least-busy", OPERATORS, counts, 10, OPERATORS[1]) == OPERATORS[2]
    assert choose_assignee("off", OPERATORS, {}, 10, None) is None
    assert choose_assignee("round-robin", [], {}, 10, None) is None


def website():
    created = ev.WebsiteCreated(org_id=uuid.uuid4(), at=AT, website_id=uuid.uuid4(), name="w", brand_color=None,
                                identity_secret="s")
    return website_state([Recorded(1, created.website_id, 1, created)])


def test_the_website_setting_is_checked_and_the_same_one_appends_nothing():
    site = website()
    assert site.assignment is None
    configured = decide_assignment(site, AT, mode="least-busy", capacity=4, team_id=None, assign_on_reply=True)
    assert [type(p.event).__name__ for p in configured] == ["WebsiteAssignmentConfigured"]
    history = [Recorded(1, site.stream_id, 1, site.created), Recorded(2, site.stream_id, 2, configured[0].event)]
    assert decide_assignment(website_state(history), AT, mode="least-busy", capacity=4, team_id=None,
                             assign_on_reply=True) == []
    for mode, capacity in (("random", 4), ("round-robin", 0), ("round-robin", 10_001)):
        with pytest.raises(Invalid):
            decide_assignment(site, AT, mode=mode, capacity=capacity, team_id=None, assign_on_reply=False)
