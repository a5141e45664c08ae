"""MCP benchmark: `tools/call` latency of the summary and count tools, beside the REST request that reads
the same data, measured in the same run against one `parley serve --role api` process.

    .venv/bin/python -m bench.mcp --conversations 200000 --websites 5 --samples 200

The data is the inbox benchmark's (`bench/inbox.py`: its loader and its projection catch-up, here with
every read model the tools read, which their reads wait for). The MCP client is a plain keep-alive HTTP client posting JSON-RPC to /mcp
with an access token obtained through the real OAuth flow (registration, consent page, PKCE, token);
each call is a whole stateless Streamable HTTP request: token check, grant check, read-your-writes, the
tool's queries, the JSON-RPC answer. The REST floor is `GET /api/conversations?inboxFilter=unresolved`
for one website with `limit=1`: the inbox's counts from the same counters, with the REST API's
authentication. A tool reading every website (the count without `websiteId`) is set beside the REST
requests that read the same data: that request for each website, one after the other (the REST inbox
reads one website at a time). Requests alternate between the tools and the floors, so a loaded moment
shows in both. Goal: every tool's p99 within 2x its floor's p99 and under 50 ms.

`count_unresolved_conversations` walks the unresolved listing page by page to its end (100 a page), so it
is also set beside a REST client doing the same work: paging through `GET /api/conversations?
inboxFilter=unresolved&limit=100&fields=_id` to the end, one website at a time, interleaved with the tool.
"""

from __future__ import annotations

import argparse
import os
import time

import httpx
import psycopg

from bench.figures import Goal, finish, percentile
from bench.inbox import LISTING_READ_MODELS, WARM_UP, seeded_inbox
from bench.serve import wait_projected
from projections.activity import ActivityProjection
from projections.campaigns import CampaignsProjection
from projections.chat import ChatProjection
from projections.documents import DocumentsProjection
from projections.views.inbox import MAX_PAGE
from tests.support.mcp_helpers import Flow

GOAL_MS, GOAL_RATIO = 50.0, 2.0
EVERY_WEBSITE = "REST (every website)"
FLOOR_OF = {"count_unresolved_conversations (all)": EVERY_WEBSITE}  # the others: "REST"
# every read model the tools read (and so wait for), as the workers would have them
READ_MODELS = (*LISTING_READ_MODELS, ActivityProjection, DocumentsProjection, CampaignsProjection, ChatProjection)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--websites", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200, help="calls per tool, and as many REST requests")
    parser.add_argument("--walk-samples", type=int, default=20,
                        help="count calls set beside a REST client paging through the same listing")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    with seeded_inbox(args.conversations, args.websites, args.seed, READ_MODELS) as (bench, seeded):
        with psycopg.connect(bench.database_url, autocommit=True) as conn:
            email = conn.execute("SELECT email FROM rm_operators WHERE id = %s", (seeded.operator_id,)).fetchone()[0]
        base_url = bench.start_api()
        # the API process keeps the search index: measured after it has caught up, not while
        wait_projected(bench.database_url, bench.store.head(), ("search",))
        access = sign_in(base_url, email)
        figures = measure(base_url, seeded, access, args.samples)
        walks = measure_walks(base_url, seeded, access, args.walk_samples)

    print(f"\n{args.conversations:,} conversations over {args.websites} websites, {args.samples} samples each; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    floors = {name: figures.pop(name) for name in ("REST", EVERY_WEBSITE)}
    print(f"REST floor (GET /api/conversations?inboxFilter=unresolved&limit=1): p50 {floors['REST'][0]:.2f} ms, "
          f"p99 {floors['REST'][1]:.2f} ms; the same for each of the {args.websites} websites in turn: "
          f"p50 {floors[EVERY_WEBSITE][0]:.2f} ms, p99 {floors[EVERY_WEBSITE][1]:.2f} ms\n")
    print(f"{'tool':<38} {'p50':>7} {'p99':>7} {'x floor':>8} {'x REST':>7}")
    goals = []
    for name, (p50, p99) in figures.items():
        floor99 = floors[FLOOR_OF.get(name, "REST")][1]
        goals += [Goal.at_most(f"{name} p99", p99, GOAL_MS),
                  Goal.at_most(f"{name} p99 x its floor's", p99 / floor99, GOAL_RATIO, "x")]
        print(f"{name:<38} {p50:>7.2f} {p99:>7.2f} {p99 / floor99:>8.2f} {p99 / floors['REST'][1]:>7.2f}")
    (tool50, tool99), (rest50, rest99), pages = walks["tool"], walks["REST walk"], walks["pages"]
    print(f"\ncount_unresolved_conversations (one website, {pages:,.0f} pages of 100 walked on average) beside a "
          f"REST client paging through the same listing, {args.walk_samples} samples each:\n"
          f"tool p50 {tool50:.2f} / p99 {tool99:.2f} ms; REST walk p50 {rest50:.1f} / p99 {rest99:.1f} ms; "
          f"tool p99 = {tool99 / rest99:.3f}x the REST walk")
    finish(goals)


def sign_in(base_url: str, email: str) -> str:
    """An MCP access token through the real OAuth flow (registration, consent page, PKCE, token)."""
    with httpx.Client(base_url=base_url, timeout=30) as http:
        flow = Flow(http, base_url)
        flow.register()
        return flow.tokens(email, scope="parley:read")["access_token"]


def measure(base_url: str, seeded, access: str, samples: int) -> dict[str, tuple[float, float]]:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        mcp_headers = {"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream",
                       "MCP-Protocol-Version": "2025-06-18"}
        rest_headers = {"Authorization": f"Token {seeded.token}"}
        sites = [str(site) for site in seeded.websites]
        tools = {
            "get_website_summary": lambda i: {"websiteId": sites[i % len(sites)]},
            "get_workload_summary": lambda i: {},
            "count_unresolved_conversations": lambda i: {"websiteId": sites[i % len(sites)]},
            "count_unresolved_conversations (all)": lambda i: {},
            "list_websites": lambda i: {},
        }
        times: dict[str, list[float]] = {name: [] for name in (*tools, "REST", EVERY_WEBSITE)}

        def read_inbox(site: str) -> None:
            response = http.get("/api/conversations", headers=rest_headers, params={
                "inboxFilter": "unresolved", "websiteId": site, "limit": "1"})
            assert response.status_code == 200, response.text
        for i in range(WARM_UP + samples):
            for name, arguments in tools.items():
                body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": name.split(" ")[0], "arguments": arguments(i)}}
                started = time.perf_counter()
                response = http.post("/mcp", headers=mcp_headers, json=body)
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200 and not response.json()["result"].get("isError"), response.text
                times[name].append(elapsed)
                started = time.perf_counter()
                read_inbox(sites[i % len(sites)])
                times["REST"].append((time.perf_counter() - started) * 1000)
                if FLOOR_OF.get(name) == EVERY_WEBSITE:
                    started = time.perf_counter()
                    for site in sites:
                        read_inbox(site)
                    times[EVERY_WEBSITE].append((time.perf_counter() - started) * 1000)
        warm = WARM_UP * len(tools)
        measured = {name: values[warm if name == "REST" else WARM_UP:] for name, values in times.items()}
        return {name: (percentile(values, 50), percentile(values, 99)) for name, values in measured.items()}


def measure_walks(base_url: str, seeded, access: str, samples: int) -> dict:
    with httpx.Client(base_url=base_url, timeout=60) as http:
        mcp_headers = {"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream",
                       "MCP-Protocol-Version": "2025-06-18"}
        rest_headers = {"Authorization": f"Token {seeded.token}"}
        sites = [str(site) for site in seeded.websites]
        times: dict[str, list[float]] = {"tool": [], "REST walk": []}
        pages = []
        for i in range(samples + 1):  # the first of each is the warm-up
            site = sites[i % len(sites)]
            started = time.perf_counter()
            response = http.post("/mcp", headers=mcp_headers, json={
                "jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "count_unresolved_conversations", "arguments": {"websiteId": site}}})
            times["tool"].append((time.perf_counter() - started) * 1000)
            counted = response.json()["result"]["structuredContent"]
            started = time.perf_counter()
            seen = rest_walk(http, rest_headers, site)
            times["REST walk"].append((time.perf_counter() - started) * 1000)
            assert seen == counted["count"], (seen, counted)  # the same answer by both ways
            pages.append(counted["pagesWalked"])
        figures = {name: (percentile(values[1:], 50), percentile(values[1:], 99)) for name, values in times.items()}
        return figures | {"pages": sum(pages) / len(pages)}


def rest_walk(http: httpx.Client, headers: dict[str, str], site: str) -> int:
    seen = 0
    while True:
        response = http.get("/api/conversations", headers=headers, params={
            "inboxFilter": "unresolved", "websiteId": site, "limit": str(MAX_PAGE), "skip": str(seen), "fields": "_id"})
        assert response.status_code == 200, response.text
        page = response.json()["conversations"]
        seen += len(page)
        if len(page) < MAX_PAGE:
            return seen


if __name__ == "__main__":
    main()
