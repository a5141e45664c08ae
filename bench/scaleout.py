"""Scale-out on one machine: 1, 2 and 3 API processes (`parley serve --role api`) in front of one workers
process (`--role workers`), on one PostgreSQL and one NATS, under the same load: writes/s of
POST /api/messages and the p99 of a concurrent read (GET /api/messages by another credential), each beside
the single-process figure of the same run (measured first and last: its mean is the floor), and the CPU
each process spends per message, which says where the ceiling is.

    uv run python bench/scaleout.py [--messages 2000] [--clients 8]

There is no goal to miss: this machine has two cores, so the figures show what saturates first (the
store's append, PostgreSQL, the API processes' interpreters), which decides what to scale on bigger
machines (docs/deployment.md). Uses PARLEY_DATABASE_URL / PARLEY_NATS_URL when set, else embedded servers.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import percentile  # noqa: E402
from bench.rawhttp import RawClient  # noqa: E402
from bench.serve import ROOT, fresh_database, start_serve  # noqa: E402
from bench.write_read import cpu_seconds  # noqa: E402
from commands import admin  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.runtime import secrets_sealer  # noqa: E402
from parley.settings import Settings  # noqa: E402

READERS = 2


class Deployment:
    """`api` API processes and one workers process on a shared database and stream."""

    def __init__(self, tmp: Path, env: dict[str, str], api: int):
        self.workers = subprocess.Popen(
            [sys.executable, "-m", "parley.cli", "serve", "--role", "workers", "--data-dir", str(tmp / "workers")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        self.apis = [start_serve(tmp / f"api-{n}", env, role="api") for n in range(api)]

    @property
    def urls(self) -> list[str]:
        return [url for _, url in self.apis]

    def processes(self) -> dict[str, tuple[psutil.Process, bool]]:
        return {**{f"API {n + 1}": (psutil.Process(proc.pid), False) for n, (proc, _) in enumerate(self.apis)},
                "workers": (psutil.Process(self.workers.pid), True)}

    def stop(self) -> None:
        for proc in [proc for proc, _ in self.apis] + [self.workers]:
            proc.terminate()
        for proc in [proc for proc, _ in self.apis] + [self.workers]:
            proc.wait(30)


async def run_load(urls: list[str], writer: dict, reader: dict, conversations: list[str], per_client: int,
                   processes: dict) -> tuple[float, float, float, dict[str, float]]:
    """Writes/s over every client (spread round-robin over the API processes), the p99 of the reads made
    meanwhile and the share of them answered 503 (read-your-writes waited its bound), and each process's CPU
    per message."""
    clients = len(conversations)
    writing = True
    read_latency: list[float] = []
    unavailable: list[bool] = []

    async def write(i: int, count: int) -> None:
        client = RawClient(urls[i % len(urls)], writer)
        for n in range(count):
            status, answer = await client.post("/api/messages", {
                "conversationId": conversations[i], "content": f"scale {n}", "from": "customer"})
            assert status == 200, answer
        client.close()

    async def read(i: int) -> None:
        client = RawClient(urls[i % len(urls)], reader)
        path = f"/api/messages?conversationId={conversations[i]}&sortField=creationTime&sortDirection=DESC&limit=20"
        while writing:
            started = time.perf_counter()
            status, answer = await client.get(path)
            assert status in (200, 503), answer  # 503: the read models did not reach the org's writes in time
            read_latency.append(time.perf_counter() - started)
            unavailable.append(status == 503)
        client.close()

    await asyncio.gather(*(write(i, 30) for i in range(clients)))  # warm-up: credentials, connections
    readers = [asyncio.create_task(read(i)) for i in range(READERS)]
    cpu_before = cpu_seconds(processes)
    started = time.perf_counter()
    await asyncio.gather(*(write(i, per_client) for i in range(clients)))
    rate = clients * per_client / (time.perf_counter() - started)
    cpu_after = cpu_seconds(processes)
    writing = False
    await asyncio.gather(*readers)
    cpu = {name: (cpu_after[name] - cpu_before[name]) / (clients * per_client) for name in processes}
    return rate, percentile(read_latency, 99), sum(unavailable) / len(unavailable), cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    per_client = args.messages // args.clients
    tmp = Path(tempfile.mkdtemp(prefix="parley-scaleout-"))
    database_url, nats_url, name, embedded = fresh_database(tmp)
    secrets_key = secrets.token_urlsafe(32)  # one key for every process, as a deployment's
    env = {**os.environ, "PARLEY_DATABASE_URL": database_url, "PARLEY_SECRETS_KEY": secrets_key, "PARLEY_NATS_URL": nats_url,
           "PARLEY_NATS_STREAM": name.upper(), "PARLEY_LOG_LEVEL": "WARNING",
           "PARLEY_RATE_OPERATOR_PER_MINUTE": "100000000", "PARLEY_RATE_APIKEY_PER_MINUTE": "100000000"}
    store = EventStore(database_url, pool_size=1)
    org = admin.create_org(store, "Bench")
    website, _ = admin.create_website(store, secrets_sealer(Settings(data_dir=tmp, secrets_key=secrets_key)),
                                      org.id, "bench-site", None)
    _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "benchmark!")
    _, key_secret = admin.create_api_key(store, org.id, ["messages:read"], None, None)
    store.close()
    writer = {"Authorization": f"Token {operator_token}"}
    reader = {"Authorization": "Basic " + base64.b64encode(key_secret.encode()).decode()}
    infrastructure = {name: (psutil.Process(s.proc.pid), True) for name, s in zip(("PostgreSQL", "NATS"), embedded)}

    figures: dict[int, list[tuple[float, float, float, dict[str, float]]]] = {}
    conversations: list[str] = []
    try:
        for api in (1, 2, 3, 1):  # the single-process floor first and last: a shared machine drifts
            deployment = Deployment(tmp, env, api)
            try:
                if not conversations:
                    conversations = asyncio.run(open_conversations(deployment.urls[0], writer, str(website.id),
                                                                   args.clients))
                figures.setdefault(api, []).append(asyncio.run(run_load(
                    deployment.urls, writer, reader, conversations, per_client,
                    {**deployment.processes(), **infrastructure})))
            finally:
                deployment.stop()
    finally:
        for started in reversed(embedded):
            started.stop()

    floor_rate = statistics.mean(figure[0] for figure in figures[1])
    floor_p99 = statistics.mean(figure[1] for figure in figures[1])
    print(f"clients={args.clients} messages={args.clients * per_client} per configuration; {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"floor: 1 API process {floor_rate:,.0f} writes/s, read p99 {floor_p99 * 1000:.1f} ms "
          f"(mean of the first and last runs: {', '.join(f'{figure[0]:,.0f}' for figure in figures[1])} writes/s)")
    for api in (1, 2, 3):
        rate, p99, unavailable, cpu = figures[api][0]
        print(f"{api} API process{'es' if api > 1 else ''}: {rate:,.0f} writes/s = {rate / floor_rate:.2f} x floor, "
              f"read p99 {p99 * 1000:.1f} ms = {p99 / floor_p99:.2f} x floor ({unavailable:.1%} answered 503); "
              "CPU per message: "
              + ", ".join(f"{name} {seconds * 1000:.2f} ms" for name, seconds in cpu.items())
              + f"; total {sum(cpu.values()) * 1000:.2f} ms")


async def open_conversations(url: str, writer: dict, website_id: str, count: int) -> list[str]:
    client = RawClient(url, writer)
    while (await client.get("/api/websites"))[0] != 200:  # the operator was made on the store directly
        await asyncio.sleep(0.05)
    _, customer = await client.post("/api/customers", {"websiteId": website_id})
    conversations = []
    for _ in range(count):
        _, conversation = await client.post("/api/conversations", {
            "websiteId": website_id, "customerId": json.loads(customer)["_id"]})
        conversations.append(json.loads(conversation)["_id"])
    client.close()
    return conversations


if __name__ == "__main__":
    main()
