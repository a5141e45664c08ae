"""Write throughput and read visibility of POST /api/messages, against a floor measured in the same run.

Floor: plain single-row INSERT + COMMIT into the same PostgreSQL from Python, with as many concurrent
connections as the benchmark has clients. Goal (issue 2): the API sustains at least 40% of the floor,
and a write is visible to reads (by another credential) within 20 ms at p99.

    uv run python bench/write_read.py [--messages 2000] [--clients 4]

Uses PARLEY_DATABASE_URL / PARLEY_NATS_URL when set, otherwise embedded servers in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from commands import admin  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run_parallel(clients: int, per_client: int, work) -> float:
    threads = [threading.Thread(target=work, args=(i, per_client)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def floor_rate(database_url: str, clients: int, per_client: int) -> float:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id uuid PRIMARY KEY, body text)")

    def work(_: int, count: int) -> None:
        with psycopg.connect(database_url) as conn:
            for _ in range(count):
                conn.execute("INSERT INTO bench_floor VALUES (%s, %s)", (uuid.uuid4(), "hello"))
                conn.commit()

    return clients * per_client / run_parallel(clients, per_client, work)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    per_client = args.messages // args.clients

    tmp = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    started = []
    database_url, nats_url = os.environ.get("PARLEY_DATABASE_URL"), os.environ.get("PARLEY_NATS_URL")
    if not (database_url and nats_url):
        postgres, nats_server = EmbeddedPostgres(tmp / "postgres"), EmbeddedNats(tmp / "nats")
        postgres.start()
        nats_server.start()
        started += [postgres, nats_server]
        database_url, nats_url = postgres.url, nats_server.url
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database_url = database_url.rsplit("/", 1)[0] + "/" + name

    env = {**os.environ, "PARLEY_DATABASE_URL": database_url, "PARLEY_NATS_URL": nats_url,
           "PARLEY_NATS_STREAM": name.upper(), "PARLEY_LOG_LEVEL": "WARNING",
           # measured here is the write path, not the rate limiter
           "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000", "PARLEY_RATE_APIKEY_PER_MINUTE": "100000000"}
    server = subprocess.Popen([sys.executable, "-m", "parley.cli", "serve", "--port", "0", "--data-dir", str(tmp)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base_url = ""
        for line in server.stdout:
            if " listening on " in line:
                base_url = line.rsplit(" ", 1)[1].strip()
                break
        store = EventStore(database_url, pool_size=1)
        org = admin.create_org(store, "Bench")
        website, _ = admin.create_website(store, org.id, "bench-site", None)
        _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "benchmark!")
        key, key_secret = admin.create_api_key(store, org.id, ["messages:read"], None, None)
        store.close()
        writer = {"Authorization": f"Token {operator_token}"}
        import base64

        reader = {"Authorization": "Basic " + base64.b64encode(key_secret.encode()).decode()}
        with httpx.Client(base_url=base_url, headers=writer) as client:
            customer = client.post("/api/customers", json={"websiteId": str(website.id)}).json()
            conversations = [client.post("/api/conversations", json={"websiteId": str(website.id),
                                                                     "customerId": customer["_id"]}).json()["_id"]
                             for _ in range(args.clients)]

        write_latency: list[float] = []
        visible_after: list[float] = []
        lock = threading.Lock()

        def post_messages(i: int, count: int) -> None:
            with httpx.Client(base_url=base_url) as client:
                for n in range(count):
                    t0 = time.perf_counter()
                    response = client.post("/api/messages", headers=writer, json={
                        "conversationId": conversations[i], "content": f"bench {n}", "from": "customer"})
                    t1 = time.perf_counter()
                    assert response.status_code == 200, response.text
                    while client.get(f"/api/messages/{response.json()['_id']}", headers=reader).status_code != 200:
                        pass
                    t2 = time.perf_counter()
                    with lock:
                        write_latency.append(t1 - t0)
                        visible_after.append(t2 - t0)

        # The writes alone, for the rate; then the visibility check, which adds its own reads.
        def post_only(i: int, count: int) -> None:
            with httpx.Client(base_url=base_url) as client:
                for n in range(count):
                    client.post("/api/messages", headers=writer, json={
                        "conversationId": conversations[i], "content": f"rate {n}", "from": "customer"})

        run_parallel(args.clients, 50, post_only)  # warm-up
        # The server's own CPU per message: steadier than a rate on a shared machine.
        server_process = psutil.Process(server.pid)
        cpu_before = sum(server_process.cpu_times()[:2])
        api_rate = args.clients * per_client / run_parallel(args.clients, per_client, post_only)
        cpu_per_message = (sum(server_process.cpu_times()[:2]) - cpu_before) / (args.clients * per_client)
        run_parallel(args.clients, per_client, post_messages)
        floor = floor_rate(database_url, args.clients, per_client)

        ms = 1000
        print(f"clients={args.clients} messages={args.clients * per_client}")
        print(f"floor (INSERT+COMMIT, {args.clients} connections): {floor:,.0f} rows/s")
        print(f"API POST /api/messages: {api_rate:,.0f} messages/s  = {api_rate / floor:.2f} x floor (goal >= 0.40)")
        print(f"server process CPU per message: {cpu_per_message * 1000:.2f} ms "
              f"(one core's ceiling: {1 / cpu_per_message:,.0f} messages/s)")
        print(f"write latency p50 {statistics.median(write_latency) * ms:.1f} ms, "
              f"p99 {percentile(write_latency, 99) * ms:.1f} ms")
        print(f"visible to another credential after POST start: p50 {statistics.median(visible_after) * ms:.1f} ms,"
              f" p99 {percentile(visible_after, 99) * ms:.1f} ms (goal p99 <= 20 ms); "
              f"p99 / floor per-row time = {percentile(visible_after, 99) * floor / args.clients:.1f}")
    finally:
        server.terminate()
        server.wait(30)
        for s in reversed(started):
            s.stop()


if __name__ == "__main__":
    main()
