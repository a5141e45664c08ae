"""What every benchmark computes from its samples."""

from __future__ import annotations


def percentile(samples: list[float], p: float) -> float:
    """The sample at rank p (0-100) of the sorted samples, the nearest one."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
