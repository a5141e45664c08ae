"""History benchmark: an organization's events streamed as NDJSON (`GET /api/events`, through HTTP) and
exported to Parquet (`parley events export`), against the floor of PostgreSQL's own
`COPY (SELECT … FROM parley_events) TO STDOUT` in the same run, and the peak memory of each.

    .venv/bin/python -m bench.history --events 1000000

Seeding writes a realistic mix through the event store, thousands of events per append: per conversation
a customer, the conversation, 8 messages (some 200 characters long), a read receipt, a rating, a reaction
and a resolution (14 events); another organization holds a tenth as many, which the filter skips. The
floor copies every row of the events table (position, stream, type, stored JSON) and reads it all in
Python, which does nothing with it. The NDJSON figure is the whole response read by a client in this
process from a `parley serve` process; the Parquet figure is the export's own time in a child process
(`events.export.export`, what the CLI runs), after its imports. Memory: the peak resident size of the
exporting child, and the API process's growth while it streams. Goals: NDJSON at 0.5x the floor or
better, Parquet at 0.25x or better, memory under 300 MB whatever the size; the script exits 1 naming each
goal missed. The floor is measured before, between and after the two figures (their mean is the floor);
the API process is warmed up first (a short read, then until its start-up work, the search model's
loading, has settled).

PostgreSQL and NATS: embedded ones under a temporary data directory (fsync off).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psutil
import psycopg

from bench.figures import Goal, finish
from bench.serve import start_serve, wait_projected
from commands import admin
from events.sealing import Sealer
from events import types as ev
from events.store import EVENTS_TABLE, EventStore, Pending
from parley.runtime import Infrastructure
from parley.settings import load_settings

APPEND_CHUNK = 5000
PER_CONVERSATION = 14
MEMORY_GOAL_MB = 300
NDJSON_GOAL = 0.5
PARQUET_GOAL = 0.25
SETTLED_CPU_PERCENT = 5  # the API process is warm once it uses less than this of a CPU for a second
SETTLE_SECONDS = 180


def seed(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID, events: int, rng: random.Random) -> None:
    """About `events` events for the organization, a conversation (14 events) at a time."""
    start = datetime.now(timezone.utc) - timedelta(days=60)
    pending: list[Pending] = []
    for n in range(max(1, events // PER_CONVERSATION)):
        at = start + timedelta(seconds=n * 5)
        customer, conversation = uuid.uuid4(), uuid.uuid4()
        pending.append(Pending(customer, 1, ev.CustomerCreated(org_id=org_id, at=at, customer_id=customer,
                                                               website_id=website_id, email=f"v{n}@example.com")))
        pending.append(Pending(conversation, 1, ev.ConversationCreated(
            org_id=org_id, at=at, conversation_id=conversation, website_id=website_id, customer_id=customer)))
        messages = []
        for i in range(8):
            message = uuid.uuid4()
            messages.append(message)
            content = "How do I export my invoices? " * (7 if i % 3 == 0 else 1)
            pending.append(Pending(message, 1, ev.MessageCreated(
                org_id=org_id, at=at + timedelta(seconds=i), message_id=message, conversation_id=conversation,
                website_id=website_id, content=content, sender="customer" if i % 2 == 0 else "operator")))
        pending.append(Pending(messages[0], 2, ev.MessageRead(org_id=org_id, at=at, message_id=messages[0],
                                                              conversation_id=conversation)))
        pending.append(Pending(messages[1], 2, ev.MessageRated(org_id=org_id, at=at, message_id=messages[1],
                                                               conversation_id=conversation,
                                                               rating=rng.choice(["happy", "sad"]), sender="customer")))
        pending.append(Pending(messages[3], 2, ev.MessageReactionsChanged(
            org_id=org_id, at=at, message_id=messages[3], conversation_id=conversation, sender="customer",
            person_id=customer, emoji="🎉", reactions=(ev.Reaction("🎉", "customer", customer),))))
        pending.append(Pending(conversation, 2, ev.ConversationUpdated(org_id=org_id, at=at,
                                                                       conversation_id=conversation, resolved=True)))
        if len(pending) >= APPEND_CHUNK:
            store.append(*pending)
            pending = []
    if pending:
        store.append(*pending)


def floor(database_url: str) -> tuple[float, int]:
    """Seconds to COPY the whole events table out, and the rows."""
    rows = 0
    with psycopg.connect(database_url) as conn:
        started = time.perf_counter()
        with conn.cursor().copy(f"COPY (SELECT notification_id, originator_id, topic, state FROM {EVENTS_TABLE}) "
                                "TO STDOUT") as copy:
            for block in copy:
                rows += bytes(block).count(b"\n")
        return time.perf_counter() - started, rows


def ndjson(base_url: str, token: str, api: psutil.Process) -> tuple[float, int, float]:
    """Seconds to read the whole `GET /api/events` response, its event lines, and the API process's
    growth in MB meanwhile."""
    before, peak, done = api.memory_info().rss, [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], api.memory_info().rss)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()
    lines = 0
    with httpx.Client(base_url=base_url, timeout=600) as client:
        started = time.perf_counter()
        with client.stream("GET", "/api/events", headers={"Authorization": f"Token {token}"}) as response:
            assert response.status_code == 200, response.read()
            for chunk in response.iter_bytes(1 << 16):
                lines += chunk.count(b"\n")
        elapsed = time.perf_counter() - started
    done.set()
    return elapsed, lines - 1, max(0, peak[0] - before) / 2**20  # less the trailer line


def warm_up(base_url: str, token: str, api: psutil.Process) -> None:
    """A short read of the history (its code paths, prepared statements, pool connections), then a wait
    until the API process has settled: it loads the search model in the background after it starts (a few
    hundred MB and seconds of CPU, tens on a busy machine), which `/readyz` tells."""
    deadline = time.monotonic() + SETTLE_SECONDS
    with httpx.Client(base_url=base_url, timeout=600) as client:
        response = client.get("/api/events", params={"limit": 1000}, headers={"Authorization": f"Token {token}"})
        assert response.status_code == 200, response.text
        while client.get("/readyz").json()["search"]["model"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.5)
    while api.cpu_percent(1.0) >= SETTLED_CPU_PERCENT and time.monotonic() < deadline:
        pass


def export_child(database_url: str, org_id: str, out: str) -> None:
    """Runs in a child process: the export, timed after the imports; prints its figures."""
    from events.export import export
    from projections.views.history_query import history_filter

    with psycopg.connect(database_url, autocommit=True) as conn:
        started = time.perf_counter()
        manifest = export(conn, history_filter(uuid.UUID(org_id), {}), Path(out))
        elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "rows": sum(manifest.files.values()),
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def parquet(database_url: str, org_id: uuid.UUID, out: Path) -> dict:
    result = subprocess.run([sys.executable, "-m", "bench.history", "--export-child", database_url, str(org_id),
                             str(out)], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--export-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_child:
        export_child(*args.export_child)
        return

    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        settings = load_settings(data_dir=Path(tmp), embedded_fsync=False)
        infra = Infrastructure(settings).start(reuse_running=False)
        store = EventStore(infra.database_url, pool_size=2)
        api = None
        try:
            org = admin.create_org(store, "History").id
            website, _ = admin.create_website(store, Sealer.generate(), org, "history-bench", None)
            _, token = admin.create_operator(store, org, "analyst@example.com", "correct horse")
            other = admin.create_org(store, "Other").id
            other_website, _ = admin.create_website(store, Sealer.generate(), other, "other-bench", None)
            started = time.perf_counter()
            seed(store, org, website.id, args.events, random.Random(args.seed))
            seed(store, other, other_website.id, args.events // 10, random.Random(args.seed))
            seeded = time.perf_counter() - started
            with psycopg.connect(infra.database_url, autocommit=True) as conn:
                conn.execute(f"VACUUM ANALYZE {EVENTS_TABLE}")
            env = {**os.environ, "PARLEY_DATABASE_URL": infra.database_url, "PARLEY_NATS_URL": infra.nats_url,
                   "PARLEY_LOG_LEVEL": "WARNING", "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000"}
            api, base_url = start_serve(Path(tmp) / "api", env)
            wait_projected(infra.database_url, store.head())  # the analyst's token is in the core read model
            warm_up(base_url, token, psutil.Process(api.pid))
            floor(infra.database_url)  # warm-up: the table in the cache
            floors = [floor(infra.database_url)[0]]
            stream_seconds, lines, stream_mb = ndjson(base_url, token, psutil.Process(api.pid))
            floor_seconds, table_rows = floor(infra.database_url)
            floors.append(floor_seconds)
            exported = parquet(infra.database_url, org, Path(tmp) / "export")
            floors.append(floor(infra.database_url)[0])
        finally:
            if api:
                api.terminate()
                api.wait(30)
            store.close()
            infra.stop()

    floor_rate = table_rows / (sum(floors) / len(floors))
    stream_rate = lines / stream_seconds
    export_rate = exported["rows"] / exported["seconds"]
    print(f"\n{lines:,} events of the organization among {table_rows:,} in the table (seeded in {seeded:.0f} s); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"floor, COPY (SELECT ... FROM {EVENTS_TABLE}) TO STDOUT: {floor_rate:,.0f} rows/s "
          f"(before, between, after: {', '.join(f'{seconds:.2f} s' for seconds in floors)})")
    print(f"NDJSON, GET /api/events over HTTP: {stream_rate:,.0f} events/s = {stream_rate / floor_rate:.2f}x the floor "
          f"(goal {NDJSON_GOAL}x); API process grew {stream_mb:.0f} MB")
    print(f"Parquet, events.export: {export_rate:,.0f} events/s = {export_rate / floor_rate:.2f}x the floor "
          f"(goal {PARQUET_GOAL}x); peak {exported['peak_mb']:.0f} MB (goal < {MEMORY_GOAL_MB} MB)")
    finish([Goal.at_least("NDJSON x the floor", stream_rate / floor_rate, NDJSON_GOAL, "x"),
            Goal.at_least("Parquet x the floor", export_rate / floor_rate, PARQUET_GOAL, "x"),
            Goal.at_most("the export's peak", exported["peak_mb"], MEMORY_GOAL_MB, "MB"),
            Goal.at_most("the API process's growth", stream_mb, MEMORY_GOAL_MB, "MB")])


if __name__ == "__main__":
    main()
