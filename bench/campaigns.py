"""A campaign's send rate, and what it costs interactive writes, against floors measured in the same run.

Sends one campaign to `--customers` customers (default 20,000) through a real `parley serve`, and reports:
- recipients per second, from `POST .../send` until the campaign reads `sent` (every batch appended and
  projected), against the floor: single-row INSERT+COMMIT into the same PostgreSQL at the send's own
  concurrency (one writer), measured just before and just after the send (their mean). Goal: at least
  1x the floor (required), 2x aimed at, since a send appends a batch of recipients per transaction;
- the p99 of `POST /api/messages` from `--clients` clients while the send runs, against its p99 with
  no send. Goal: within 2x.

It exits 1 when a required goal is missed (printing which), 0 otherwise (with the aim missed, it says so).

    uv run python bench/campaigns.py [--customers 20000] [--clients 4] [--batch 100]

Uses PARLEY_DATABASE_URL / PARLEY_NATS_URL when set, otherwise embedded servers in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.rawhttp import RawClient  # noqa: E402
from bench.serve import serve_on_fresh_database, wait_projected  # noqa: E402
from bench.write_read import floor_rate  # noqa: E402
from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from commands.streams import now  # noqa: E402
from events import types as ev  # noqa: E402
from events.store import EventStore, Pending  # noqa: E402
from events.ids import new_id  # noqa: E402

SEED_PER_APPEND = 5_000
FLOOR_ROWS = 2_000
QUIET_POSTS = 2_000  # interactive posts measured without a send
RATE_REQUIRED, RATE_AIMED = 1.0, 2.0  # recipients/s against the floor
P99_GOAL = 2.0  # interactive p99 during a send against without


def count_to(total: int):
    """A stop condition that holds once it has been asked `total` times (once per post, by all clients)."""
    asked = itertools.count()
    return lambda: next(asked) >= total


def seed(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID, count: int) -> int:
    position = 0
    for start in range(0, count, SEED_PER_APPEND):
        ids = [new_id() for _ in range(min(SEED_PER_APPEND, count - start))]
        position = store.append(*[Pending(i, 1, ev.CustomerCreated(org_id=org_id, at=now(), customer_id=i,
                                                                   website_id=website_id)) for i in ids])
    return position


async def post_latencies(base_url: str, headers: dict, conversations: list[str], until) -> list[float]:
    """Each client posts to its own conversation, one message after another, until `until()` is true."""
    latencies: list[float] = []

    async def client(conversation: str) -> None:
        raw = RawClient(base_url, headers)
        n = 0
        while not until():
            started = time.perf_counter()
            status, answer = await raw.post("/api/messages", {"conversationId": conversation, "content": f"m{n}",
                                                              "from": "operator"})
            assert status == 200, answer
            latencies.append(time.perf_counter() - started)
            n += 1
        raw.close()

    await asyncio.gather(*(client(c) for c in conversations))
    return latencies


async def measure(base_url: str, headers: dict, website_id: str, chat_website_id: str, clients: int, customers: int,
                  database_url: str) -> list[Goal]:
    """Prints the figures; returns the goals they meet or miss."""
    setup = RawClient(base_url, headers)
    while (await setup.get("/api/websites"))[0] != 200:  # the operator is usable once projected
        await asyncio.sleep(0.05)
    _, customer = await setup.post("/api/customers", {"websiteId": chat_website_id})  # not in the audience
    conversations = []
    for _ in range(clients):
        _, conversation = await setup.post("/api/conversations", {"websiteId": chat_website_id,
                                                                  "customerId": json.loads(customer)["_id"]})
        conversations.append(json.loads(conversation)["_id"])

    await post_latencies(base_url, headers, conversations, count_to(QUIET_POSTS // 4))  # warm-up
    quiet_started = time.perf_counter()
    quiet = await post_latencies(base_url, headers, conversations, count_to(QUIET_POSTS))
    quiet_seconds = time.perf_counter() - quiet_started

    floors = [await asyncio.to_thread(floor_rate, database_url, 1, FLOOR_ROWS)]
    _, created = await setup.post("/api/campaigns", {"websiteId": website_id, "name": "Bench", "content": "Hello!"})
    campaign_id = json.loads(created)["_id"]
    state = {"sent": False}

    async def watch() -> None:
        while True:
            _, body = await setup.get(f"/api/campaigns/{campaign_id}")
            if json.loads(body)["status"] == "sent":
                state["sent"] = True
                return
            await asyncio.sleep(0.05)

    started = time.perf_counter()
    status, answer = await setup.post(f"/api/campaigns/{campaign_id}/send", None)
    assert status == 200, answer
    during, _ = await asyncio.gather(post_latencies(base_url, headers, conversations, lambda: state["sent"]), watch())
    send_seconds = time.perf_counter() - started
    floors.append(await asyncio.to_thread(floor_rate, database_url, 1, FLOOR_ROWS))
    _, body = await setup.get(f"/api/campaigns/{campaign_id}")
    stats = json.loads(body)["stats"]
    setup.close()
    assert stats["sent"] == stats["recipients"] == customers, stats

    store = EventStore(database_url, pool_size=1)
    stream = [r.event for r in store.load(uuid.UUID(campaign_id))]
    store.close()
    started_at = next(e.at for e in stream if isinstance(e, ev.CampaignStarted))
    appended = (stream[-1].at - started_at).total_seconds()  # the sender's own work: all batches in the store
    floor = statistics.mean(floors)
    rate = customers / send_seconds
    ms = 1000
    print(f"customers={customers} clients={clients} batch={os.environ['PARLEY_CAMPAIGN_BATCH_SIZE']}")
    print(f"floor (INSERT+COMMIT, 1 connection, the send's concurrency): {floor:,.0f} rows/s "
          f"(mean of {floors[0]:,.0f} before and {floors[1]:,.0f} after the send)")
    print(f"send: {customers:,} recipients in {send_seconds:.1f} s = {rate:,.0f} recipients/s = "
          f"{rate / floor:.2f} x floor (goal >= {RATE_REQUIRED:g}, aim >= {RATE_AIMED:g}); the sender appended them "
          f"all in {appended:.1f} s = "
          f"{customers / appended:,.0f} recipients/s = {customers / appended / floor:.2f} x floor, the rest is the "
          f"read models catching up")
    print(f"POST /api/messages without a send: {len(quiet) / quiet_seconds:,.0f}/s, p50 "
          f"{statistics.median(quiet) * ms:.1f} ms, p99 {percentile(quiet, 99) * ms:.1f} ms")
    print(f"POST /api/messages during the send: {len(during) / send_seconds:,.0f}/s, p50 "
          f"{statistics.median(during) * ms:.1f} ms, p99 {percentile(during, 99) * ms:.1f} ms = "
          f"{percentile(during, 99) / percentile(quiet, 99):.2f} x the p99 without (goal <= {P99_GOAL:g})")
    print(f"the {RATE_AIMED:g}x aim for the send rate: {'met' if rate / floor >= RATE_AIMED else 'missed'}")
    return [Goal.at_least("send rate x floor", rate / floor, RATE_REQUIRED, "x"),
            Goal.at_most("interactive p99 during the send x without", percentile(during, 99) / percentile(quiet, 99),
                         P99_GOAL, "x")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--customers", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()

    os.environ["PARLEY_CAMPAIGN_BATCH_SIZE"] = str(args.batch)
    # measured here is the send, not the rate limiter
    with serve_on_fresh_database({"PARLEY_CAMPAIGN_BATCH_SIZE": str(args.batch),
                                  "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000"}) as served:
        base_url, database_url = served.base_url, served.database_url
        store = EventStore(database_url, pool_size=1)
        org = admin.create_org(store, "Bench")
        website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-site", None)
        chat_website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-chat", None)
        _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "benchmark!")
        position = seed(store, org.id, website.id, args.customers)
        store.close()
        wait_projected(database_url, position)
        goals = asyncio.run(measure(base_url, {"Authorization": f"Token {operator_token}"}, str(website.id),
                                     str(chat_website.id), args.clients, args.customers, database_url))
    finish(goals)


if __name__ == "__main__":
    main()
