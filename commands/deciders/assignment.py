"""Whom automatic assignment gives a new conversation: a pure choice among the operators who may take it, so
that the same state always gives the same operator (the assigner replays nothing twice, but a test can)."""

from __future__ import annotations

import uuid
from typing import Mapping, Sequence


def choose_assignee(mode: str, online: Sequence[uuid.UUID], open_counts: Mapping[uuid.UUID, int], capacity: int,
                    last: uuid.UUID | None) -> uuid.UUID | None:
    """The operator to assign among the `online` ones below `capacity` open conversations: `round-robin` takes
    the first after `last` (the one assigned before) in id order, wrapping around; `least-busy` the one with
    the fewest, ties broken the same way. None when nobody may take it (or the mode is `off`)."""
    if mode not in ("round-robin", "least-busy"):
        return None
    free = sorted(operator for operator in set(online) if open_counts.get(operator, 0) < capacity)
    if not free:
        return None
    after = [operator for operator in free if last is not None and operator > last]
    turn = after + [operator for operator in free if operator not in after]  # the rotation, from after `last`
    if mode == "round-robin":
        return turn[0]
    fewest = min(open_counts.get(operator, 0) for operator in turn)
    return next(operator for operator in turn if open_counts.get(operator, 0) == fewest)
