"""Dashboard benchmark: signing in to a usable inbox, and opening a conversation from it, in a real browser
(Debian's Chromium through Playwright), each beside the time of the API calls the page makes for it.

    .venv/bin/python bench/dashboard.py [--conversations 10000] [--samples 30] [--opens 3] [--waterfall]
                                        [--trace trace.json]

Set-up: a `parley serve` on embedded PostgreSQL and NATS (fsync off), one organization with one website and
`--conversations` conversations (a visitor's question, the team's answer and the visitor's follow-up, spread
over 30 days), written through the event store thousands of events per append and projected by the server
before anything is measured; one operator with a password.

Measured per round (one page of one browser context: its HTTP cache on, as a returning operator has it):
- sign-in: the sign-in page is loaded and filled in (e-mail and password); from pressing "Sign in" to the
  inbox's first page of conversations and every tab's count on screen and clickable
  (`parley-inbox[data-ready]`);
- opening a conversation (`--opens` per round, a different row each time): from clicking its row in the
  inbox to its messages on screen and its composer usable (`parley-conversation[data-ready=<its id>]`);
- each one's API floor, just before it: the calls the page waits for, in the page's order and parallelism,
  made by an HTTP client from this process over kept-alive connections, without a browser. Sign-in: the
  session; then the operator, its two-factor state, the websites and the operators; then the inbox's page
  with its counts, and the labels. Opening: the conversation, its messages, the teams, the labels and the
  website's agent (the visitor was read for the inbox's row).
The round then signs out (revoking the token), as the floor revokes its own.

Both are timed by the page's own clock, from the action's event (the form's submit, the row's click) to the
paint after the page marked itself ready; beside them, the same as Playwright sees it from this process,
which adds its own checks before a click (the element visible, stable for two frames, hit) and its polling.
The goal (issue 38): each within 500 ms at p99, by the page's clock. The difference from the floor is what
the browser, the modules and the rendering add, and the other requests the page makes meanwhile. `--waterfall` prints the requests of the last round's sign-in and opening,
with when each started and ended after the click, to see what the page waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Goal, finish, percentile  # noqa: E402
from bench.serve import start_serve  # noqa: E402
from commands import admin  # noqa: E402
from events import types as ev  # noqa: E402
from events.ids import new_id  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from events.store import EventStore, Pending  # noqa: E402
from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402
from parley.runtime import PROJECTIONS, RUNS_ALONE  # noqa: E402
from parley.settings import load_settings  # noqa: E402
from projections.runner import apply_batch, current_positions, ensure_tables  # noqa: E402

GOAL_MS = 500.0
PAGE_SIZE = 20  # the inbox's page (web/app/pages/inbox.js)
APPEND_CHUNK = 5000
CHROMIUM = "/usr/bin/chromium"
EMAIL, PASSWORD = "bench@example.com", "correct horse"
WEBSITE_NAME = "bench-site"
CATCH_UP_SECONDS = 600


@dataclass
class Seeded:
    website_id: str
    events: int


def seed(store: EventStore, conversations: int, rng: random.Random) -> Seeded:
    """One organization, website and operator, and `conversations` conversations of three messages each,
    appended `APPEND_CHUNK` events at a time (the events the commands would append)."""
    org = admin.create_org(store, "Bench")
    website, _ = admin.create_website(store, Sealer.generate(), org.id, WEBSITE_NAME, "#3056d3")
    operator, _ = admin.create_operator(store, org.id, EMAIL, PASSWORD, display_name="Bench Operator")
    now = datetime.now(UTC)
    pending: list[Pending] = []
    count = 0
    for n in range(conversations):
        created = now - timedelta(seconds=rng.uniform(600, 30 * 86400))
        customer, conversation = new_id(), new_id()
        pending.append(Pending(customer, 1, ev.CustomerCreated(
            org_id=org.id, at=created, customer_id=customer, website_id=website.id,
            nickname=f"Visitor {n}" if n % 2 else None)))
        pending.append(Pending(conversation, 1, ev.ConversationCreated(
            org_id=org.id, at=created, conversation_id=conversation, website_id=website.id, customer_id=customer)))
        for k, (sender, text) in enumerate((("customer", f"Question {n}: how do I change my plan?"),
                                            ("operator", "From the billing page, under Plan."),
                                            ("customer", "Thanks, found it."))):
            pending.append(Pending(new_id(), 1, ev.MessageCreated(
                org_id=org.id, at=created + timedelta(seconds=60 * k), message_id=new_id(),
                conversation_id=conversation, website_id=website.id, content=text, sender=sender,
                operator_id=operator.id if sender == "operator" else None)))
        if len(pending) >= APPEND_CHUNK:
            store.append(*pending)
            count += len(pending)
            pending.clear()
    if pending:
        store.append(*pending)
        count += len(pending)
    return Seeded(str(website.id), count)


async def project(database_url: str, store: EventStore) -> None:
    """Every read model but search (it handles no event seeded here and runs alone in the server), caught up
    here in batches the way the server's runner applies them, half of them on each of two connections, then
    vacuumed as autovacuum would leave them."""
    settings = load_settings()
    names = [name for name in PROJECTIONS if name not in RUNS_ALONE]
    # mail reads what core keeps: it goes after core, on core's connection
    groups = [[PROJECTIONS[name](settings) for n, name in enumerate(names) if (n % 2 == 0 or name == "mail") == first]
              for first in (True, False)]
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await ensure_tables(conn, *groups[0], *groups[1])

    async def catch_up(group: list) -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            positions = await current_positions(conn, [projection.name for projection in group])
            while batch := await asyncio.to_thread(store.read, min(positions.values()), APPEND_CHUNK):
                positions = await apply_batch(conn, group, batch, positions)

    await asyncio.gather(*(catch_up(group) for group in groups))
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute("VACUUM ANALYZE")


def wait_projected(database_url: str, head: int) -> None:
    """Until every read model the server keeps has reached the store's last event."""
    deadline = time.monotonic() + CATCH_UP_SECONDS
    with psycopg.connect(database_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            try:
                behind = conn.execute("SELECT count(*) FILTER (WHERE position < %s), count(*) "
                                      "FROM parley_projection_positions", (head,)).fetchone()
            except psycopg.errors.UndefinedTable:
                behind = None
            if behind and behind[0] == 0 and behind[1] >= len(PROJECTIONS):
                return
            time.sleep(0.5)
    raise RuntimeError(f"the read models did not catch up with {head} events in {CATCH_UP_SECONDS} s")


class Floor:
    """The page's API calls made from this process (an event loop in its own thread: Playwright's sync API
    holds the main one), over one client's kept-alive connections."""

    def __init__(self, base_url: str, seeded: Seeded):
        self.seeded = seeded
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.client = self.run(self.make_client(base_url))

    @staticmethod
    async def make_client(base_url: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=base_url, timeout=30,
                                 limits=httpx.Limits(max_keepalive_connections=6, max_connections=6))

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def get(self, path: str, token: str, params: dict | None = None, ok: tuple[int, ...] = (200,)) -> dict:
        response = await self.client.get(path, params=params, headers={"Authorization": f"Token {token}"})
        assert response.status_code in ok, (path, response.status_code, response.text)
        return response.json()

    async def sign_in(self) -> tuple[float, str]:
        """Milliseconds from the session's request to the inbox page's answer, and the token."""
        started = time.perf_counter()
        answer = await self.client.post("/api/operators/sessions", json={"email": EMAIL, "password": PASSWORD})
        answer.raise_for_status()
        token = answer.json()["token"]
        await asyncio.gather(self.get("/api/operators/me", token), self.get("/api/operators/me/totp", token),
                             self.get("/api/websites", token), self.get("/api/operators", token))
        page, _ = await asyncio.gather(self.get("/api/conversations", token, {
            "inboxFilter": "all", "conversationFilter": "all", "websiteId": self.seeded.website_id,
            "timezone": "UTC", "limit": PAGE_SIZE, "skip": 0}), self.get("/api/labels", token))
        assert len(page["conversations"]) == PAGE_SIZE
        return (time.perf_counter() - started) * 1000, token

    async def sign_out(self, token: str) -> None:
        (await self.client.delete("/api/operators/sessions/current",
                                  headers={"Authorization": f"Token {token}"})).raise_for_status()

    async def open(self, token: str, conversation_id: str) -> float:
        """Milliseconds of the calls made to show one conversation with its composer."""
        started = time.perf_counter()
        await asyncio.gather(
            self.get(f"/api/conversations/{conversation_id}", token),
            self.get("/api/messages", token, {"conversationId": conversation_id, "limit": 0}),
            self.get("/api/teams", token), self.get("/api/labels", token),
            self.get(f"/api/websites/{WEBSITE_NAME}/agent", token, ok=(200, 404)))
        return (time.perf_counter() - started) * 1000

    def timed_sign_in(self) -> float:
        """A sign-in, timed; its session is the one `timed_open` uses until `signed_out`."""
        elapsed, self.token = self.run(self.sign_in())
        return elapsed

    def timed_open(self, conversation_id: str) -> float:
        return self.run(self.open(self.token, conversation_id))

    def signed_out(self) -> None:
        self.run(self.sign_out(self.token))


class Waterfall:
    """The requests a page makes from a moment on: what, when it started and ended, in ms after it."""

    def __init__(self, page):
        self.started = None
        self.rows: list[tuple[float, float | None, str]] = []
        self.begun: dict = {}
        page.on("request", self.request)
        page.on("requestfinished", self.finished)

    def mark(self) -> None:
        self.started = time.perf_counter()
        self.rows, self.begun = [], {}

    def request(self, request) -> None:
        if self.started is not None:
            self.begun[request] = (time.perf_counter() - self.started) * 1000

    def finished(self, request) -> None:
        if request in self.begun:
            url = request.url.split("//", 1)[-1].split("/", 1)[-1]
            self.rows.append((self.begun.pop(request), (time.perf_counter() - self.started) * 1000,
                              f"{request.method} /{url[:90]}"))

    def print(self, title: str, ready_ms: float) -> None:
        print(f"  {title}: ready at {ready_ms:.0f} ms, {len(self.rows)} requests finished by the end of the round")
        for begun, ended, what in sorted(self.rows):
            print(f"    {begun:7.1f} -> {ended:7.1f} ms  {what}" + ("   (after ready)" if begun > ready_ms else ""))


# In the page, before its own scripts: when the operator's action happened (the sign-in form's submit event,
# a click on a conversation's row: the event's own time stamp) and when what the page marked ready was
# painted (the task after the next animation frame).
IN_PAGE_TIMING = """
window.__bench = {};
addEventListener("submit", (event) => { window.__bench.action = event.timeStamp; }, true);
addEventListener("click", (event) => {
  if (event.target.closest?.("ul.conversations a")) window.__bench.action = event.timeStamp;
}, true);
const painted = (key) => {
  if (key in window.__bench) return;
  window.__bench[key] = null;
  requestAnimationFrame(() => setTimeout(() => { window.__bench[key] = performance.now(); }));
};
new MutationObserver(() => {
  const conversation = document.querySelector("parley-conversation[data-ready]");
  if (document.querySelector("parley-inbox[data-ready]")) painted("inbox");
  if (conversation) painted(conversation.dataset.ready);
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-ready"]});
"""


def in_page(page, ready: str) -> float:
    """Milliseconds from the action's event to the paint of what the page marked `ready`, by the page's own
    clock; then forgets both."""
    page.wait_for_function("(ready) => typeof window.__bench[ready] === 'number'", arg=ready)
    return page.evaluate("""(ready) => {
      const elapsed = window.__bench[ready] - window.__bench.action;
      delete window.__bench[ready];
      delete window.__bench.action;
      return elapsed;
    }""", ready)


def rows_of(page) -> list[str]:
    return page.eval_on_selector_all("parley-inbox ul.conversations > li[data-id]",
                                     "items => items.map((item) => item.dataset.id)")


def browser_round(page, base_url: str, opens: int, first_row: int, floor: Floor, results: dict,
                  waterfall: Waterfall | None, trace: Path | None = None) -> None:
    """One sign-in and `opens` openings, each with its floor measured just before it."""
    results["sign-in floor"].append(floor.timed_sign_in())
    page.goto(base_url + "/app/signin")
    page.get_by_label("E-mail").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.wait_for_load_state("networkidle")  # an operator types for longer than the page takes to load
    if waterfall:
        waterfall.mark()
    if trace:
        page.context.browser.start_tracing(page=page, path=str(trace), screenshots=False)
    started = time.perf_counter()
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("parley-inbox[data-ready]", timeout=30_000)
    results["sign-in"].append((time.perf_counter() - started) * 1000)
    results["sign-in, in the page"].append(in_page(page, "inbox"))
    if waterfall:
        page.wait_for_load_state("networkidle")
        waterfall.print("sign-in", results["sign-in"][-1])
    ids = rows_of(page)
    for k in range(opens):
        conversation_id = ids[(first_row + k) % len(ids)]
        results["open floor"].append(floor.timed_open(conversation_id))
        page.wait_for_load_state("networkidle")
        if waterfall:
            waterfall.mark()
        started = time.perf_counter()
        page.click(f"parley-inbox li[data-id='{conversation_id}'] a")
        page.wait_for_selector(f"parley-conversation[data-ready='{conversation_id}']", timeout=30_000)
        results["open"].append((time.perf_counter() - started) * 1000)
        results["open, in the page"].append(in_page(page, conversation_id))
        if trace and k == opens - 1:
            page.context.browser.stop_tracing()
        if waterfall:
            page.wait_for_load_state("networkidle")
            waterfall.print("opening a conversation", results["open"][-1])
            waterfall = None
    page.click("#sign-out")
    page.wait_for_selector("form.signin")
    floor.signed_out()


def measure(base_url: str, seeded: Seeded, samples: int, opens: int, show_waterfall: bool,
            trace: Path | None) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    floor = Floor(base_url, seeded)
    results: dict[str, list[float]] = {"sign-in floor": [], "sign-in": [], "sign-in, in the page": [],
                                       "open floor": [], "open": [], "open, in the page": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.add_init_script(IN_PAGE_TIMING)
        page = context.new_page()
        page.set_default_timeout(30_000)
        browser_round(page, base_url, opens, 0, floor, {key: [] for key in results}, None)  # warm-up
        for n in range(samples):
            last = n == samples - 1
            browser_round(page, base_url, opens, n * opens, floor, results,
                          Waterfall(page) if last and show_waterfall else None, trace if last else None)
        browser.close()
    return results


def line(name: str, values: list[float], floor: list[float] | None = None) -> str:
    text = f"{name:<34} p50 {percentile(values, 50):7.1f} ms   p99 {percentile(values, 99):7.1f} ms"
    if floor:
        text += f"   {percentile(values, 99) / percentile(floor, 99):5.1f}x the floor's p99"
    return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10000)
    parser.add_argument("--samples", type=int, default=30, help="rounds: one sign-in each")
    parser.add_argument("--opens", type=int, default=3, help="conversations opened per round")
    parser.add_argument("--waterfall", action="store_true", help="print the last round's requests")
    parser.add_argument("--trace", type=Path, help="write Chromium's performance trace of the last round here "
                                                   "(chrome://tracing or the DevTools' Performance panel read it)")
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    proc = None
    goals: list[Goal] = []
    store = EventStore(postgres.url, pool_size=2)
    try:
        started = time.perf_counter()
        seeded = seed(store, args.conversations, random.Random(args.seed))
        print(f"seeded {seeded.events:,} events in {time.perf_counter() - started:.1f} s", flush=True)
        started = time.perf_counter()
        asyncio.run(project(postgres.url, store))
        print(f"projected in {time.perf_counter() - started:.1f} s", flush=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
        env.update(PARLEY_DATABASE_URL=postgres.url, PARLEY_NATS_URL=nats_server.url, PARLEY_LOG_LEVEL="WARNING",
                   PARLEY_RATE_OPERATOR_PER_MINUTE="10000000", PARLEY_RATE_ANONYMOUS_PER_MINUTE="10000000",
                   PARLEY_SIGNIN_FAILURES_PER_ACCOUNT="10000000")
        started = time.perf_counter()
        proc, base_url = start_serve(root / "data", env)
        print(f"serving in {time.perf_counter() - started:.1f} s", flush=True)
        wait_projected(postgres.url, store.head())
        print(f"served, every read model caught up, in {time.perf_counter() - started:.1f} s", flush=True)
        results = measure(base_url, seeded, args.samples, args.opens, args.waterfall, args.trace)
        print(f"{args.conversations} conversations; {args.samples} sign-ins, {len(results['open'])} openings; "
              f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        print(line("API calls of sign-in to the inbox", results["sign-in floor"]))
        print(line("sign-in to a usable inbox", results["sign-in, in the page"], results["sign-in floor"]))
        print(line("  with Playwright's click and wait", results["sign-in"]))
        print(line("API calls of opening", results["open floor"]))
        print(line("opening a conversation", results["open, in the page"], results["open floor"]))
        print(line("  with Playwright's click and wait", results["open"]))
        goals = [Goal.at_most(f"{name} p99", percentile(results[f"{name}, in the page"], 99), GOAL_MS)
                 for name in ("sign-in", "open")]
    finally:
        store.close()
        if proc:
            proc.terminate()
            proc.wait(30)
        nats_server.stop()
        postgres.stop()
    finish(goals)


if __name__ == "__main__":
    main()
