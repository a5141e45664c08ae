"""Realtime at scale: many open visitor streams on one API process.

Starts embedded PostgreSQL and NATS and a real `parley serve`, makes `--streams` visitors (a chat session
and a conversation each) and opens one visitor stream per visitor (plus `--operators` operator streams)
from a client process of its own (`bench/realtime_clients.py`: one `asyncio.Protocol` per stream, no task),
so neither the server nor this measuring process pays for the far ends. Then it reports:

- post-to-frame delay: operator replies posted at `--rate` per second, spread over the visitors'
  conversations (each reaches one visitor stream, and every operator stream), from sending the POST (here)
  to the frame's arrival (in the client process; both read CLOCK_MONOTONIC); goal p99 <= 50 ms;
- the server's resident memory per open stream (its RSS after opening them, less before); goal <= 16 KiB;
- the server's CPU per idle stream per minute (keep-alives and whatever else an idle stream costs): its
  CPU time over `--idle-seconds` with the streams open, less the same span before they were opened.

The floor, measured in the same run: a bare NATS fan-out, as many subscriptions (one subject each) on one
NATS connection in another client process, a message published to one of them from here at the same rate.
Its figures are measured the same way (the subscriber process's memory and idle CPU, publish-to-callback
delay), the idle windows side by side with the server's, and the delay phases interleaved with the
server's. The bench exits non-zero when a goal is missed.

It raises its own limit of open files to the hard limit (the server and the client process inherit it):
the product's defaults are left as they are (docs/deployment.md says what a site of that size needs).

    python bench/realtime.py [--streams 1000] [--operators 0] [--rate 200] [--seconds 10] [--idle-seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import nats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.rawhttp import RawClient  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

GOAL_P99_MS = 50.0
GOAL_KIB_PER_STREAM = 16.0
ROUNDS = 4  # server and floor delay phases alternate this many times
SEEDING = 32  # concurrent requests while making the visitors
TICKS = os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def quiet(pid: int, seconds: float = 2, most: float = 0.05, patience: float = 120) -> None:
    """Waits (at most `patience` s) until the process used less than `most` of a core over `seconds`."""
    deadline = time.perf_counter() + patience
    while time.perf_counter() < deadline:
        before = cpu_seconds(pid)
        await asyncio.sleep(seconds)
        if cpu_seconds(pid) - before < most * seconds:
            return


def raise_fd_limit() -> int:
    """As many open files as the hard limit allows, for this process and those it starts."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def start_server(database_url: str, nats_url: str, data_dir: Path, secrets_key: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    # the bench is one operator and one client address far above the default rate limits
    env.update(PARLEY_DATABASE_URL=database_url, PARLEY_NATS_URL=nats_url, PARLEY_LOG_LEVEL="WARNING",
               PARLEY_SECRETS_KEY=secrets_key,  # the website's secret is sealed here, and opened by the server
               PARLEY_RATE_OPERATOR_PER_MINUTE="10000000", PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000",
               PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="10000000")
    return start_serve(data_dir, env)


class Clients:
    """A `bench/realtime_clients.py` process."""

    def __init__(self, spec: dict):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "realtime_clients.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self._say(json.dumps(spec))
        assert self._hear() == "connected"

    def _say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _hear(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the client process exited with {self.proc.wait()}")
        return line.strip()

    def open(self) -> int:
        """Opens the streams; returns the client process's own memory for them, KiB."""
        self._say("open")
        _, before, after = self._hear().split()
        return int(after) - int(before)

    def arrivals(self) -> dict[int, list[float]]:
        self._say("report")
        return {int(k): v for k, v in json.loads(self._hear()).items()}

    def stop(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait(30)


async def paced(rate: float, first: int, count: int, send) -> dict[int, float]:
    """Calls `send(i)` for i in first..first+count-1 as a task every 1/rate seconds, without waiting for
    earlier ones; returns when each was sent."""
    start, tasks, sent = time.perf_counter(), [], {}
    for n in range(count):
        delay = start + n / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        sent[first + n] = time.perf_counter()
        tasks.append(asyncio.create_task(send(first + n)))
    await asyncio.gather(*tasks)
    return sent


async def first_conversation(client: RawClient, visitor: dict[str, str]) -> str:
    while True:
        status, body = await client.get("/api/chat/conversations", headers=visitor)
        if status == 200 and (found := json.loads(body)):
            return found[0]["_id"]
        await asyncio.sleep(0.2)


async def seed(base_url: str, website_id: str, count: int) -> tuple[list[str], list[str]]:
    """`count` visitors, each with a chat session and a conversation: their authorizations and conversations."""
    anonymous = RawClient(base_url)
    authorizations: list[str] = [""] * count
    conversations: list[str] = [""] * count
    gate = asyncio.Semaphore(SEEDING)

    async def one(i: int) -> None:
        async with gate:
            status, body = 503, b""
            while status == 503:  # the read models are behind: a session more does no harm
                status, body = await anonymous.post("/api/chat/sessions", {"websiteId": website_id})
            assert status == 200, body
            visitor = {"Authorization": f"ChatSession {json.loads(body)['sessionToken']}"}
            status, body = await anonymous.post("/api/chat/conversations", None, headers=visitor)
            if status == 503:  # stored, but the read models do not show it yet
                conversations[i] = await first_conversation(anonymous, visitor)
            else:
                assert status == 200, body
                conversations[i] = json.loads(body)["_id"]
            authorizations[i] = visitor["Authorization"]

    await asyncio.gather(*(one(i) for i in range(count)))
    anonymous.close()
    return authorizations, conversations


def spread(i: int, count: int) -> int:
    """Which of `count` streams message i is for: consecutive messages far apart, all streams in turn."""
    return (i * 7919) % count


def ratio(value: float, floor: float) -> str:
    return f"{value / floor:.1f}x floor" if floor > 0 else "floor ~0"


async def run(args, base_url: str, server_pid: int, store: EventStore, nats_url: str, sealer: Sealer) -> list[Goal]:
    org = admin.create_org(store, "bench")
    website, _ = admin.create_website(store, sealer, org.id, "bench-site", None)
    _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "correct horse")
    operator = f"Token {operator_token}"
    poster = RawClient(base_url, {"Authorization": operator})
    while (await poster.get("/api/websites"))[0] != 200:
        await asyncio.sleep(0.1)
    started = time.perf_counter()
    visitors, conversations = await seed(base_url, str(website.id), args.streams)
    print(f"made {args.streams} visitors in {time.perf_counter() - started:.1f} s")
    host, port = base_url.removeprefix("http://").split(":")
    streams = [["/api/chat/realtime", auth] for auth in visitors] + [["/api/realtime", operator]] * args.operators
    subjects = [f"bench.floor.{k}" for k in range(args.streams)]
    sse = Clients({"mode": "sse", "host": host, "port": int(port), "streams": streams})
    floor = Clients({"mode": "nats", "url": nats_url, "subjects": subjects})
    publisher = await nats.connect(nats_url)
    try:
        # idle CPU: the same span before and after the streams (and the floor's subscriptions) open, once the
        # server is done with the seeding (its read models catching up)
        await quiet(server_pid)
        idle = {}
        for phase in ("closed", "open"):
            if phase == "open":
                rss_before = rss_kib(server_pid)
                started = time.perf_counter()
                client_kib = sse.open()
                opened_in = time.perf_counter() - started
                floor_kib = floor.open()
                await asyncio.sleep(2)
                server_kib = rss_kib(server_pid) - rss_before
            cpu = (cpu_seconds(server_pid), cpu_seconds(floor.proc.pid))
            await asyncio.sleep(args.idle_seconds)
            idle[phase] = (cpu_seconds(server_pid) - cpu[0], cpu_seconds(floor.proc.pid) - cpu[1])
        total = len(streams)
        per_minute = 60 / args.idle_seconds
        server_idle = (idle["open"][0] - idle["closed"][0]) / total * per_minute * 1000  # ms per stream per minute
        floor_idle = (idle["open"][1] - idle["closed"][1]) / total * per_minute * 1000

        failures: Counter[int] = Counter()

        async def post(i: int) -> None:
            status, _ = await poster.post("/api/messages", {
                "conversationId": conversations[spread(i, args.streams)], "content": f"bench-{i}", "from": "operator"})
            if status != 200:
                failures[status] += 1

        async def publish(i: int) -> None:
            await publisher.publish(subjects[spread(i, args.streams)], str(i).encode())
            await publisher.flush()

        per_phase = int(args.rate * args.seconds / ROUNDS)
        warmup = int(args.rate)
        sent_server = await paced(args.rate, 0, warmup, post)
        sent_floor = await paced(args.rate, 0, warmup, publish)
        counted_server: dict[int, float] = {}
        counted_floor: dict[int, float] = {}
        first = warmup
        for _ in range(ROUNDS):
            counted_server.update(await paced(args.rate, first, per_phase, post))
            counted_floor.update(await paced(args.rate, first, per_phase, publish))
            first += per_phase
        await asyncio.sleep(2)
        arrived_server, arrived_floor = sse.arrivals(), floor.arrivals()
    finally:
        await publisher.close()
        poster.close()
        sse.stop()
        floor.stop()

    expected = 1 + args.operators
    delays = [(at - counted_server[i]) * 1000 for i in counted_server for at in arrived_server.get(i, [])]
    floor_delays = [(at - counted_floor[i]) * 1000 for i in counted_floor for at in arrived_floor.get(i, [])]
    missing = len(counted_server) * expected - len(delays)
    floor_missing = len(counted_floor) - len(floor_delays)
    del sent_server, sent_floor
    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    f50, f99 = percentile(floor_delays, 50), percentile(floor_delays, 99)
    server_per_stream = server_kib / total
    floor_per_sub = floor_kib / args.streams
    print(f"streams: {args.streams} visitor + {args.operators} operator, opened in {opened_in:.1f} s "
          f"(the client process holds them in {client_kib / total:.1f} KiB each); "
          f"{len(counted_server)} messages at {args.rate:g}/s in {ROUNDS} phases interleaved with the floor's")
    print(f"floor: {args.streams} subscriptions on one NATS connection in one process, one published to at a time")
    print(f"post-to-frame delay: p50 {p50:.2f} ms ({ratio(p50, f50)}), p99 {p99:.2f} ms ({ratio(p99, f99)}); "
          f"floor publish-to-callback p50 {f50:.2f} ms, p99 {f99:.2f} ms; "
          f"{missing} frames missing, {floor_missing} floor messages missing, {sum(failures.values())} failed POSTs {dict(failures)}")
    print(f"memory per open stream: {server_per_stream:.2f} KiB ({ratio(server_per_stream, floor_per_sub)}); "
          f"floor {floor_per_sub:.2f} KiB per subscription")
    print(f"CPU per idle stream per minute: {server_idle:.3f} ms ({ratio(server_idle, floor_idle)}); "
          f"floor {floor_idle:.3f} ms per subscription (server idle CPU {idle['closed'][0]:.2f} s without the "
          f"streams, {idle['open'][0]:.2f} s with them, over {args.idle_seconds:g} s)")
    failed = sum(failures.values())
    return [Goal(f"post-to-frame p99 <= {GOAL_P99_MS:g} ms with every frame delivered",
                 p99 <= GOAL_P99_MS and not missing and not failed,
                 f"{p99:.2f} ms, {missing} frames missing, {failed} failed POSTs"),
            Goal.at_most("memory per open stream", server_per_stream, GOAL_KIB_PER_STREAM, "KiB")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=1000, help="open visitor streams")
    parser.add_argument("--operators", type=int, default=0, help="open operator streams (each receives every message)")
    parser.add_argument("--rate", type=float, default=200, help="messages per second")
    parser.add_argument("--seconds", type=float, default=10, help="of messages, server and floor each")
    parser.add_argument("--idle-seconds", type=float, default=30, help="the idle CPU window, before and after opening")
    args = parser.parse_args()
    limit = raise_fd_limit()
    if limit < args.streams + args.operators + 1000:
        sys.exit(f"the hard limit of open files ({limit}) is too low for {args.streams + args.operators} streams")
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    proc = None
    print(f"load average at start: {Path('/proc/loadavg').read_text().strip()}")
    try:
        secrets_key = secrets.token_urlsafe(32)
        proc, base_url = start_server(postgres.url, nats_server.url, root / "data", secrets_key)
        store = EventStore(postgres.url, pool_size=2)
        try:
            goals = asyncio.run(run(args, base_url, proc.pid, store, nats_server.url, Sealer(secrets_key)))
        finally:
            store.close()
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
        nats_server.stop()
        postgres.stop()
    finish(goals)


if __name__ == "__main__":
    main()
