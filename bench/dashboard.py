"""Dashboard benchmark: how long until the inbox is interactive after navigation, in a real browser (Debian's
Chromium through Playwright), beside the time of the API calls it makes.

    .venv/bin/python bench/dashboard.py [--conversations 500] [--samples 30]

Set-up: a `parley serve` on embedded PostgreSQL and NATS (fsync off), one organization with one website
and `--conversations` conversations (each a visitor's message, made through the visitor API), and one
signed-in operator whose token is in the page's storage, as after a sign-in.

Measured per sample (a fresh page each time, the browser's HTTP cache on, as a returning operator has it):
- navigation: from `page.goto('/app/inbox')` to the inbox's first page of conversations and every tab's
  count on screen and clickable (`parley-inbox[data-ready]`);
- API floor: the same calls the page makes before that moment (the operator, websites and operators in
  parallel, then the inbox page with its counts), made by an HTTP client from this process, without a
  browser. (The visitors' names are read after that, in parallel, and fill in as they come.)
The goal (issue 25): interactive within 1 s of navigation. The difference between the two is what the
browser, the modules and the rendering add.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402

GOAL_MS = 1000.0
PAGE_SIZE = 20
CHROMIUM = "/usr/bin/chromium"


def seed(store: EventStore, base_url: str, conversations: int) -> tuple[str, str]:
    """An organization with a website of `conversations` conversations; the operator's token, the website id."""
    org = admin.create_org(store, "Bench")
    website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-site", "#3056d3")
    _, token = admin.create_operator(store, org.id, "bench@example.com", "correct horse")
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for n in range(conversations):
            session = client.post("/api/chat/sessions", json={"websiteId": str(website.id)}).json()
            headers = {"Authorization": f"ChatSession {session['sessionToken']}"}
            conversation = client.post("/api/chat/conversations", headers=headers).json()
            client.post("/api/chat/messages", headers=headers,
                        json={"conversationId": conversation["_id"], "content": f"question {n}"}).raise_for_status()
    return token, str(website.id)


async def api_floor(base_url: str, token: str, website_id: str) -> float:
    """The inbox's calls, in the page's order and parallelism, in milliseconds."""
    headers = {"Authorization": f"Token {token}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
        started = time.perf_counter()
        await asyncio.gather(client.get("/api/operators/me"), client.get("/api/websites"),
                             client.get("/api/operators"))
        (await client.get("/api/conversations", params={
            "inboxFilter": "all", "conversationFilter": "all", "websiteId": website_id, "timezone": "UTC",
            "limit": PAGE_SIZE, "skip": 0})).raise_for_status()
        return (time.perf_counter() - started) * 1000


def browser_samples(base_url: str, token: str, website_id: str, samples: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    timings = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        context = browser.new_context()
        context.add_init_script(  # the state a sign-in leaves, before the first page's scripts run
            f"localStorage.setItem('parley.token', {token!r}); localStorage.setItem('parley.website', {website_id!r});")
        warm = context.new_page()
        warm.goto(base_url + "/app/inbox")
        warm.wait_for_selector("parley-inbox[data-ready]")
        warm.close()
        for _ in range(samples):
            page = context.new_page()
            started = time.perf_counter()
            page.goto(base_url + "/app/inbox", wait_until="commit")
            page.wait_for_selector("parley-inbox[data-ready]", timeout=30_000)
            timings.append((time.perf_counter() - started) * 1000)
            page.close()
        browser.close()
    return timings


def line(name: str, values: list[float]) -> str:
    return f"{name:<28} p50 {percentile(values, 50):7.1f} ms   p99 {percentile(values, 99):7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    proc = None
    store = EventStore(postgres.url, pool_size=2)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
        env.update(PARLEY_DATABASE_URL=postgres.url, PARLEY_NATS_URL=nats_server.url, PARLEY_LOG_LEVEL="WARNING",
                   PARLEY_RATE_OPERATOR_PER_MINUTE="10000000", PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000",
                   PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="10000000")
        proc, base_url = start_serve(root / "data", env)
        token, website_id = seed(store, base_url, args.conversations)
        floor = [asyncio.run(api_floor(base_url, token, website_id)) for _ in range(args.samples + 3)][3:]
        navigation = browser_samples(base_url, token, website_id, args.samples)
        print(f"{args.conversations} conversations, {args.samples} samples each")
        print(line("API calls of the inbox", floor))
        print(line("navigation to interactive", navigation))
        print(f"browser and rendering add {percentile(navigation, 50) - percentile(floor, 50):.1f} ms at p50; "
              f"goal: interactive within {GOAL_MS:.0f} ms "
              f"({'met' if percentile(navigation, 99) < GOAL_MS else 'NOT met'} at p99)")
    finally:
        store.close()
        if proc:
            proc.terminate()
            proc.wait(30)
        nats_server.stop()
        postgres.stop()


if __name__ == "__main__":
    main()
