"""Realtime push delay and memory per open stream.

Starts embedded PostgreSQL and NATS and a real `parley serve`, opens 200 visitor streams and 20 operator
streams, posts operator replies at a steady rate (round-robin over the visitors' conversations, so each
message reaches one visitor stream and every operator stream; through `bench/rawhttp.py`, so the client
takes little of the machine's CPU from the server), and reports the delay from sending the
POST to the frame's arrival on each stream (p50/p99), and the server's resident memory per open stream.

The floor, measured in the same run by the same client process at the same rate: a bare NATS
publish -> subscriber delivery on the same NATS server, the least any push through the event log could
cost. Results are printed as milliseconds and as ratios against the floor.

    python bench/realtime.py [--visitors 200] [--operators 20] [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
import nats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from bench.figures import percentile  # noqa: E402
from bench.rawhttp import RawClient  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

# a message frame: its number, and its creationTime (stamped by the command just before the append)
FRAME = re.compile(rb'"content":"bench-(\d+)".*?"creationTime":"([^"]+)"')


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start_server(database_url: str, nats_url: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    # the bench is one operator and one client address far above the default rate limits
    env.update(PARLEY_DATABASE_URL=database_url, PARLEY_NATS_URL=nats_url, PARLEY_LOG_LEVEL="WARNING",
               PARLEY_RATE_OPERATOR_PER_MINUTE="10000000", PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000",
               PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="10000000")
    return start_serve(data_dir, env)


async def open_stream(base_url: str, path: str, authorization: str, arrivals: dict[int, list[float]],
                      after_commit: list[float]) -> asyncio.Task:
    """A raw SSE reader: one TCP connection, frames scanned for the message number they carry."""
    host, port = base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n"
                 f"Accept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head

    async def read() -> None:
        tail = b""
        while chunk := await reader.read(65536):
            now = time.perf_counter()
            data = tail + chunk
            cut = data.rfind(b"\n\n") + 2
            wall = time.time()
            for match in FRAME.finditer(data[:cut]):
                arrivals.setdefault(int(match.group(1)), []).append(now)
                after_commit.append(wall - datetime.fromisoformat(match.group(2).decode()).timestamp())
            tail = data[cut:]

    task = asyncio.create_task(read())
    task.add_done_callback(lambda _: writer.close())
    return task


async def paced(rate: float, count: int, send) -> None:
    """Calls `send(i)` as a task every 1/rate seconds, without waiting for earlier ones."""
    start, tasks = time.perf_counter(), []
    for i in range(count):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(i)))
    await asyncio.gather(*tasks)


async def nats_floor(nats_url: str, rate: float, count: int) -> list[float]:
    nc = await nats.connect(nats_url)
    sent: dict[int, float] = {}
    delays: list[float] = []
    done = asyncio.Event()

    async def received(msg) -> None:
        delays.append(time.perf_counter() - sent[int(msg.data)])
        if len(delays) == count:
            done.set()

    sub_conn = await nats.connect(nats_url)
    await sub_conn.subscribe("bench.floor", cb=received)
    await sub_conn.flush()

    async def send(i: int) -> None:
        sent[i] = time.perf_counter()
        await nc.publish("bench.floor", str(i).encode())
        await nc.flush()

    await paced(rate, count, send)
    await asyncio.wait_for(done.wait(), 30)
    await nc.close()
    await sub_conn.close()
    return delays


async def run(args, base_url: str, server_pid: int, store: EventStore, nats_url: str) -> None:
    org = admin.create_org(store, "bench")
    website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-site", None)
    _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "correct horse")
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        operator = {"Authorization": f"Token {operator_token}"}
        while (await http.get("/api/websites", headers=operator)).status_code != 200:
            await asyncio.sleep(0.1)
        visitors, conversations = [], []
        for _ in range(args.visitors):
            session = (await http.post("/api/chat/sessions", json={"websiteId": str(website.id)})).json()
            headers = {"Authorization": f"ChatSession {session['sessionToken']}"}
            conversations.append((await http.post("/api/chat/conversations", headers=headers)).json()["_id"])
            visitors.append(headers["Authorization"])
        await asyncio.sleep(1)
        rss_before = rss_kib(server_pid)
        arrivals: dict[int, list[float]] = {}
        after_commit: list[float] = []
        readers = [await open_stream(base_url, "/api/chat/realtime", auth, arrivals, after_commit)
                   for auth in visitors]
        readers += [await open_stream(base_url, "/api/realtime", f"Token {operator_token}", arrivals, after_commit)
                    for _ in range(args.operators)]
        await asyncio.sleep(1)
        per_stream = (rss_kib(server_pid) - rss_before) / len(readers)

        count = int(args.rate * args.seconds)
        warmup = int(args.rate)  # the first second is not counted
        sent: dict[int, float] = {}
        answered: dict[int, float] = {}
        failures = 0

        poster = RawClient(base_url, operator)

        async def send(i: int) -> None:
            nonlocal failures
            sent[i] = time.perf_counter()
            status, _ = await poster.post("/api/messages", {
                "conversationId": conversations[i % len(conversations)], "content": f"bench-{i}", "from": "operator"})
            answered[i] = time.perf_counter()
            failures += status != 200

        await paced(args.rate, count, send)
        expected = 1 + args.operators
        deadline = time.perf_counter() + 30
        while sum(len(v) for v in arrivals.values()) < count * expected and time.perf_counter() < deadline:
            await asyncio.sleep(0.1)
        for task in readers:
            task.cancel()
        poster.close()
    delays = [(at - sent[i]) * 1000 for i, times in arrivals.items() if i >= warmup for at in times]
    missing = count * expected - sum(len(v) for v in arrivals.values())
    post = [(answered[i] - sent[i]) * 1000 for i in answered if i >= warmup]
    floor = [d * 1000 for d in await nats_floor(nats_url, args.rate, count)][warmup:]
    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    f50, f99 = percentile(floor, 50), percentile(floor, 99)
    print(f"streams: {args.visitors} visitor + {args.operators} operator; {count} messages at {args.rate}/s; "
          f"{len(delays)} deliveries measured; {missing} missing; {failures} failed POSTs")
    print(f"floor (NATS publish -> subscriber): p50 {f50:.2f} ms, p99 {f99:.2f} ms")
    print(f"POST -> stream delay: p50 {p50:.2f} ms ({p50 / f50:.1f}x floor), "
          f"p99 {p99:.2f} ms ({p99 / f99:.1f}x floor); mean {statistics.fmean(delays):.2f} ms")
    pushed = [d * 1000 for d in after_commit[int(len(after_commit) / args.seconds):]]  # past the first second
    print(f"write -> stream delay (from the command's timestamp, so without the POST's queueing): "
          f"p50 {percentile(pushed, 50):.2f} ms, p99 {percentile(pushed, 99):.2f} ms")
    print(f"POST response time: p50 {percentile(post, 50):.2f} ms, p99 {percentile(post, 99):.2f} ms")
    print(f"goal p99 < 50 ms: {'met' if p99 < 50 else 'NOT met'}")
    print(f"server memory per open stream: {per_stream:.1f} KiB (RSS delta over {len(readers)} streams)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--visitors", type=int, default=200)
    parser.add_argument("--operators", type=int, default=20)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    proc = None
    try:
        proc, base_url = start_server(postgres.url, nats_server.url, root / "data")
        store = EventStore(postgres.url, pool_size=2)
        try:
            asyncio.run(run(args, base_url, proc.pid, store, nats_server.url))
        finally:
            store.close()
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
        nats_server.stop()
        postgres.stop()


if __name__ == "__main__":
    main()
