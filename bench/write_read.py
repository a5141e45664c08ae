"""Write throughput and read visibility of POST /api/messages, against a floor measured in the same run.

Floor: one autocommit single-row INSERT per row (one round trip) into a bigserial-keyed table of the same
PostgreSQL from Python, with as many concurrent connections as the benchmark has clients, measured just before and just after the API's run (their
mean). Goal (issue 2): the API sustains at least 40% of the floor, and a write is visible to reads (by
another credential) within 20 ms at p99; the script exits with 1, naming the goal, when either is missed.

    uv run python bench/write_read.py [--messages 2000] [--clients 4]

It also prints the CPU each process spends per message (API, workers, and the embedded PostgreSQL and
NATS): their sum over the machine's cores is the rate the machine can reach, whatever the latencies.

Uses PARLEY_DATABASE_URL / PARLEY_NATS_URL when set, otherwise embedded servers in a temporary directory
(with external servers, only the API and workers processes are measured).
The clients are coroutines over `bench/rawhttp.py`, so the load generator takes little CPU from the server.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.rawhttp import RawClient  # noqa: E402
from bench.serve import serve_on_fresh_database  # noqa: E402
from events.store import EventStore  # noqa: E402

RATE_GOAL = 0.40  # of the floor's rows per second
VISIBLE_GOAL_SECONDS = 0.020  # p99, from the POST's start until another credential reads the message


def run_parallel(clients: int, per_client: int, work) -> float:
    threads = [threading.Thread(target=work, args=(i, per_client)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def floor_rate(database_url: str, clients: int, per_client: int) -> float:
    """What any application would do to store a row: one autocommit INSERT, one round trip, into a table
    keyed by a bigserial (no random-key index pages to dirty)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor_rows (id bigserial PRIMARY KEY, body text)")

    def work(_: int, count: int) -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for _ in range(count):
                conn.execute("INSERT INTO bench_floor_rows (body) VALUES (%s)", ("hello",))

    return clients * per_client / run_parallel(clients, per_client, work)


def cpu_seconds(roots: dict[str, tuple[psutil.Process, bool]]) -> dict[str, float]:
    """CPU time used so far by each named process, with its children where asked (PostgreSQL's backends;
    not the API process's, which are the workers, counted apart)."""
    used = {}
    for name, (root, with_children) in roots.items():
        total = 0.0
        for process in [root, *(root.children(recursive=True) if with_children else [])]:
            try:
                total += sum(process.cpu_times()[:2])
            except psutil.NoSuchProcess:
                pass
        used[name] = total
    return used


async def measure(base_url: str, website_id: str, writer: dict, reader: dict, clients: int, per_client: int,
                  processes: dict[str, tuple[psutil.Process, bool]],
                  floor: Callable[[], float]) -> tuple[float, list[float], dict[str, float], list[float], list[float]]:
    """The rate of POSTs alone (and each process's CPU per message), between two measures of the floor
    (a shared machine's speed drifts), then each write's latency and the time until another credential
    reads it, each client on its own conversation and connection."""
    setup = RawClient(base_url, writer)
    # measured from a process at rest: the search model loads in the background after start-up, seconds of
    # CPU (tens on a busy machine) that would otherwise be counted against the messages
    while json.loads((await setup.get("/readyz"))[1])["search"]["model"] != "ready":
        await asyncio.sleep(0.2)
    for credentials in (writer, reader):  # created on the store directly: usable once projected
        while (await setup.get("/api/websites", credentials))[0] != 200:
            await asyncio.sleep(0.05)
    _, customer = await setup.post("/api/customers", {"websiteId": website_id})
    conversations = []
    for _ in range(clients):
        _, conversation = await setup.post("/api/conversations", {
            "websiteId": website_id, "customerId": json.loads(customer)["_id"]})
        conversations.append(json.loads(conversation)["_id"])
    setup.close()

    async def post_only(i: int, count: int) -> None:
        client = RawClient(base_url, writer)
        for n in range(count):
            status, answer = await client.post("/api/messages", {
                "conversationId": conversations[i], "content": f"rate {n}", "from": "customer"})
            assert status == 200, answer
        client.close()

    write_latency: list[float] = []
    visible_after: list[float] = []

    async def post_and_read(i: int, count: int) -> None:
        client = RawClient(base_url)
        newest = f"/api/messages?conversationId={conversations[i]}&sortField=creationTime&sortDirection=DESC&limit=3"
        for n in range(count):
            t0 = time.perf_counter()
            status, answer = await client.post("/api/messages", {
                "conversationId": conversations[i], "content": f"bench {n}", "from": "customer"}, writer)
            t1 = time.perf_counter()
            assert status == 200, answer
            message_id = json.loads(answer)["_id"].encode()
            while True:  # visible in the conversation's list, newest first (a few, should two share a time)
                status, listed = await client.get(newest, reader)
                if status == 200 and message_id in listed:
                    break
            write_latency.append(t1 - t0)
            visible_after.append(time.perf_counter() - t0)
        client.close()

    async def in_parallel(work, count: int) -> float:
        start = time.perf_counter()
        await asyncio.gather(*(work(i, count) for i in range(clients)))
        return time.perf_counter() - start

    await in_parallel(post_only, 50)  # warm-up
    floors = [await asyncio.to_thread(floor)]
    # CPU per message, by process: steadier than a rate on a shared machine, and it says where time goes.
    cpu_before = cpu_seconds(processes)
    rate = clients * per_client / await in_parallel(post_only, per_client)
    cpu_after = cpu_seconds(processes)
    floors.append(await asyncio.to_thread(floor))
    cpu_per_message = {name: (cpu_after[name] - cpu_before[name]) / (clients * per_client) for name in processes}
    await in_parallel(post_and_read, per_client)
    return rate, floors, cpu_per_message, write_latency, visible_after


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    per_client = args.messages // args.clients

    # measured here is the write path, not the rate limiter
    with serve_on_fresh_database({"PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000",
                                  "PARLEY_RATE_APIKEY_PER_MINUTE": "100000000"}) as served:
        base_url, database_url, server, started = served.base_url, served.database_url, served.server, served.embedded
        store = EventStore(database_url, pool_size=1)
        org = admin.create_org(store, "Bench")
        website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-site", None)
        _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "benchmark!")
        key, key_secret = admin.create_api_key(store, org.id, ["messages:read", "websites:read"], None, None)
        store.close()
        writer = {"Authorization": f"Token {operator_token}"}
        reader = {"Authorization": "Basic " + base64.b64encode(key_secret.encode()).decode()}
        server_process = psutil.Process(server.pid)
        workers = [child for child in server_process.children() if "spawn_main" in " ".join(child.cmdline())]
        processes = {"API": (server_process, False), **({"workers": (workers[0], True)} if workers else {}),
                     **{name: (psutil.Process(s.proc.pid), True) for name, s in zip(("PostgreSQL", "NATS"), started)}}
        api_rate, floors, cpu_per_message, write_latency, visible_after = asyncio.run(measure(
            base_url, str(website.id), writer, reader, args.clients, per_client, processes,
            lambda: floor_rate(database_url, args.clients, per_client // 2)))
        floor = statistics.mean(floors)

        ms = 1000
        print(f"clients={args.clients} messages={args.clients * per_client}")
        print(f"floor (autocommit INSERT, {args.clients} connections): {floor:,.0f} rows/s "
              f"(mean of {floors[0]:,.0f} before and {floors[1]:,.0f} after the API's run)")
        print(f"API POST /api/messages: {api_rate:,.0f} messages/s  = {api_rate / floor:.2f} x floor (goal >= {RATE_GOAL:.2f})")
        total = sum(cpu_per_message.values())
        print("CPU per message: " + ", ".join(f"{name} {cpu * ms:.2f} ms" for name, cpu in cpu_per_message.items())
              + (f"; total {total * ms:.2f} ms, so {os.cpu_count()} cores cap the rate at "
                 f"{os.cpu_count() / total:,.0f} messages/s = {os.cpu_count() / total / floor:.2f} x floor"
                 if started else " (PostgreSQL and NATS are external: not measured)"))
        print(f"write latency p50 {statistics.median(write_latency) * ms:.1f} ms, "
              f"p99 {percentile(write_latency, 99) * ms:.1f} ms")
        print(f"visible to another credential after POST start: p50 {statistics.median(visible_after) * ms:.1f} ms,"
              f" p99 {percentile(visible_after, 99) * ms:.1f} ms (goal p99 <= 20 ms); "
              f"p99 / floor per-row time = {percentile(visible_after, 99) * floor / args.clients:.1f}")
    finish([Goal.at_least("API messages/s x floor", api_rate / floor, RATE_GOAL, "x"),
            Goal.at_most("visible to another credential, p99", percentile(visible_after, 99) * ms,
                         VISIBLE_GOAL_SECONDS * ms)])


if __name__ == "__main__":
    main()
