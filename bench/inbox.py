"""Inbox benchmark: p50/p99 of the inbox read with its counts, beside a floor measured in the same run.

    .venv/bin/python -m bench.inbox --conversations 200000 --websites 5

Seeding is a fast loader that writes the same events the commands append (CustomerCreated,
ConversationCreated, MessageCreated for visitor messages and internal notes with @-mentions,
MessageRead, ConversationUpdated for resolved and spam; and the team's workflow: ConversationAssigned to
one of 10 operators, to one of 4 teams or to both, 40% unassigned; ConversationLabelsChanged with one to
three of 12 labels on 40% of conversations, the first labels the most used; ConversationSnoozed on 2%)
through the event store, thousands per append transaction instead of one per request. The operators,
teams and labels are made by their commands. The read models are then caught up from the store with the
projection runner's own `apply_batch`, in psycopg pipeline mode (statements are sent without waiting for
each answer), and vacuumed so counts over a window can be index-only scans, as autovacuum leaves a
steady-state table. Conversations are spread over the last 30 days; some visitors hold an open realtime
stream (rows in the presence table).

Measured, the views an operator opens: every inboxFilter (all, unread, open = unresolved, mine,
unassigned, ...) x conversationFilter, then the open conversations of a team, of the most used label and
of the least used one, in the whole website and in the last week; each answer carries every tab's count
and the label and team counts the dashboard shows. Each view is read by the function the route calls
(`read_inbox`) on a direct connection, and by the full HTTP request against a `parley serve --role api`
process. The query floor is a bare `SELECT ... FROM rm_inbox WHERE website_id = ... AND NOT spam ORDER BY
last_edit_time DESC, id DESC LIMIT 20`, a page on the `all` tab's index; the HTTP floor is `GET
/api/websites` on the same server (authentication, read-your-writes check and snapshot around one tiny
query). Rounds interleave the floor with every view (the first rounds unmeasured), each round on the next
website. Ratios are p99 against the matching floor's p99. Goal: an HTTP p99 of at most 25 ms for every
view; the script exits 1 when one misses it.

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
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Awaitable, Callable, Iterator

import httpx
import psycopg

from bench.figures import Goal, finish, percentile
from bench.serve import start_serve
from commands import admin
from events.sealing import Sealer
from commands.labels import LabelBody, create_label
from commands.principal import Principal
from commands.teams import TeamBody, create_team
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
WARM_UP = 10  # unmeasured rounds first: two over the websites


@dataclass
class Seeded:
    org_id: uuid.UUID
    websites: list[uuid.UUID]
    operator_id: uuid.UUID
    token: str
    teams: list[uuid.UUID] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # names, the most used first


TEAMS = 4
OPERATORS = 10  # the bench's own operator among them
LABELS = 12
LABEL_WEIGHTS = [1 / (rank + 1) for rank in range(LABELS)]  # the first label the most used, the last the least


def seed_workflow(store: EventStore, org_id: uuid.UUID, operator_id: uuid.UUID) -> tuple[list[uuid.UUID], list[uuid.UUID],
                                                                                           list[tuple[uuid.UUID, str]]]:
    """The organization's operators (the bench's own first), teams and labels, through their commands."""
    owner = Principal("operator", org_id, uuid.uuid4(), operator_id=operator_id)
    operators = [operator_id] + [admin.create_operator(store, org_id, f"op{i}-{uuid.uuid4().hex[:6]}@example.com",
                                                       "correct horse", "agent")[0].id for i in range(1, OPERATORS)]
    teams = [create_team(store, owner, TeamBody(f"Team {i}", [str(o) for o in operators[i::TEAMS]])).id
             for i in range(TEAMS)]
    labels = [(create_label(store, owner, LabelBody(f"label-{i:02}")).id, f"label-{i:02}") for i in range(LABELS)]
    return operators, teams, labels


def workflow_events(org_id: uuid.UUID, conversation: uuid.UUID, version: int, at: datetime, rng: random.Random,
                    operators: list[uuid.UUID], teams: list[uuid.UUID], labels: list[uuid.UUID]) -> list[Pending]:
    """An assignment (45% an operator, with their team half the time; 15% a team only; the rest unassigned),
    labels (40% of conversations, one to three, the first labels the most used) and a snooze (2%)."""
    events = []
    draw = rng.random()
    if draw < 0.6:
        assignee = rng.choice(operators) if draw < 0.45 else None
        team = rng.choice(teams) if assignee is None or rng.random() < 0.5 else None
        events.append(ev.ConversationAssigned(org_id=org_id, at=at, conversation_id=conversation, assignee_id=assignee,
                                              team_id=team))
    if rng.random() < 0.4:
        added = sorted(set(rng.choices(labels, weights=LABEL_WEIGHTS, k=rng.randint(1, 3))))
        events.append(ev.ConversationLabelsChanged(org_id=org_id, at=at, conversation_id=conversation, added=added,
                                                   removed=[]))
    if rng.random() < 0.02:
        events.append(ev.ConversationSnoozed(org_id=org_id, at=at, conversation_id=conversation,
                                             until=at + timedelta(days=60)))
    return [Pending(conversation, version + n, e) for n, e in enumerate(events, 1)]


def seed_events(store: EventStore, conversations: int, websites: int, rng: random.Random) -> Seeded:
    org = admin.create_org(store, "Bench org")
    sites = [admin.create_website(store, Sealer.generate(), org.id, f"bench-{i}-{uuid.uuid4().hex[:6]}", None)[0].id
             for i in range(websites)]
    email = f"bench-{uuid.uuid4().hex[:6]}@example.com"
    operator, token = admin.create_operator(store, org.id, email, "correct horse")
    operators, teams, labels = seed_workflow(store, org.id, operator.id)
    label_ids = [label_id for label_id, _ in labels]
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
        pending.extend(workflow_events(org.id, conversation, version, created, rng, operators, teams, label_ids))
        if len(pending) >= APPEND_CHUNK:
            flush()
    if pending:
        flush()
    elapsed = time.perf_counter() - started
    print(f"appended {count:,} events in {elapsed:.1f}s ({count / elapsed:,.0f} events/s)", flush=True)
    return Seeded(org.id, sites, operator.id, token, teams, [name for _, name in labels])


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
    return statistics.median(samples), percentile(samples, 99)


@dataclass(frozen=True)
class View:
    """One inbox view an operator opens: a tab in a scope, narrowed to a team or a label or not."""

    tab: str
    scope: str
    narrowed: str = "-"  # what the view is narrowed to, as printed
    params: tuple[tuple[str, str], ...] = ()  # the query parameters that narrow it

    def query(self, website_id: uuid.UUID) -> dict[str, str]:
        return {"inboxFilter": self.tab, "conversationFilter": self.scope, "websiteId": str(website_id),
                **dict(self.params)}


def views(seeded: Seeded, scopes: tuple[str, ...] = CONVERSATION_FILTERS) -> list[View]:
    """Every tab in every scope given, then the open conversations of a team, of the most used label and of
    the least used one, in the whole website and in the last week (of those given)."""
    tabs = [View(tab, scope) for tab in INBOX_FILTERS for scope in scopes]
    narrowed = [("team", ("teamId", str(seeded.teams[0]))), (f"label {seeded.labels[0]}", ("labels", seeded.labels[0])),
                (f"label {seeded.labels[-1]}", ("labels", seeded.labels[-1]))]
    return tabs + [View("unresolved", scope, name, (param,)) for name, param in narrowed
                   for scope in ("all", "last-week") if scope in scopes]


# the floor: a page of the same table on the `all` tab's index, newest first, nothing else
FLOOR_QUERY = ("SELECT id, website_id, customer_id, created_at, last_edit_time, resolved, spam, operator_only, unread "
               "FROM rm_inbox WHERE website_id = %s AND NOT spam ORDER BY last_edit_time DESC, id DESC LIMIT 20")

Timings = tuple[tuple[float, float], dict[View, tuple[float, float]]]


async def interleaved(measured: list[View], samples: int, floor: Callable[[int], Awaitable[object]],
                      view: Callable[[View, int], Awaitable[object]]) -> Timings:
    """Rounds of the floor and then every view once, round i on the i-th website (in turn); the first
    WARM_UP rounds unmeasured."""
    async def timed(work: Awaitable[object]) -> float:
        started = time.perf_counter()
        await work
        return (time.perf_counter() - started) * 1000

    floor_times: list[float] = []
    times: dict[View, list[float]] = {v: [] for v in measured}
    for i in range(WARM_UP + samples):
        floor_times.append(await timed(floor(i)))
        for v in measured:
            times[v].append(await timed(view(v, i)))
    return summary(floor_times[WARM_UP:]), {v: summary(t[WARM_UP:]) for v, t in times.items()}


async def measure_queries(database_url: str, seeded: Seeded, measured: list[View], samples: int) -> Timings:
    """The view the route calls (`read_inbox`, counts included) on a direct connection."""
    principal = Principal("operator", seeded.org_id, uuid.uuid4(), operator_id=seeded.operator_id)
    site = seeded.websites
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        async def floor(i: int) -> None:
            await (await conn.execute(FLOOR_QUERY, (site[i % len(site)],))).fetchall()

        return await interleaved(measured, samples, floor,
                                 lambda v, i: read_inbox(conn, principal, v.query(site[i % len(site)])))


def start_api(database_url: str, nats_url: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PARLEY_DATABASE_URL": database_url, "PARLEY_NATS_URL": nats_url,
           "PARLEY_LOG_LEVEL": "WARNING",
           # measured here is the inbox read, not the rate limiter
           "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000"}
    return start_serve(data_dir, env, role="api")


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


async def measure_http(base_url: str, seeded: Seeded, measured: list[View], samples: int) -> Timings:
    """The inbox requests, and as their floor `GET /api/websites`: the same authentication,
    read-your-writes check and snapshot around one tiny query; interleaved as the queries are."""
    site = seeded.websites
    async with httpx.AsyncClient(base_url=base_url, timeout=60, headers={"Authorization": f"Token {seeded.token}"}) as client:
        async def get(path: str, params: dict[str, str] | None = None) -> None:
            response = await client.get(path, params=params)
            assert response.status_code == 200, response.text

        return await interleaved(measured, samples, lambda i: get("/api/websites"),
                                 lambda v, i: get("/api/conversations", v.query(site[i % len(site)])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--websites", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200, help="requests per view")
    parser.add_argument("--online", type=int, default=50, help="visitors per website with an open stream")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scopes", default=",".join(CONVERSATION_FILTERS),
                        help="the conversationFilter values measured, comma-separated (all of them by default)")
    args = parser.parse_args()
    scopes = tuple(args.scopes.split(","))
    if unknown := set(scopes) - set(CONVERSATION_FILTERS):
        parser.error(f"unknown scopes: {', '.join(sorted(unknown))}")

    with seeded_inbox(args.conversations, args.websites, args.seed) as (bench, seeded):
        open_streams(bench.database_url, seeded, args.online)
        measured = views(seeded, scopes)
        (floor_p50, floor_p99), queries = asyncio.run(measure_queries(bench.database_url, seeded, measured,
                                                                      args.samples))
        base_url = bench.start_api()
        (http_p50, http_p99), requests = asyncio.run(measure_http(base_url, seeded, measured, args.samples))

    print(f"\n{args.conversations:,} conversations over {args.websites} websites, {args.samples} samples each")
    print(f"query floor ({FLOOR_QUERY.split(' FROM ')[0][:17]}... LIMIT 20 on the `all` tab's index): "
          f"p50 {floor_p50:.2f} ms, p99 {floor_p99:.2f} ms")
    print(f"HTTP floor (GET /api/websites): p50 {http_p50:.2f} ms, p99 {http_p99:.2f} ms\n")
    print(f"{'tab':<10} {'scope':<9} {'narrowed to':<12} {'query p50':>9} {'p99':>7} {'x floor':>8}   "
          f"{'HTTP p50':>8} {'p99':>7} {'x floor':>8}")
    for v, (q50, q99) in queries.items():
        h50, h99 = requests[v]
        print(f"{v.tab:<10} {v.scope:<9} {v.narrowed:<12} {q50:>9.2f} {q99:>7.2f} {q99 / floor_p99:>8.1f}   "
              f"{h50:>8.2f} {h99:>7.2f} {h99 / http_p99:>8.1f}")
    finish(Goal.at_most(f"HTTP p99 of {v.tab} / {v.scope} / {v.narrowed}", h99, GOAL_MS)
           for v, (_, h99) in requests.items())


if __name__ == "__main__":
    main()
