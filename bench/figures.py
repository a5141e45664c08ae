"""What every benchmark computes from its samples, and how it reports its goals and exits."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from collections.abc import Iterable
from typing import NoReturn


def percentile(samples: list[float], p: float) -> float:
    """The sample at rank p (0-100) of the sorted samples, the nearest one."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Goal:
    """One goal a benchmark checks: what it asks, whether the run met it, and the figure that says so."""

    name: str
    met: bool
    figure: str

    @classmethod
    def at_most(cls, name: str, value: float, limit: float, unit: str = "ms") -> Goal:
        return cls(f"{name} <= {limit:g} {unit}".rstrip(), value <= limit, f"{value:,.2f} {unit}".rstrip())

    @classmethod
    def at_least(cls, name: str, value: float, limit: float, unit: str = "") -> Goal:
        return cls(f"{name} >= {limit:g} {unit}".rstrip(), value >= limit, f"{value:,.2f} {unit}".rstrip())


def finish(goals: Iterable[Goal]) -> NoReturn:
    """Prints every goal with its figure, met or MISSED, and the machine's load average; exits 1 when a goal
    was missed, else 0."""
    goals = list(goals)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"\ngoals (load average {load} on {os.cpu_count()} CPUs):")
    for goal in goals:
        print(f"  {'met   ' if goal.met else 'MISSED'}  {goal.name}: {goal.figure}")
    missed = sum(not goal.met for goal in goals)
    print(f"{missed} of {len(goals)} goals MISSED" if missed else f"all {len(goals)} goals met")
    sys.exit(1 if missed else 0)
