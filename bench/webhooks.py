"""Webhook delivery benchmark: throughput, commit-to-arrival delay, and exact delivery counts.

1,000 subscriptions over 10 websites; customers are created at a steady rate, so every event fans out
to the 100 subscriptions of its website. The receivers are on loopback: nine in ten answer at once,
one in twenty answers after a delay, one in twenty fails with 500 (and so gets retried and, after 20
failures in a row, disabled). A real `parley serve` process (API and workers, embedded PostgreSQL and
NATS) does the work.

Reported: deliveries per second, the delay from each event's commit to its arrival at the healthy
receivers (p50, p99), and a check that every due delivery arrived exactly as often as it should (once
for a healthy or slow endpoint; once per recorded attempt for a failing one), and the server process's
CPU time per request received (steadier than the delays when the machine is shared). The floor, measured in
the same run, is a bare HTTP POST to the same receivers from one client: the ratios say what the
whole pipeline (commit, relay, projection, outbox, claim, sign, POST) costs on top of the network.

    python bench/webhooks.py [--seconds 20] [--events-per-second 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from commands.customers import CustomerCreate, create_customer  # noqa: E402
from commands.principal import Principal  # noqa: E402
from commands.webhooks import WebhookCreate, subscribe  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

WEBSITES, SUBSCRIPTIONS = 10, 1000
SLOW_SECONDS = 1.0
GOAL_P99_MS, GOAL_RATE = 100.0, 500.0


def kind_of(index: int) -> str:
    """Per website (subscription `index` belongs to website `index % WEBSITES`): 90 % healthy, 5 % slow,
    5 % failing."""
    n = index // WEBSITES
    return "failing" if n % 20 == 0 else "slow" if n % 20 == 10 else "healthy"


class Receivers:
    """A minimal HTTP/1.1 keep-alive server; the path `/<kind>/<subscription index>` says how to answer."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[str, int, str, float]] = []  # (path, position, delivery id, arrival time)
        self.port = 0

    async def start(self) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = time.time()
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                await reader.readexactly(int(headers.get("content-length", 0)))
                self.arrivals.append((path, int(headers.get("x-service-position", 0)),
                                      headers.get("x-service-delivery", ""), arrived))
                kind = path.split("/")[1]
                if kind == "slow":
                    await asyncio.sleep(SLOW_SECONDS)
                status = b"500 Internal Server Error" if kind == "failing" else b"200 OK"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the benchmark is over
        finally:
            writer.close()


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux), or None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def http_floor(port: int, requests: int = 2000, concurrency: int = 50) -> tuple[float, float, float]:
    """(p50 ms, p99 ms, requests/second) of bare POSTs to a healthy receiver."""
    latencies: list[float] = []
    body = b'{"event":"customer.created","timestamp":0,"data":{}}'
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        async def one(_: int) -> None:
            started = time.perf_counter()
            await client.post("/floor/0", content=body, headers={"Content-Type": "application/json"})
            latencies.append((time.perf_counter() - started) * 1000)

        for i in range(200):  # sequential: latency without queueing
            await one(i)
        sequential = list(latencies)
        started = time.perf_counter()
        semaphore = asyncio.Semaphore(concurrency)

        async def bounded(i: int) -> None:
            async with semaphore:
                await one(i)

        await asyncio.gather(*(bounded(i) for i in range(requests)))
        rate = requests / (time.perf_counter() - started)
    return percentile(sequential, 50), percentile(sequential, 99), rate


async def quiescent(database_url: str, timeout: float = 120) -> None:
    """Waits until no delivery is pending (the failing endpoints end disabled, their deliveries stopped)
    and the last attempts are recorded, so that arrivals and the log can be compared."""
    deadline = time.monotonic() + timeout
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = await (await conn.execute(
                "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'")).fetchone()
            if row[0] == 0:
                break
            await asyncio.sleep(0.2)
    await asyncio.sleep(SLOW_SECONDS + 1)


def start_service(root: Path, database_url: str, nats_url: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env.update(PARLEY_DATABASE_URL=database_url, PARLEY_NATS_URL=nats_url, PARLEY_WEBHOOK_ALLOW_PRIVATE="1",
               PARLEY_WEBHOOK_RETRY_BASE_SECONDS="0.5", PARLEY_WEBHOOK_RETRY_CAP_SECONDS="5",
               PARLEY_LOG_LEVEL="WARNING")
    return start_serve(root, env)[0]


def setup(store: EventStore, port: int) -> tuple[Principal, list[uuid.UUID], dict[str, tuple[str, uuid.UUID]]]:
    """Subscriptions by receiver path: (kind, website)."""
    org = admin.create_org(store, "Bench")
    principal = Principal("operator", org.id, uuid.uuid4())
    websites = [admin.create_website(store, Sealer.generate(), org.id, f"bench-{i}", None)[0].id for i in range(WEBSITES)]
    subscriptions: dict[str, tuple[str, uuid.UUID]] = {}
    for index in range(SUBSCRIPTIONS):
        path, website = f"/{kind_of(index)}/{index}", websites[index % WEBSITES]
        subscribe(store, principal, WebhookCreate(website_id=str(website), url=f"http://127.0.0.1:{port}{path}"), True)
        subscriptions[path] = (kind_of(index), website)
    return principal, websites, subscriptions


def write_events(store: EventStore, principal: Principal, websites: list[uuid.UUID], seconds: float,
                 rate: float) -> dict[int, tuple[float, uuid.UUID]]:
    """Creates customers at a steady rate; position -> (commit time, website)."""
    committed: dict[int, tuple[float, uuid.UUID]] = {}
    started, n = time.monotonic(), 0
    while (due := started + n / rate) < started + seconds:
        time.sleep(max(0.0, due - time.monotonic()))
        website = websites[n % len(websites)]
        position = create_customer(store, principal, CustomerCreate(website_id=str(website))).position
        committed[position] = (time.time(), website)
        n += 1
    return committed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--events-per-second", type=float, default=5.0)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    root.chmod(0o755)
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    receivers = Receivers()
    await receivers.start()
    service = start_service(root / "service", postgres.url, nats_server.url)
    store = EventStore(postgres.url, pool_size=2)
    try:
        floor_p50, floor_p99, floor_rate = await http_floor(receivers.port)
        receivers.arrivals.clear()
        principal, websites, subscriptions = await asyncio.to_thread(setup, store, receivers.port)
        per_kind = Counter(kind for kind, _ in subscriptions.values())
        print(f"{SUBSCRIPTIONS} subscriptions over {WEBSITES} websites: {dict(per_kind)}")
        await asyncio.sleep(3)  # the outbox projection has the subscriptions before the first event
        cpu_before = cpu_seconds(service.pid)
        started = time.time()
        committed = await asyncio.to_thread(write_events, store, principal, websites, args.seconds,
                                            args.events_per_second)
        healthy_due = len(committed) * per_kind["healthy"] // WEBSITES
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum(1 for a in receivers.arrivals if a[0].startswith("/healthy/")) >= healthy_due:
                break
            await asyncio.sleep(0.1)
        await quiescent(postgres.url)
        cpu_after = cpu_seconds(service.pid)
        finished = max(a[3] for a in receivers.arrivals)
        report(receivers, committed, subscriptions, postgres.url, started, finished,
               (floor_p50, floor_p99, floor_rate))
        if cpu_before is not None and cpu_after is not None:
            # less noisy than the delays on a shared machine: CPU time is only counted while running
            print(f"server process CPU per request received: {(cpu_after - cpu_before) / len(receivers.arrivals) * 1000:.3f} ms "
                  f"({cpu_after - cpu_before:.1f} s for {len(receivers.arrivals)} requests, idle tail included)")
    finally:
        store.close()
        service.terminate()
        service.wait(30)
        nats_server.stop()
        postgres.stop()


def report(receivers: Receivers, committed: dict[int, tuple[float, uuid.UUID]],
           subscriptions: dict[str, tuple[str, uuid.UUID]], database_url: str, started: float, finished: float, floor: tuple[float, float, float]) -> None:
    floor_p50, floor_p99, floor_rate = floor
    kinds = {path: kind for path, (kind, _) in subscriptions.items()}
    delays = [(arrived - committed[position][0]) * 1000 for path, position, _, arrived in receivers.arrivals
              if kinds[path] == "healthy"]
    delivered = [a for a in receivers.arrivals if kinds[a[0]] != "failing"]
    rate = len(receivers.arrivals) / (finished - started)
    p50, p99 = percentile(delays, 50), percentile(delays, 99)

    with psycopg.connect(database_url) as conn:
        due = conn.execute("SELECT s.url, d.position, d.id FROM webhook_deliveries d "
                           "JOIN rm_webhook_subscriptions s ON s.id = d.subscription_id").fetchall()
        attempts = dict(conn.execute("SELECT delivery_id::text, count(*) FROM webhook_attempts "
                                     "GROUP BY delivery_id").fetchall())
        disabled = conn.execute("SELECT count(*) FROM rm_webhook_subscriptions WHERE NOT active").fetchone()[0]
        stages = conn.execute(
            "SELECT DISTINCT ON (d.id) d.position, EXTRACT(EPOCH FROM d.created_at), EXTRACT(EPOCH FROM a.at), "
            "a.latency_ms FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id "
            "ORDER BY d.id, a.id").fetchall()
    recorded = [(float(created) - committed[position][0]) * 1000 for position, created, _, _ in stages]
    claimed = [(float(ended) - float(created)) * 1000 - latency for _, created, ended, latency in stages]
    posting = [float(latency) for *_, latency in stages]
    arrivals = Counter(a[2] for a in receivers.arrivals)
    wrong: list[str] = []
    by_path: dict[str, set[int]] = defaultdict(set)
    for url, position, delivery_id in due:
        path = "/" + url.split("/", 3)[3]
        by_path[path].add(position)
        expected = 1 if kinds[path] != "failing" else attempts.get(str(delivery_id), 0)
        if arrivals[str(delivery_id)] != expected:
            wrong.append(f"{path} position {position}: {arrivals[str(delivery_id)]} arrivals, expected {expected}")
    # every event was recorded for every healthy and slow subscription of its website
    missing = sum(1 for path, (kind, website) in subscriptions.items() if kind != "failing"
                  and by_path[path] != {p for p, (_, w) in committed.items() if w == website})

    print(f"offered: {len(committed) * SUBSCRIPTIONS // WEBSITES / (max(t for t, _ in committed.values()) - started):.0f} "
          f"deliveries/s; events: {len(committed)}; deliveries recorded: {len(due)}; requests received: {len(receivers.arrivals)}"
          f" ({len(delivered)} to healthy and slow endpoints); subscriptions disabled by failures: {disabled}")
    print(f"floor (bare HTTP POST on loopback): p50 {floor_p50:.2f} ms, p99 {floor_p99:.2f} ms, "
          f"{floor_rate:.0f} requests/s")
    print(f"deliveries/second: {rate:.0f}  ({rate / floor_rate:.2f}x the floor's request rate)")
    print(f"healthy commit-to-arrival delay: p50 {p50:.1f} ms ({p50 / floor_p50:.1f}x floor p50), "
          f"p99 {p99:.1f} ms ({p99 / floor_p99:.1f}x floor p99)")
    print("where the delay goes (p50 / p99 ms): " + "; ".join(
        f"{stage} {percentile(values, 50):.1f} / {percentile(values, 99):.1f}"
        for stage, values in [("commit to delivery recorded", recorded), ("recorded to attempt started", claimed),
                              ("the POST itself", posting)]))
    print(f"goal (p99 < {GOAL_P99_MS:.0f} ms at >= {GOAL_RATE:.0f} deliveries/s): "
          f"{'met' if p99 < GOAL_P99_MS and rate >= GOAL_RATE else 'NOT met'}")
    exact = not wrong and not missing
    print(f"exactly as often as due: {'yes' if exact else 'NO'}"
          + ("" if exact else f" ({len(wrong)} wrong counts, {missing} subscriptions missing events): {wrong[:5]}"))


if __name__ == "__main__":
    asyncio.run(main())
