"""Webhook delivery benchmark: 2,000 deliveries a second, commit-to-arrival delay, exactly once.

1,000 subscriptions over 10 websites; customers are created at a steady rate (`--rate` / 100 a second), so
every event fans out to the 100 subscriptions of its website. Per website, nine in ten endpoints answer at
once, one in twenty answers after `--slow-seconds`, one in twenty fails with 500 (retried, and disabled
after 20 failures in a row; each measured round enables them again, so failing endpoints are there all
along). The receivers run in processes of their own (`--receivers`, a raw asyncio HTTP/1.1 server each),
the service in `--workers` processes of `parley serve --role workers` on embedded PostgreSQL and NATS;
each workers process claims due deliveries under a lease, so none is delivered twice.

The floor, interleaved with the figure after a warm-up round of each: a bare keep-alive HTTP client in
this process posting the same bodies, with the same headers, to the same healthy receivers at the same
pace (each event's 90 healthy deliveries at once), and then as fast as it can, which shows that the
receivers are not the bottleneck.

Reported, per round and in all: the healthy endpoints' delivery rate against their share of the offer,
their commit-to-arrival delay (p50, p99) against the floor's send-to-arrival delay, the CPU time per
delivery of the workers processes and of PostgreSQL against the floor client's CPU per request, and a
check that every due delivery arrived exactly as often as it should (once for a healthy or slow endpoint;
once per recorded attempt for a failing one). Exits non-zero when a goal is missed: the offer kept up
with (>= 2,000 deliveries/s), healthy p99 <= 100 ms, exactly once, and a floor of at least twice the rate.

    python bench/webhooks.py [--rate 2000] [--workers 1] [--seconds 10] [--rounds 2] [--receivers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from commands.customers import CustomerCreate, create_customer  # noqa: E402
from commands.principal import Principal  # noqa: E402
from commands.webhooks import WebhookCreate, WebhookUpdate, subscribe, update  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

WEBSITES, SUBSCRIPTIONS = 10, 1000
PER_WEBSITE = SUBSCRIPTIONS // WEBSITES
GOAL_RATE, GOAL_P99_MS = 2000.0, 100.0
KEPT_UP = 0.97  # the healthy endpoints' delivery rate, at least this share of what was offered to them
FLOOR_HEADROOM = 2.0  # the floor's capacity, at least this many times the offered rate
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
FAILED = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nok"
FLOOR_ID = "floor-"  # the floor's delivery ids start with this


def kind_of(index: int) -> str:
    """Per website (subscription `index` belongs to website `index % WEBSITES`): 90 % healthy, 5 % slow,
    5 % failing."""
    n = index // WEBSITES
    return "failing" if n % 20 == 0 else "slow" if n % 20 == 10 else "healthy"


# --- the receivers: a process each ---------------------------------------------------------------------

class Board:
    """What a receivers process saw: (path, position, delivery id, arrival time) per request."""

    def __init__(self, slow_seconds: float):
        self.slow_seconds = slow_seconds
        self.arrivals: list[tuple[str, int, str, float]] = []
        self.healthy = 0  # the service's requests to healthy endpoints (the floor's not counted)


class Receiving(asyncio.Protocol):
    """One keep-alive connection: parses each request's head, records it, answers as its path says."""

    def __init__(self, board: Board):
        self.board = board
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = self.buffer[:end].split(b"\r\n")
            length, position, delivery = 0, 0, ""
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"x-service-position":
                    position = int(value)
                elif name == b"x-service-delivery":
                    delivery = value.strip().decode()
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            arrived = time.time()
            path = lines[0].split(b" ")[1].decode()
            self.board.arrivals.append((path, position, delivery, arrived))
            kind = path.split("/")[1]
            if kind == "slow":
                asyncio.get_running_loop().call_later(self.board.slow_seconds, self._answer, ANSWER)
            else:
                if kind == "healthy" and not delivery.startswith(FLOOR_ID):
                    self.board.healthy += 1
                self.transport.write(FAILED if kind == "failing" else ANSWER)

    def _answer(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)


def receivers_main(control, slow_seconds: float) -> None:
    """A receivers process: serves on a free loopback port (sent first), then answers `control`'s requests
    from a thread: "count" (the service's healthy requests so far), "dump" (every arrival), "stop"."""
    board = Board(slow_seconds)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Receiving(board), "127.0.0.1", 0, backlog=4096)
        control.send(server.sockets[0].getsockname()[1])
        stopped = asyncio.Event()

        def answer() -> None:
            while True:
                command = control.recv()
                if command == "count":
                    control.send(board.healthy)
                elif command == "dump":
                    control.send(list(board.arrivals))
                else:
                    loop.call_soon_threadsafe(stopped.set)
                    return

        threading.Thread(target=answer, daemon=True).start()
        await stopped.wait()

    uvloop.run(serve())


class Receivers:
    """The receivers processes, subscription `index` on process `index % len(ports)`."""

    def __init__(self, count: int, slow_seconds: float):
        context = multiprocessing.get_context("spawn")
        self.controls, self.processes, self.ports = [], [], []
        for _ in range(count):
            mine, theirs = context.Pipe()
            process = context.Process(target=receivers_main, args=(theirs, slow_seconds), daemon=True)
            process.start()
            self.controls.append(mine)
            self.processes.append(process)
        self.ports = [control.recv() for control in self.controls]

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index % len(self.ports)]}/{kind_of(index)}/{index}"

    def healthy(self) -> int:
        for control in self.controls:
            control.send("count")
        return sum(control.recv() for control in self.controls)

    def arrivals(self) -> list[tuple[str, int, str, float]]:
        for control in self.controls:
            control.send("dump")
        return [arrival for control in self.controls for arrival in control.recv()]

    def cpu(self) -> float:
        return sum(cpu_seconds(process.pid) for process in self.processes)

    def stop(self) -> None:
        for control in self.controls:
            control.send("stop")
        for process in self.processes:
            process.join(10)


# --- the floor: a bare keep-alive HTTP client ------------------------------------------------------------

class Posting(asyncio.Protocol):
    """One keep-alive connection of the floor's client: one request at a time, the answer read by its
    Content-Length."""

    def __init__(self) -> None:
        self.buffer = b""
        self.waiter: asyncio.Future | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        length = 0
        for line in self.buffer[:end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        if len(self.buffer) >= end + 4 + length:
            status = int(self.buffer[9:12])
            self.buffer = self.buffer[end + 4 + length:]
            self.waiter.set_result(status)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("closed"))


class FloorClient:
    def __init__(self) -> None:
        self.idle: dict[int, list[Posting]] = defaultdict(list)

    async def post(self, port: int, request: bytes) -> int:
        idle = self.idle[port]
        if idle:
            connection = idle.pop()
        else:
            _, connection = await asyncio.get_running_loop().create_connection(Posting, "127.0.0.1", port)
        connection.waiter = asyncio.get_running_loop().create_future()
        connection.transport.write(request)
        status = await connection.waiter
        idle.append(connection)
        return status


def signed_request(path: str, event: str, body: bytes, secret: str, delivery: str, position: int) -> bytes:
    """The request the service sends, header for header."""
    timestamp = int(time.time())
    signature = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Parley-Webhooks/1\r\nAccept: */*\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nX-Service-Event: {event}\r\n"
            f"X-Service-Signature: t={timestamp},v1={signature}\r\nX-Service-Delivery: {delivery}\r\n"
            f"X-Service-Position: {position}\r\n\r\n").encode() + body


# --- the run --------------------------------------------------------------------------------------------

@dataclass
class Subscription:
    index: int
    kind: str
    website: uuid.UUID
    id: uuid.UUID
    secret: str
    path: str
    port: int


@dataclass
class Round:
    """One measured stretch: the figure's (events committed) or the floor's (requests sent)."""

    kind: str  # figure or floor
    sent: dict[str, float] = field(default_factory=dict)  # floor: delivery id -> send time
    committed: dict[int, tuple[float, uuid.UUID]] = field(default_factory=dict)  # figure: position -> (time, website)
    cpu: dict[str, float] = field(default_factory=dict)  # process group -> CPU seconds spent
    capacity: float = 0.0  # floor: requests/s as fast as it can
    started: float = 0.0  # when the sending or committing began
    ended: float = 0.0  # when it ended
    finished: float = 0.0  # figure: when the healthy endpoints had every delivery due


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def postgres_cpu(postmaster: int) -> float:
    """The PostgreSQL server's CPU so far: the postmaster and its live children (the backends)."""
    process = psutil.Process(postmaster)
    total = 0.0
    for each in [process, *process.children()]:
        try:
            times = each.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def setup(store: EventStore, sealer: Sealer, receivers: Receivers) -> tuple[Principal, list[uuid.UUID], list[Subscription]]:
    org = admin.create_org(store, "Bench")
    principal = Principal("operator", org.id, uuid.uuid4())
    websites = [admin.create_website(store, sealer, org.id, f"bench-{i}", None)[0].id for i in range(WEBSITES)]
    subscriptions = []
    for index in range(SUBSCRIPTIONS):
        url, website = receivers.url(index), websites[index % WEBSITES]
        created, secret = subscribe(store, sealer, principal, WebhookCreate(website_id=str(website), url=url), True)
        port, path = url.removeprefix("http://127.0.0.1:").split("/", 1)
        subscriptions.append(Subscription(index, kind_of(index), website, created.id, secret, "/" + path, int(port)))
    return principal, websites, subscriptions


async def wait_for(database_url: str, query: str, done, timeout: float, what: str) -> None:
    """Polls `query` until `done(first column)`; raises if that takes longer than `timeout` seconds."""
    deadline = time.monotonic() + timeout
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        while not done((await (await conn.execute(query)).fetchone())[0]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"gave up waiting for {what}")
            await asyncio.sleep(0.1)


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


class Run:
    def __init__(self, args: argparse.Namespace, database_url: str, postmaster: int, receivers: Receivers,
                 workers: list, store: EventStore, sealer: Sealer):
        self.args, self.database_url, self.postmaster = args, database_url, postmaster
        self.receivers, self.workers, self.store, self.sealer = receivers, workers, store, sealer
        self.events_per_second = args.rate / PER_WEBSITE
        self.client = FloorClient()
        self.healthy_due = 0
        self.bodies: list[tuple[str, bytes]] = []

    def cpu(self) -> dict[str, float]:
        return {"workers": sum(cpu_seconds(worker.pid) for worker in self.workers),
                "postgres": postgres_cpu(self.postmaster), "receivers": self.receivers.cpu(),
                "client": cpu_seconds(os.getpid())}

    async def figure(self, principal: Principal, websites: list[uuid.UUID], subscriptions: list[Subscription],
                     seconds: float) -> Round:
        """Enables the failing endpoints again, then commits events for `seconds` and waits until the
        healthy endpoints have all of theirs."""
        def enable() -> list[uuid.UUID]:
            with psycopg.connect(self.database_url) as conn:
                disabled = [row[0] for row in conn.execute(
                    "SELECT id FROM rm_webhook_subscriptions WHERE NOT active").fetchall()]
            for subscription_id in disabled:
                update(self.store, principal, subscription_id, WebhookUpdate(active=True), True)
            return disabled
        enabled = await asyncio.to_thread(enable)
        await wait_for(self.database_url, "SELECT count(*) FROM rm_webhook_subscriptions WHERE active AND id = ANY("
                       f"ARRAY{[str(i) for i in enabled]}::uuid[])", lambda n: n == len(enabled), 60,
                       "the endpoints enabled")
        this = Round("figure")
        before, this.started = self.cpu(), time.time()
        this.committed = await asyncio.to_thread(write_events, self.store, principal, websites, seconds,
                                                 self.events_per_second)
        this.ended = time.time()
        healthy_per_event = sum(1 for s in subscriptions if s.kind == "healthy") // WEBSITES
        self.healthy_due += len(this.committed) * healthy_per_event
        deadline = time.monotonic() + 120
        while self.receivers.healthy() < self.healthy_due and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        this.cpu = {k: v - before[k] for k, v in self.cpu().items()}
        this.finished = time.time()
        return this

    async def floor(self, subscriptions: list[Subscription], seconds: float) -> Round:
        """The same bodies to the same healthy receivers at the same pace, then as fast as it goes."""
        healthy = defaultdict(list)
        for s in subscriptions:
            if s.kind == "healthy":
                healthy[s.website].append(s)
        websites = list(healthy)
        this = Round("floor")
        pending: set[asyncio.Task] = set()

        def send(s: Subscription, n: int, sent: float) -> None:
            event, body = self.bodies[n % len(self.bodies)]
            delivery = f"{FLOOR_ID}{uuid.uuid4()}"
            this.sent[delivery] = sent
            task = asyncio.create_task(self.client.post(s.port, signed_request(s.path, event, body, s.secret,
                                                                               delivery, 0)))
            pending.add(task)
            task.add_done_callback(pending.discard)

        before, this.started = self.cpu(), time.time()
        started, n = time.monotonic(), 0
        while (due := started + n / self.events_per_second) < started + seconds:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            sent = time.time()
            for s in healthy[websites[n % len(websites)]]:
                send(s, n, sent)
            n += 1
        await asyncio.gather(*pending)
        this.ended = this.finished = time.time()
        this.cpu = {k: v - before[k] for k, v in self.cpu().items()}
        everyone = [s for group in healthy.values() for s in group]
        requests = [signed_request(s.path, *self.bodies[i % len(self.bodies)], s.secret, f"{FLOOR_ID}{i}", 0)
                    for i, s in enumerate(everyone * -(-int(self.args.rate * 2) // len(everyone)))]
        ports = [s.port for s in everyone]
        queue = iter(range(len(requests)))
        started = time.perf_counter()

        async def post_all() -> None:
            for i in queue:
                await self.client.post(ports[i % len(ports)], requests[i])

        await asyncio.gather(*(post_all() for _ in range(100)))
        this.capacity = len(requests) / (time.perf_counter() - started)
        return this

    async def quiescent(self, timeout: float) -> None:
        """Until no delivery is pending (the failing endpoints end disabled, their deliveries stopped)."""
        await wait_for(self.database_url, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'",
                       lambda n: n == 0, timeout, "the deliveries to end")
        await asyncio.sleep(0.5)


async def run(args: argparse.Namespace) -> list[Goal]:
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    root.chmod(0o755)
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    sealer = Sealer(key)
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    postmaster = int((root / "postgres" / "pgdata" / "postmaster.pid").read_text().split()[0])
    receivers = Receivers(args.receivers, args.slow_seconds)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env.update(PARLEY_DATABASE_URL=postgres.url, PARLEY_NATS_URL=nats_server.url, PARLEY_SECRETS_KEY=key,
               PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_WEBHOOK_RETRY_BASE_SECONDS="0.5",
               PARLEY_WEBHOOK_RETRY_CAP_SECONDS="5", PARLEY_LOG_LEVEL="WARNING")
    workers = [start_serve(root / f"workers-{n}", env, role="workers")[0] for n in range(args.workers)]
    store = EventStore(postgres.url, pool_size=2)
    try:
        principal, websites, subscriptions = await asyncio.to_thread(setup, store, sealer, receivers)
        print(f"{SUBSCRIPTIONS} subscriptions over {WEBSITES} websites: "
              f"{dict(Counter(s.kind for s in subscriptions))}; {args.workers} workers process(es), "
              f"{args.receivers} receivers process(es); offered {args.rate:.0f} deliveries/s", flush=True)
        await wait_for(postgres.url, "SELECT count(*) FROM rm_webhook_subscriptions", lambda n: n == SUBSCRIPTIONS,
                       60, "the subscriptions projected")
        bench = Run(args, postgres.url, postmaster, receivers, workers, store, sealer)
        figures: list[Round] = [await bench.figure(principal, websites, subscriptions, min(3.0, args.seconds))]
        async with await psycopg.AsyncConnection.connect(postgres.url) as conn:
            bench.bodies = [(event, bytes(body)) for event, body in await (await conn.execute(
                "SELECT DISTINCT ON (position) event, body FROM webhook_deliveries LIMIT 50")).fetchall()]
        floors = [await bench.floor(subscriptions, min(3.0, args.seconds))]
        print("warmed up", flush=True)
        for _ in range(args.rounds):
            floors.append(await bench.floor(subscriptions, args.seconds))
            figures.append(await bench.figure(principal, websites, subscriptions, args.seconds))
        await bench.quiescent(600)
        return report(args, receivers.arrivals(), subscriptions, postgres.url, figures, floors)
    finally:
        store.close()
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)
        receivers.stop()
        nats_server.stop()
        postgres.stop()


def report(args: argparse.Namespace, arrivals: list[tuple[str, int, str, float]], subscriptions: list[Subscription],
           database_url: str, figures: list[Round], floors: list[Round]) -> list[Goal]:
    kinds = {s.path: s.kind for s in subscriptions}
    service = [a for a in arrivals if not a[2].startswith(FLOOR_ID)]
    floor_arrived = {a[2]: a[3] for a in arrivals if a[2].startswith(FLOOR_ID)}
    first: dict[str, tuple[str, int, float]] = {}
    for path, position, delivery, arrived in service:
        if delivery not in first or arrived < first[delivery][2]:
            first[delivery] = (path, position, arrived)

    def in_window(r: Round) -> int:
        return sum(1 for a in service if r.started <= a[3] <= r.finished)

    print("round   | offered/s | healthy delivered/s (x their offer) | healthy p50 / p99 ms | "
          "workers / PostgreSQL CPU per delivery | floor p50 / p99 ms | floor capacity/s | floor CPU per request")
    measured = []
    for number, (figure, floor) in enumerate(zip(figures, floors)):
        delays = [(arrived - figure.committed[position][0]) * 1000 for path, position, arrived in first.values()
                  if position in figure.committed and kinds[path] == "healthy"]
        healthy_arrivals = [arrived for path, position, arrived in first.values()
                            if position in figure.committed and kinds[path] == "healthy"]
        commits = sorted(t for t, _ in figure.committed.values())
        offered = len(commits) * PER_WEBSITE / (commits[-1] - commits[0] + 1 / (args.rate / PER_WEBSITE))
        healthy_share = sum(1 for s in subscriptions if s.kind == "healthy") / SUBSCRIPTIONS
        healthy_rate = len(healthy_arrivals) / (max(healthy_arrivals) - figure.started)
        kept_up = healthy_rate / (offered * healthy_share)
        attempts = in_window(figure)
        floor_delays = [(floor_arrived[d] - sent) * 1000 for d, sent in floor.sent.items() if d in floor_arrived]
        row = {"offered": offered, "kept_up": kept_up, "p50": percentile(delays, 50), "p99": percentile(delays, 99),
               "workers_us": figure.cpu["workers"] / attempts * 1e6,
               "postgres_us": figure.cpu["postgres"] / attempts * 1e6,
               "floor_p50": percentile(floor_delays, 50), "floor_p99": percentile(floor_delays, 99),
               "capacity": floor.capacity, "floor_us": floor.cpu["client"] / len(floor.sent) * 1e6,
               "receivers_us": figure.cpu["receivers"] / attempts * 1e6,
               "floor_receivers_us": floor.cpu["receivers"] / len(floor.sent) * 1e6}
        print(f"{'warm-up' if number == 0 else number:7} | {offered:9.0f} | {healthy_rate:8.0f} ({kept_up:.2f}x)"
              f"{'':18} | {row['p50']:6.1f} / {row['p99']:6.1f}     | {row['workers_us']:6.0f} / "
              f"{row['postgres_us']:4.0f} µs{'':18} | {row['floor_p50']:5.1f} / {row['floor_p99']:5.1f}     | "
              f"{floor.capacity:8.0f}         | {row['floor_us']:4.0f} µs")
        if number:
            measured.append(row)

    def mean(name: str) -> float:
        return sum(row[name] for row in measured) / len(measured)

    p99 = max(row["p99"] for row in measured)
    floor_p99 = mean("floor_p99")
    print(f"\nmeasured rounds: offered {mean('offered'):.0f} deliveries/s; healthy endpoints got "
          f"{mean('kept_up'):.2f}x their share of it; healthy p99 {p99:.1f} ms = {p99 / floor_p99:.1f}x the floor's "
          f"{floor_p99:.1f} ms (p50 {mean('p50'):.1f} ms = {mean('p50') / mean('floor_p50'):.1f}x)")
    print(f"CPU per delivery: workers {mean('workers_us'):.0f} µs + PostgreSQL {mean('postgres_us'):.0f} µs = "
          f"{(mean('workers_us') + mean('postgres_us')) / mean('floor_us'):.1f}x the floor client's "
          f"{mean('floor_us'):.0f} µs per request; receivers {mean('receivers_us'):.0f} µs per request "
          f"(floor: {mean('floor_receivers_us'):.0f} µs)")
    print(f"floor capacity {mean('capacity'):.0f} requests/s = {mean('capacity') / args.rate:.1f}x the offered rate")

    with psycopg.connect(database_url) as conn:
        due = conn.execute("SELECT s.url, d.position, d.id, d.status FROM webhook_deliveries d "
                           "JOIN rm_webhook_subscriptions s ON s.id = d.subscription_id").fetchall()
        attempts = {delivery: (count, succeeded, errors) for delivery, count, succeeded, errors in conn.execute(
            "SELECT delivery_id::text, count(*), count(*) FILTER (WHERE response_status BETWEEN 200 AND 299), "
            "array_agg(error ORDER BY id) FILTER (WHERE error IS NOT NULL) FROM webhook_attempts "
            "GROUP BY delivery_id").fetchall()}
        statuses = dict(conn.execute("SELECT status, count(*) FROM webhook_deliveries GROUP BY status").fetchall())
        stages = conn.execute(
            "SELECT DISTINCT ON (d.id) d.position, EXTRACT(EPOCH FROM d.created_at)::float8, "
            "EXTRACT(EPOCH FROM a.at)::float8, a.latency_ms FROM webhook_deliveries d "
            "JOIN webhook_attempts a ON a.delivery_id = d.id ORDER BY d.id, a.id").fetchall()
    commit_times = {p: t for r in figures[1:] for p, (t, _) in r.committed.items()}
    stages = [stage for stage in stages if stage[0] in commit_times]
    split = [("commit to delivery recorded", [(created - commit_times[p]) * 1000 for p, created, _, _ in stages]),
             ("recorded to first attempt started", [(at - created) * 1000 - latency for _, created, at, latency in stages]),
             ("the POST", [float(latency) for *_, latency in stages])]
    print("where the delay goes, every endpoint (p50 / p99 ms): " + "; ".join(
        f"{stage} {percentile(values, 50):.1f} / {percentile(values, 99):.1f}" for stage, values in split))
    # Exactly once: every request received is a recorded attempt (a timed-out attempt is retried with the
    # same delivery id, as the contract says), and no delivery succeeded twice (a lease that expired
    # while its attempt was still running would show as two successes).
    counts = Counter(a[2] for a in service)
    wrong: list[str] = []
    retried: Counter[str] = Counter()
    by_path: dict[str, set[int]] = defaultdict(set)
    for url, position, delivery_id, status in due:
        path = "/" + url.split("/", 3)[3]
        by_path[path].add(position)
        made, succeeded, errors = attempts.get(str(delivery_id), (0, 0, None))
        if counts[str(delivery_id)] != made or succeeded > 1 or (kinds[path] != "failing" and succeeded != 1):
            wrong.append(f"{path} position {position} ({status}): {counts[str(delivery_id)]} arrivals, {made} "
                         f"attempts recorded, {succeeded} succeeded")
        if kinds[path] != "failing" and made > 1:
            retried[(errors or ["?"])[0].split(" after")[0]] += 1
    committed = {p: w for r in figures for p, (_, w) in r.committed.items()}
    missing = sum(1 for s in subscriptions if s.kind != "failing"
                  and by_path[s.path] != {p for p, w in committed.items() if w == s.website})
    exact = not wrong and not missing
    print(f"deliveries: {dict(statuses)}; requests received from the service: {len(service)}; healthy or slow "
          f"deliveries attempted more than once: {sum(retried.values())} {dict(retried)}")
    print(f"exactly as often as due: {'yes' if exact else 'NO'}"
          + ("" if exact else f" ({len(wrong)} wrong counts, {missing} subscriptions missing events): {wrong[:5]}"))

    return [Goal.at_least("deliveries/s offered", mean("offered"), GOAL_RATE * 0.99, "/s"),
            Goal.at_least("healthy endpoints' deliveries x their share of the offer", mean("kept_up"), KEPT_UP, "x"),
            Goal.at_most("healthy endpoints' p99", p99, GOAL_P99_MS),
            Goal("exactly as often as due", exact, "yes" if exact else f"{len(wrong)} wrong counts, {missing} missing"),
            Goal.at_least("the floor's capacity (else the receivers or the client are the bottleneck)",
                          mean("capacity"), FLOOR_HEADROOM * args.rate, "requests/s")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=GOAL_RATE, help="deliveries offered per second")
    parser.add_argument("--workers", type=int, default=1, help="`parley serve --role workers` processes")
    parser.add_argument("--seconds", type=float, default=10, help="length of each measured round")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds of the figure and of the floor")
    parser.add_argument("--receivers", type=int, default=1, help="receivers processes")
    parser.add_argument("--slow-seconds", type=float, default=0.5, help="how long a slow endpoint takes to answer")
    args = parser.parse_args()
    finish(uvloop.run(run(args)))


if __name__ == "__main__":
    main()
