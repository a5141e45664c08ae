"""The AI agent hook's streaming overhead.

Starts embedded PostgreSQL and NATS, a real `parley serve`, and a real AG-UI agent on loopback in its own
process (pydantic-ai's `AGUIAdapter` on a `FunctionModel` that streams `--deltas` text deltas, each
stamped with the wall-clock time the agent wrote it). `--conversations` visitors each hold their
realtime stream open and ask one question at the same moment; the agent answers them all at once.

Reported: the delay from the agent writing a delta to its arrival on the visitor's stream (p50/p99),
against the floor of a client reading the agent directly in the same run (the same number of
concurrent answers, read straight from the agent's SSE stream), and the time from the answer's last
delta (the agent writes TEXT_MESSAGE_END right after it) to the stored message's `message.created` on
the visitor's stream (pushed once the message is committed to the event log).

    python bench/agent.py [--conversations 50] [--deltas 200] [--pause-ms 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

# the server's secrets key, so that what this process seals (the website's identity secret) it can open
SECRETS_KEY = secrets.token_urlsafe(32)

DELTA = re.compile(rb'"delta":"(\d+)@([\d.]+) "')
CREATED = re.compile(rb'event: message.created\ndata: (.*)\n')


def serve_agent(port_queue, deltas: int, pause: float) -> None:
    """The agent's process: uvicorn serving pydantic-ai's AG-UI adapter on a scripted model."""
    import uvicorn
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def stream(messages, info):
        for i in range(deltas):
            await asyncio.sleep(pause)
            yield f"{i}@{time.time():.6f} "

    agent = Agent(FunctionModel(stream_function=stream))

    async def handle(request):
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    config = uvicorn.Config(Starlette(routes=[Route("/agent", handle, methods=["POST"])]), host="127.0.0.1", port=0,
                            log_level="warning", lifespan="off")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port_queue.put(server.servers[0].sockets[0].getsockname()[1])
        await task

    asyncio.run(run())


async def read_stream(base_url: str, path: str, authorization: str, delays: list[float], stored: list[float],
                      done: asyncio.Event) -> asyncio.Task:
    """A raw SSE reader of one visitor's stream: the delay of each delta, and of the stored answer."""
    host, port = base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n\r\n".encode())
    await writer.drain()
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")

    async def read() -> None:
        tail = b""
        while chunk := await reader.read(65536):
            wall = time.time()
            data = tail + chunk
            cut = data.rfind(b"\n\n") + 2
            for match in DELTA.finditer(data[:cut]):
                delays.append((wall - float(match.group(2))) * 1000)
            for match in CREATED.finditer(data[:cut]):
                message = json.loads(match.group(1))
                if message["author"] == "agent":
                    last = max(float(stamp) for stamp in re.findall(r"@([\d.]+) ", message["content"]))
                    stored.append((wall - last) * 1000)
                    done.set()
            tail = data[cut:]

    task = asyncio.create_task(read())
    task.add_done_callback(lambda _: writer.close())
    return task


async def direct(agent_url: str, conversations: int) -> list[float]:
    """The floor: the same number of answers at once, read straight from the agent."""
    delays: list[float] = []

    async def one(client: httpx.AsyncClient, n: int) -> None:
        body = {"threadId": f"floor-{n}", "runId": f"r-{n}", "messages": [{"id": "m", "role": "user", "content": "?"}]}
        async with client.stream("POST", agent_url, json=body, headers={"Accept": "text/event-stream"}) as response:
            async for line in response.aiter_lines():
                wall = time.time()
                for match in DELTA.finditer(line.encode()):
                    delays.append((wall - float(match.group(2))) * 1000)

    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=conversations)) as client:
        await asyncio.gather(*(one(client, n) for n in range(conversations)))
    return delays


async def run(args, base_url: str, agent_url: str, store: EventStore) -> list[Goal]:
    org = admin.create_org(store, "bench")
    website, _ = admin.create_website(store, Sealer(SECRETS_KEY), org.id, "bench-site", None)
    _, operator_token = admin.create_operator(store, org.id, "bench@example.com", "correct horse")
    operator = {"Authorization": f"Token {operator_token}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        while (await http.get("/api/websites", headers=operator)).status_code != 200:
            await asyncio.sleep(0.1)
        configured = await http.put("/api/websites/bench-site/agent", headers=operator, json={"url": agent_url})
        assert configured.status_code == 200, configured.text
        visitors = []
        for _ in range(args.conversations):
            started = await http.post("/api/chat/sessions", json={"websiteId": str(website.id)})
            assert started.status_code == 200, started.text
            headers = {"Authorization": f"ChatSession {started.json()['sessionToken']}"}
            conversation = (await http.post("/api/chat/conversations", headers=headers)).json()["_id"]
            visitors.append((headers, conversation))
        delays: list[float] = []
        stored: list[float] = []
        events = [asyncio.Event() for _ in visitors]
        readers = [await read_stream(base_url, "/api/chat/realtime", headers["Authorization"], delays, stored, done)
                   for (headers, _), done in zip(visitors, events)]
        await asyncio.sleep(1)
        started = time.perf_counter()
        await asyncio.gather(*(http.post("/api/chat/messages", headers=headers,
                                         json={"conversationId": conversation, "content": "Tell me everything"})
                               for headers, conversation in visitors))
        await asyncio.wait_for(asyncio.gather(*(done.wait() for done in events)), 300)
        elapsed = time.perf_counter() - started
        for task in readers:
            task.cancel()
    floor = await direct(agent_url, args.conversations)
    p50, p99, f50, f99 = percentile(delays, 50), percentile(delays, 99), percentile(floor, 50), percentile(floor, 99)
    expected = args.conversations * args.deltas
    print(f"{args.conversations} conversations at once, {args.deltas} deltas each ({args.pause_ms:g} ms apart); "
          f"{len(delays)} of {expected} deltas seen on the visitors' streams; all answered in {elapsed:.1f} s")
    print(f"floor (a client reading the agent directly): p50 {f50:.2f} ms, p99 {f99:.2f} ms")
    print(f"agent -> visitor's stream, per delta: p50 {p50:.2f} ms, p99 {p99:.2f} ms; "
          f"overhead over the floor: p50 {p50 - f50:.2f} ms, p99 {p99 - f99:.2f} ms")
    print(f"last delta -> stored message on the visitor's stream: p50 {percentile(stored, 50):.2f} ms, "
          f"p99 {percentile(stored, 99):.2f} ms")
    return [Goal.at_most("per delta, p99 over the floor's p99", p99 - f99, 20),
            Goal.at_most("last delta -> stored message, p99", percentile(stored, 99), 50),
            Goal(f"every delta ({expected}) seen", len(delays) == expected, f"{len(delays)} seen")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--pause-ms", type=float, default=5)
    args = parser.parse_args()
    ports = multiprocessing.get_context("spawn").Queue()
    agent = multiprocessing.get_context("spawn").Process(
        target=serve_agent, args=(ports, args.deltas, args.pause_ms / 1000), daemon=True)
    agent.start()
    agent_url = f"http://127.0.0.1:{ports.get(timeout=60)}/agent"
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    proc = None
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
        env.update(PARLEY_SECRETS_KEY=SECRETS_KEY, PARLEY_DATABASE_URL=postgres.url, PARLEY_NATS_URL=nats_server.url,
                   PARLEY_LOG_LEVEL="WARNING",
                   PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_RATE_OPERATOR_PER_MINUTE="10000000",
                   PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000", PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="10000000")
        proc, base_url = start_serve(root / "data", env)
        store = EventStore(postgres.url, pool_size=2)
        try:
            goals = asyncio.run(run(args, base_url, agent_url, store))
        finally:
            store.close()
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
        nats_server.stop()
        postgres.stop()
        agent.terminate()
    finish(goals)


if __name__ == "__main__":
    main()
