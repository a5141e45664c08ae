"""The far ends of `bench/realtime.py`, in a process of their own: many open SSE streams on the API
(`sse`), or as many subscriptions on one NATS connection (`nats`, the floor).

It reads one JSON line on stdin saying what to open and prints `connected` (the NATS floor connects now);
on an `open` line it opens it all and prints `ready <rss KiB before> <rss KiB after>`; then, for each
`report` line, one JSON line: for every bench message number, the `time.perf_counter()` of each arrival
(CLOCK_MONOTONIC, so comparable with the measuring process's). It holds no per-connection task: each
stream is an `asyncio.Protocol` fed by the event loop.

    sse:  {"mode": "sse", "host": ..., "port": ..., "streams": [[path, authorization], ...]}
    nats: {"mode": "nats", "url": ..., "subjects": [subject, ...]}
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import sys
import time
from pathlib import Path

import nats

MESSAGE = re.compile(rb'"content":"bench-(\d+)"')
OPENING = 100  # streams opened at once


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def raise_fd_limit() -> None:
    """As many open files as the hard limit allows: one per stream, and some."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Unavailable(Exception):
    """503: the stream may be opened a moment later."""


class SseReader(asyncio.Protocol):
    """One open stream: the response head, then frames scanned for the bench message they carry."""

    def __init__(self, request: bytes, arrivals: dict[int, list[float]]):
        self.request = request
        self.arrivals = arrivals
        self.opened: asyncio.Future = asyncio.get_running_loop().create_future()
        self.buffer = b""
        self.head_seen = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        data = self.buffer + data
        if not self.head_seen:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = data
                return
            self.head_seen = True
            if not self.opened.done():
                if data.startswith(b"HTTP/1.1 200"):
                    self.opened.set_result(None)
                elif data.startswith(b"HTTP/1.1 503"):
                    self.opened.set_exception(Unavailable())
                else:
                    self.opened.set_exception(RuntimeError(data[:200].decode(errors="replace")))
            data = data[end + 4:]
        cut = data.rfind(b"\n\n") + 2
        for match in MESSAGE.finditer(data, 0, cut):
            self.arrivals.setdefault(int(match.group(1)), []).append(now)
        self.buffer = data[cut:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(RuntimeError(f"stream closed before it opened: {exc}"))


async def open_sse(spec: dict, arrivals: dict[int, list[float]]) -> tuple[list, int]:
    """The open streams, and the resident memory before they were opened."""
    loop = asyncio.get_running_loop()
    before = rss_kib()
    host, port = spec["host"], spec["port"]
    transports = []
    gate = asyncio.Semaphore(OPENING)

    async def one(path: str, authorization: str) -> None:
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n"
                   f"Accept: text/event-stream\r\n\r\n").encode()
        async with gate:
            while True:
                transport, reader = await loop.create_connection(lambda: SseReader(request, arrivals), host, port)
                try:
                    await reader.opened
                    break
                except Unavailable:  # the read models are behind the visitor's session: asked again
                    transport.close()
                    await asyncio.sleep(0.5)
        transports.append(transport)

    await asyncio.gather(*(one(path, authorization) for path, authorization in spec["streams"]))
    return transports, before


async def open_nats(nc: nats.NATS, spec: dict, arrivals: dict[int, list[float]]) -> tuple[list, int]:
    """The subscriptions, and the resident memory before them."""
    before = rss_kib()

    async def received(msg) -> None:
        arrivals.setdefault(int(msg.data), []).append(time.perf_counter())

    for subject in spec["subjects"]:
        await nc.subscribe(subject, cb=received)
    await nc.flush()
    return [nc], before


async def main() -> None:
    raise_fd_limit()
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    spec = json.loads(await stdin.readline())
    arrivals: dict[int, list[float]] = {}
    nc = await nats.connect(spec["url"]) if spec["mode"] == "nats" else None
    print("connected", flush=True)
    assert (await stdin.readline()).strip() == b"open"
    if nc is None:
        held, before = await open_sse(spec, arrivals)
    else:
        held, before = await open_nats(nc, spec, arrivals)
    await asyncio.sleep(1)
    print(f"ready {before} {rss_kib()}", flush=True)
    while line := await stdin.readline():
        if line.strip() == b"report":
            print(json.dumps(arrivals), flush=True)
    del held


if __name__ == "__main__":
    asyncio.run(main())
