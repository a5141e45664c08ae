"""Soak: `parley serve` on the embedded default at half its measured write capacity for --minutes,
reporting the memory (RSS) of every process of the service at the start and the end (goal: flat within
10%) and the p99 request latency of each minute.

Goals checked: the unique memory (USS, what a leak grows) of the API, the workers and PostgreSQL within 10%
of its size at the start, and no request answered with an error. NATS is reported, not checked: it keeps the
bounded stream in memory, so it grows until the stream is full (docs/benchmarks.md). Exits 1 on a miss.

    uv run --extra test python bench/soak.py --minutes 30 [--clients 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.serve import settled  # noqa: E402
from tests.support.faultkit import Load, Scenario  # noqa: E402
from tests.support.receivers import Receiver  # noqa: E402

GROWTH_PERCENT = 10.0


def memory(scenario: Scenario) -> dict[str, tuple[float, float]]:
    """MiB per role (PostgreSQL's processes summed): resident, and unique to the role's processes. Summed
    resident sizes count PostgreSQL's shared buffers once per backend that has touched them, so they grow
    as backends warm up; the unique size is what a leak would grow."""
    used: dict[str, tuple[float, float]] = {}
    for role, pids in scenario.service.process_ids().items():
        for pid in pids:
            try:
                info = psutil.Process(pid).memory_full_info()
            except psutil.Error:
                continue
            rss, uss = used.get(role, (0.0, 0.0))
            used[role] = (rss + info.rss / 2**20, uss + info.uss / 2**20)
    return used


def change(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:.1f}%" if before else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--measure", type=float, default=10.0, help="seconds of full load to measure capacity")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="parley-soak-") as tmp, Receiver() as receiver:
        scenario = Scenario.start(Path(tmp) / "data", receiver, clients=args.clients)
        try:
            time.sleep(2.0)
            start = time.monotonic()
            time.sleep(args.measure)
            capacity = scenario.writes_per_second(start, time.monotonic())
            scenario.load.stop()
            writers = args.clients
            # half the capacity, shared by the writers (the reader runs at a writer's pace)
            per_client = capacity / 2 / writers
            load = Load(scenario.service.base_url, scenario.tenant, writers, rate=per_client).start()
            print(f"capacity {capacity:.0f} writes/s; soaking at {capacity / 2:.0f} writes/s "
                  f"({per_client:.1f}/s per client) for {args.minutes:g} min")
            time.sleep(5.0)
            settled(scenario.service.base_url, scenario.service.proc.pid)  # the search model loaded first
            first = memory(scenario)
            began = time.monotonic()
            minute, failed = 0, 0
            while time.monotonic() - began < args.minutes * 60:
                time.sleep(min(60.0, began + args.minutes * 60 - time.monotonic()))
                window = load.between(began + minute * 60, began + (minute + 1) * 60)
                latencies = [a.seconds * 1000 for a in window if a.status == 200]
                errors = sum(a.status != 200 for a in window)
                failed += errors
                p99 = f"{percentile(latencies, 99):.1f} ms" if latencies else "-"
                unique = ", ".join(f"{role} {uss:.0f}" for role, (_, uss) in memory(scenario).items())
                print(f"minute {minute + 1}: {len(window)} requests, p99 {p99}, {errors} errors; "
                      f"unique MiB: {unique}")
                minute += 1
            last = memory(scenario)
            load.stop()
            print(f"{'process':<10}{'RSS start':>10}{'end MiB':>9}{'change':>8}{'USS start':>11}{'end MiB':>9}{'change':>8}")
            for role, (rss, uss) in first.items():
                rss_end, uss_end = last.get(role, (0.0, 0.0))
                print(f"{role:<10}{rss:>10.1f}{rss_end:>9.1f}{change(rss, rss_end):>8}"
                      f"{uss:>11.1f}{uss_end:>9.1f}{change(uss, uss_end):>8}")
            goals = [Goal.at_most(f"{role} unique memory growth", (last.get(role, (0.0, 0.0))[1] - uss) / uss * 100,
                                  GROWTH_PERCENT, "%") for role, (_, uss) in first.items() if role != "nats" and uss]
            goals.append(Goal("no request answered with an error", not failed, f"{failed} errors"))
        finally:
            scenario.load.stop()
            scenario.service.terminate()
    finish(goals)


if __name__ == "__main__":
    main()
