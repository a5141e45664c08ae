"""Inbox benchmark: p50/p99 of the inbox read with its counts, beside a floor measured in the same run.

    .venv/bin/python -m bench.inbox --conversations 200000 --websites 5

Seeding is a fast loader that writes the same events the commands append (CustomerCreated,
ConversationCreated, MessageCreated for visitor messages and internal notes with @-mentions,
MessageRead, ConversationUpdated for resolved and spam) through the event store, thousands per append
transaction instead of one per request. The read models are then caught up from the store with the
projection runner's own `apply_batch`, in psycopg pipeline mode (statements are sent without waiting
for each answer), and vacuumed so counts over a window can be index-only scans, as autovacuum leaves
a steady-state table. Conversations are spread over the last 30 days; some visitors hold an open
realtime stream (rows in the presence table). Each measured combination starts with a few unmeasured
requests.

Measured, for every inboxFilter x conversationFilter: the read the route runs (`read_inbox`, counts
included) on a direct connection, and the full HTTP request against a `parley serve --role api`
process. The query floor is a plain `SELECT ... FROM rm_inbox WHERE website_id = ... LIMIT 20` on the
same table; the HTTP floor is `GET /api/websites` on the same server (authentication, read-your-writes
check and snapshot around one tiny query). Ratios are p99 against the matching floor's p99, measured in
the same run, so a loaded machine shows in both. The goal is an HTTP p99 under 25 ms for every filter.

PostgreSQL and NATS: the `PARLEY_DATABASE_URL` / `PARLEY_NATS_URL` servers when set, else embedded ones
under a temporary data directory (fsync off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import httpx
import psycopg

from bench.serve import start_serve
from commands import admin
from events.sealing import Sealer
from commands.principal import Principal
from delivery.realtime import PRESENCE_DDL
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id
from parley.runtime import Infrastructure
from parley.settings import load_settings
from projections.agent import AgentProjection
from projections.core import CoreProjection
from projections.inbox import InboxProjection
from projections.runner import apply_batch, current_position, ensure_tables
from projections.views.inbox import CONVERSATION_FILTERS, INBOX_FILTERS, read_inbox

GOAL_MS = 25.0
APPEND_CHUNK = 5000
PROJECT_CHUNK = 5000
WARM_UP = 10  # unmeasured requests first, one round over the websites and then some, per combination


@dataclass
class Seeded:
    org_id: uuid.UUID
    websites: list[uuid.UUID]
    operator_id: uuid.UUID
    token: str


def seed_events(store: EventStore, conversations: int, websites: int, rng: random.Random) -> Seeded:
    org = admin.create_org(store, "Bench org")
    sites = [admin.create_website(store, Sealer.generate(), org.id, f"bench-{i}-{uuid.uuid4().hex[:6]}", None)[0].id
             for i in range(websites)]
    email = f"bench-{uuid.uuid4().hex[:6]}@example.com"
    operator, token = admin.create_operator(store, org.id, email, "correct horse")
    now = datetime.now(timezone.utc)
    pending: list[Pending] = []
    started = time.perf_counter()
    count = 0

    def flush() -> None:
        nonlocal count
        store.append(*pending)
        count += len(pending)
        pending.clear()

    for n in range(conversations):
        site = sites[n % websites]
        created = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
        customer, conversation = new_id(), new_id()
        pending.append(Pending(customer, 1, ev.CustomerCreated(org_id=org.id, at=created, customer_id=customer, website_id=site)))
        pending.append(Pending(conversation, 1, ev.ConversationCreated(
            org_id=org.id, at=created, conversation_id=conversation, website_id=site, customer_id=customer)))
        version = 1
        if rng.random() < 0.9:
            message, at = new_id(), min(created + timedelta(seconds=rng.uniform(0, 600)), now)
            pending.append(Pending(message, 1, ev.MessageCreated(
                org_id=org.id, at=at, message_id=message, conversation_id=conversation, website_id=site, content="help",
                sender="customer")))
            if rng.random() < 0.5:
                pending.append(Pending(message, 2, ev.MessageRead(org_id=org.id, at=at, message_id=message,
                                                                  conversation_id=conversation)))
        if rng.random() < 0.01:
            note = new_id()
            pending.append(Pending(note, 1, ev.MessageCreated(
                org_id=org.id, at=created, message_id=note, conversation_id=conversation, website_id=site,
                content=f"@{email} can you take this?", sender="operator", internal=True, operator_id=operator.id)))
        flags = {}
        if rng.random() < 0.4:
            flags["resolved"] = True
        if rng.random() < 0.03:
            flags["spam"] = True
        if flags:
            version += 1
            pending.append(Pending(conversation, version, ev.ConversationUpdated(
                org_id=org.id, at=created, conversation_id=conversation, **flags)))
        if len(pending) >= APPEND_CHUNK:
            flush()
    if pending:
        flush()
    elapsed = time.perf_counter() - started
    print(f"appended {count:,} events in {elapsed:.1f}s ({count / elapsed:,.0f} events/s)", flush=True)
    return Seeded(org.id, sites, operator.id, token)


# what GET /api/conversations waits for (readapi/routes/resources.py), so its reads are not answered 503
LISTING_READ_MODELS = (CoreProjection, InboxProjection, AgentProjection)


async def project(database_url: str, store: EventStore, projections: tuple = LISTING_READ_MODELS) -> None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for projection in (make() for make in projections):
            started = time.perf_counter()
            await ensure_tables(conn, projection)
            position = await current_position(conn, projection.name)
            applied = 0
            while batch := await asyncio.to_thread(store.read, position, PROJECT_CHUNK):
                async with conn.pipeline():
                    position = (await apply_batch(conn, [projection], batch,
                                                  {projection.name: position}))[projection.name]
                applied += len(batch)
            elapsed = time.perf_counter() - started
            print(f"projected {applied:,} events into {projection.name} in {elapsed:.1f}s", flush=True)
        # what autovacuum would reach after the load; measuring while it runs would measure autovacuum
        await conn.execute("VACUUM ANALYZE")


def open_streams(database_url: str, seeded: Seeded, per_website: int) -> None:
    """Visitors online as the realtime channel records them: one live API instance holding a connection
    for each of the most recent conversations' customers."""
    instance_id = uuid.uuid4()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(PRESENCE_DDL)
        conn.execute("INSERT INTO parley_presence_instances (instance_id, expires_at) "
                     "VALUES (%s, now() + interval '1 day')", (instance_id,))
        for site in seeded.websites:
            conn.execute(
                "INSERT INTO parley_presence_connections (connection_id, instance_id, customer_id, org_id, "
                "website_id, opened_at) SELECT gen_random_uuid(), %s, customer_id, org_id, website_id, now() "
                "FROM rm_inbox WHERE website_id = %s ORDER BY last_edit_time DESC LIMIT %s",
                (instance_id, site, per_website))


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def combos() -> list[dict[str, str]]:
    return [{"inboxFilter": f, "conversationFilter": c} for f in INBOX_FILTERS for c in CONVERSATION_FILTERS]


async def measure_queries(database_url: str, seeded: Seeded, samples: int) -> tuple[tuple[float, float], dict]:
    principal = Principal("operator", seeded.org_id, uuid.uuid4(), operator_id=seeded.operator_id)
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        floor: list[float] = []
        for i in range(WARM_UP + samples):
            started = time.perf_counter()
            await (await conn.execute(
                "SELECT id, website_id, customer_id, created_at, last_edit_time, resolved, spam, operator_only, "
                "unread FROM rm_inbox WHERE website_id = %s LIMIT 20",
                (seeded.websites[i % len(seeded.websites)],))).fetchall()
            floor.append((time.perf_counter() - started) * 1000)
        del floor[:WARM_UP]
        results = {}
        for params in combos():
            times = []
            for i in range(WARM_UP + samples):
                query = {**params, "websiteId": str(seeded.websites[i % len(seeded.websites)])}
                started = time.perf_counter()
                await read_inbox(conn, principal, query)
                times.append((time.perf_counter() - started) * 1000)
            del times[:WARM_UP]
            results[(params["inboxFilter"], params["conversationFilter"])] = summary(times)
    return summary(floor), results


def start_api(database_url: str, nats_url: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PARLEY_DATABASE_URL": database_url, "PARLEY_NATS_URL": nats_url, "PARLEY_ROLE": "api",
           "PARLEY_LOG_LEVEL": "WARNING",
           # measured here is the inbox read, not the rate limiter
           "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000"}
    return start_serve(data_dir, env)


class InboxBench:
    """An embedded PostgreSQL and NATS with the seeded inbox; the API process once `start_api` is called."""

    def __init__(self, tmp: Path, infra: Infrastructure, store: EventStore):
        self.tmp, self.infra, self.store = tmp, infra, store
        self.database_url = infra.database_url
        self.api: subprocess.Popen | None = None

    def start_api(self) -> str:
        self.api, base_url = start_api(self.database_url, self.infra.nats_url, self.tmp / "api")
        return base_url


@contextlib.contextmanager
def seeded_inbox(conversations: int, websites: int, seed: int,
                 read_models: tuple = LISTING_READ_MODELS) -> Iterator[tuple[InboxBench, Seeded]]:
    """The inbox benchmark's data, projected into `read_models`; everything stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        infra = Infrastructure(load_settings(data_dir=Path(tmp), embedded_fsync=False)).start(reuse_running=False)
        store = EventStore(infra.database_url, pool_size=2)
        bench = InboxBench(Path(tmp), infra, store)
        try:
            seeded = seed_events(store, conversations, websites, random.Random(seed))
            asyncio.run(project(infra.database_url, store, read_models))
            yield bench, seeded
        finally:
            if bench.api:
                bench.api.terminate()
                bench.api.wait(30)
            store.close()
            infra.stop()


def measure_http(base_url: str, seeded: Seeded, samples: int) -> tuple[tuple[float, float], dict]:
    """The inbox requests, and as their floor `GET /api/websites`: the same authentication,
    read-your-writes check and snapshot around one tiny query."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Token {seeded.token}"}) as client:
        def timed(path: str, params: dict[str, str]) -> tuple[float, float]:
            times = []
            for i in range(WARM_UP + samples):
                query = {**params, "websiteId": str(seeded.websites[i % len(seeded.websites)])} if params else None
                started = time.perf_counter()
                response = client.get(path, params=query)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, response.text
            return summary(times[WARM_UP:])

        floor = timed("/api/websites", {})
        return floor, {(p["inboxFilter"], p["conversationFilter"]): timed("/api/conversations", p) for p in combos()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--websites", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200, help="requests per filter combination")
    parser.add_argument("--online", type=int, default=50, help="visitors per website with an open stream")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    with seeded_inbox(args.conversations, args.websites, args.seed) as (bench, seeded):
        open_streams(bench.database_url, seeded, args.online)
        (floor_p50, floor_p99), queries = asyncio.run(measure_queries(bench.database_url, seeded, args.samples))
        base_url = bench.start_api()
        (http_p50, http_p99), requests = measure_http(base_url, seeded, args.samples)

    print(f"\n{args.conversations:,} conversations over {args.websites} websites, {args.samples} samples each; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"query floor (SELECT ... FROM rm_inbox WHERE website_id = ... LIMIT 20): "
          f"p50 {floor_p50:.2f} ms, p99 {floor_p99:.2f} ms")
    print(f"HTTP floor (GET /api/websites): p50 {http_p50:.2f} ms, p99 {http_p99:.2f} ms\n")
    print(f"{'inboxFilter':<11} {'scope':<10} {'query p50':>9} {'p99':>7} {'x floor':>8}   "
          f"{'HTTP p50':>8} {'p99':>7} {'x floor':>8}  goal")
    worst = 0.0
    for key, (q50, q99) in queries.items():
        h50, h99 = requests[key]
        worst = max(worst, h99)
        print(f"{key[0]:<11} {key[1]:<10} {q50:>9.2f} {q99:>7.2f} {q99 / floor_p99:>8.1f}   "
              f"{h50:>8.2f} {h99:>7.2f} {h99 / http_p99:>8.1f}  {'ok' if h99 < GOAL_MS else 'MISSED'}")
    print(f"\nworst HTTP p99 {worst:.2f} ms against the {GOAL_MS:.0f} ms goal: {'met' if worst < GOAL_MS else 'missed'}")


if __name__ == "__main__":
    main()
