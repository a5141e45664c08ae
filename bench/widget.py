"""What the widget adds to a chat's latency, against the floor of the same paths without a browser.

Starts embedded PostgreSQL and NATS, a real `parley serve`, and PAGES pages of a host site (another
origin) running widget.js in Debian's Chromium. Measures, ROUNDS times per page, all pages at once:
- visitor -> team: from `$parley.push(['sendMessage', …])` in the page to the message in the operator's
  realtime stream; floor: the visitor's POST /api/chat/messages to the same stream;
- team -> visitor: from an operator's POST /api/messages to the text visible in the page (a
  MutationObserver stamps it); floor: the same POST to the visitor's realtime stream.
Clocks: the page's Date.now() and this process's time.time() are the same machine clock.

    python bench/widget.py --pages 50 --rounds 5

Goal (docs/benchmarks.md): the widget adds under 20 ms at p99 to each path over its floor; the script exits
1 when it is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, HostPages  # noqa: E402

# the server's secrets key, so that what this process seals (the website's identity secret) it can open
SECRETS_KEY = secrets.token_urlsafe(32)

GOAL_ADDED_MS = 20.0

WATCH = """() => { window.__seen = {}; const root = document.querySelector('[data-parley=widget]').shadowRoot;
  new MutationObserver(() => { for (const p of root.querySelectorAll('.log .text'))
    if (!(p.textContent in window.__seen)) window.__seen[p.textContent] = Date.now(); })
  .observe(root, {subtree: true, childList: true, characterData: true}); }"""


async def stream_arrivals(client: httpx.AsyncClient, path: str, authorization: str, arrivals: dict[str, float],
                          opened: asyncio.Event) -> None:
    async with client.stream("GET", path, headers={"Authorization": authorization}) as response:
        async for line in response.aiter_lines():
            opened.set()
            if line.startswith("data:"):
                content = json.loads(line[5:]).get("content")
                if content is not None:
                    arrivals.setdefault(content, time.time() * 1000)


async def listen(client, path, authorization) -> tuple[dict[str, float], asyncio.Task]:
    arrivals: dict[str, float] = {}
    opened = asyncio.Event()
    task = asyncio.create_task(stream_arrivals(client, path, authorization, arrivals, opened))
    await asyncio.wait_for(opened.wait(), 30)
    return arrivals, task


async def wait_for(arrivals: dict[str, float], keys: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not all(k in arrivals for k in keys):
        if time.monotonic() > deadline:
            raise RuntimeError(f"missing {[k for k in keys if k not in arrivals][:3]}")
        await asyncio.sleep(0.005)


def figures(label: str, samples: list[float]) -> str:
    return f"{label:<34} p50 {percentile(samples, 50):7.1f} ms   p99 {percentile(samples, 99):7.1f} ms   n={len(samples)}"


async def run(base: str, website_id: str, operator: str, pages_count: int, rounds: int) -> list[Goal]:
    from playwright.async_api import async_playwright

    host = HostPages()
    url = host.serve("/bench.html", "<!doctype html><title>bench</title><body><script>window.$parley = [];"
                     f"window.PARLEY_WEBSITE_ID = {json.dumps(website_id)};</script>"
                     f"<script async src='{base}/widget.js'></script></body>")
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(60, read=None)) as client, \
            async_playwright() as playwright:
        team, team_task = await listen(client, "/api/realtime", f"Token {operator}")
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        pages = []
        for _ in range(pages_count):
            page = await (await browser.new_context()).new_page()
            await page.goto(url)
            await page.locator("[data-parley=widget] .launcher").wait_for()
            pages.append(page)
        conversations = []
        for i, page in enumerate(pages):  # each page starts its conversation
            await page.evaluate(f"window.$parley.push(['sendMessage', 'hello-{i}'])")
        await wait_for(team, [f"hello-{i}" for i in range(pages_count)])
        listed = (await client.get("/api/conversations", headers={"Authorization": f"Token {operator}"},
                                   params={"limit": "0"})).json()
        for i, page in enumerate(pages):
            await page.evaluate(WATCH)
            token = await page.evaluate(f"JSON.parse(localStorage.getItem('parley:{website_id}')).token")
            conversations.append((page, token))
        by_customer = {c["customerId"]: c["_id"] for c in listed}
        sessions = []
        for page, token in conversations:
            me = (await client.get("/api/chat/profile", headers={"Authorization": f"ChatSession {token}"})).json()
            sessions.append((page, token, by_customer[me["customerId"]]))

        widget_up, widget_down, floor_up, floor_down = [], [], [], []
        for r in range(rounds):
            started = {}
            for i, (page, _, _) in enumerate(sessions):
                started[f"w{r}-{i}"] = time.time() * 1000
                await page.evaluate(f"window.$parley.push(['sendMessage', 'w{r}-{i}'])")
            await wait_for(team, list(started))
            widget_up += [team[k] - t for k, t in started.items()]

            started = {}

            async def reply(key, conversation_id):
                started[key] = time.time() * 1000
                await client.post("/api/messages", headers={"Authorization": f"Token {operator}"},
                                  json={"conversationId": conversation_id, "content": key, "from": "operator"})
            await asyncio.gather(*(reply(f"r{r}-{i}", c) for i, (_, _, c) in enumerate(sessions)))
            for i, (page, _, _) in enumerate(sessions):
                await page.wait_for_function(f"'r{r}-{i}' in window.__seen")
                widget_down.append(await page.evaluate(f"window.__seen['r{r}-{i}']") - started[f"r{r}-{i}"])

        # the floor: the same paths through the API alone
        visitors = [await listen(client, "/api/chat/realtime", f"ChatSession {token}") for _, token, _ in sessions]
        for r in range(rounds):
            started = {}

            async def post(key, token, conversation_id):
                started[key] = time.time() * 1000
                await client.post("/api/chat/messages", headers={"Authorization": f"ChatSession {token}"},
                                  json={"conversationId": conversation_id, "content": key})
            await asyncio.gather(*(post(f"f{r}-{i}", t, c) for i, (_, t, c) in enumerate(sessions)))
            await wait_for(team, list(started))
            floor_up += [team[k] - t for k, t in started.items()]
            started = {}
            await asyncio.gather(*(reply(f"g{r}-{i}", c) for i, (_, _, c) in enumerate(sessions)))
            for i, (arrivals, _) in enumerate(visitors):
                await wait_for(arrivals, [f"g{r}-{i}"])
                floor_down.append(arrivals[f"g{r}-{i}"] - started[f"g{r}-{i}"])

        print(f"{pages_count} pages at once, {rounds} rounds")
        print(figures("widget: sendMessage -> operator", widget_up))
        print(figures("floor:  visitor POST -> operator", floor_up))
        print(figures("widget: operator POST -> visible", widget_down))
        print(figures("floor:  operator POST -> visitor", floor_down))
        added_up = percentile(widget_up, 99) - percentile(floor_up, 99)
        added_down = percentile(widget_down, 99) - percentile(floor_down, 99)
        print(f"added at p99: up {added_up:.1f} ms ({percentile(widget_up, 99) / percentile(floor_up, 99):.2f}x), "
              f"down {added_down:.1f} ms ({percentile(widget_down, 99) / percentile(floor_down, 99):.2f}x)")
        for _, task in visitors:
            task.cancel()
        team_task.cancel()
        await browser.close()
    host.close()
    return [Goal.at_most("sendMessage -> operator, p99 over the floor's", added_up, GOAL_ADDED_MS),
            Goal.at_most("operator POST -> visible, p99 over the floor's", added_down, GOAL_ADDED_MS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
        postgres.start()
        nats_server.start()
        try:
            store = EventStore(postgres.url, pool_size=1)
            org = admin.create_org(store, "bench")
            website, _ = admin.create_website(store, Sealer(SECRETS_KEY), org.id, "bench-widget", None)
            _, operator = admin.create_operator(store, org.id, "bench@example.com", "correct horse")
            store.close()
            env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
            env.update(PARLEY_SECRETS_KEY=SECRETS_KEY, PARLEY_DATABASE_URL=postgres.url, PARLEY_NATS_URL=nats_server.url,
                       PARLEY_LOG_LEVEL="WARNING",
                       # each visitor's requests count under the anonymous limit, their sessions apart
                       PARLEY_RATE_OPERATOR_PER_MINUTE="10000000", PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000",
                       PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="10000000")
            server, base = start_serve(root / "data", env)
            try:
                goals = asyncio.run(run(base, str(website.id), operator, args.pages, args.rounds))
            finally:
                server.terminate()
                server.wait(30)
        finally:
            nats_server.stop()
            postgres.stop()
    finish(goals)


if __name__ == "__main__":
    main()
