"""Search across conversations: p50/p99 of `GET /api/search` for a word in a message, beside a floor measured
in the same run.

    .venv/bin/python -m bench.search_conversations --conversations 200000

Seeding: the organization, its website and operator are appended through the event store and projected
(bench/inbox.py's loader); the bulk (customers with a name and an e-mail address, their conversations, one
to three messages each of ten to twenty words drawn from a vocabulary of made-up words with a Zipf-like
frequency) is copied (COPY) straight into the tables of the read models `GET /api/search` reads (core,
conversation_search), rows as their projections write them: projecting 750,000 events one batch at a time
takes longer on a loaded machine than the benchmark itself. The tables are then analyzed, as autovacuum would.

Three words are planted at known rates, one word per class of query:
- common: in 10% of the messages (the newest page is found by walking the newest messages),
- medium: in 1%,
- rare: in 0.02% (found through the words' GIN index).
Also measured, reported without a goal: a part of an e-mail address (the trigram fallback) and a customer's
name.

Each sample runs, interleaved: the floor, a bare `SELECT id FROM rm_search_messages WHERE words @@ ... LIMIT 20`
on the same GIN index; the view the route calls (`search_conversations`) on a direct connection; and the
full HTTP request against a `parley serve --role api` process. Ratios are p99 against the floor's p99. The
goal: an HTTP p99 under 50 ms for every word class; the script exits 1 when one misses it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg

from bench.figures import Goal, finish
from bench.inbox import WARM_UP, project, start_api, summary
from commands import admin
from commands.principal import Principal
from events.ids import new_id
from events.sealing import Sealer
from events.store import EventStore
from parley.runtime import Infrastructure
from parley.settings import load_settings
from projections.conversation_search import ConversationSearchProjection
from projections.core import CoreProjection
from projections.views.conversation_search import search_conversations

GOAL_MS = 50.0
APPEND_CHUNK = 5000
VOCABULARY = 5000
PLANTED = {"common": ("parcel", 0.10), "medium": ("invoice", 0.01), "rare": ("kumquat", 0.0002)}
SYLLABLES = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]


def vocabulary(rng: random.Random) -> list[str]:
    planted = {word for word, _ in PLANTED.values()}
    words: set[str] = set()
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in planted:
            words.add(word)
    return sorted(words)


def seed(database_url: str, store: EventStore, conversations: int,
         rng: random.Random) -> tuple[uuid.UUID, uuid.UUID, str, str]:
    """The organization, its website and operator through the store (and projected), then the bulk copied
    into the read models' tables as their projections write them. Returns the organization, the operator and
    its token, and one customer's e-mail address (a query of the trigram fallback)."""
    org = admin.create_org(store, "Bench org")
    website = admin.create_website(store, Sealer.generate(), org.id, f"bench-{uuid.uuid4().hex[:6]}", None)[0].id
    operator, token = admin.create_operator(store, org.id, f"bench-{uuid.uuid4().hex[:6]}@example.com", "correct horse")
    asyncio.run(project(database_url, store, (CoreProjection, ConversationSearchProjection)))
    words = vocabulary(rng)
    weights = list(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(len(words))))
    now = datetime.now(timezone.utc)
    customers, threads, messages, an_email = [], [], [], ""
    for n in range(conversations):
        created = now - timedelta(seconds=rng.uniform(0, 90 * 86400))
        customer, conversation = new_id(), new_id()
        first, last = rng.choice(words).title(), rng.choice(words).title()
        email = f"{first.lower()}.{last.lower()}{n}@mail.example"
        an_email = an_email or email
        customers.append((customer, org.id, website, f"{first} {last}", email, created))
        replies = rng.choice((1, 1, 2, 3))
        threads.append((conversation, org.id, website, customer, created, created + timedelta(minutes=replies - 1)))
        for reply in range(replies):
            text = rng.choices(words, cum_weights=weights, k=rng.randint(10, 20))
            for word, rate in PLANTED.values():
                if rng.random() < rate:
                    text[rng.randrange(len(text))] = word
            messages.append((new_id(), org.id, website, conversation, False, created + timedelta(minutes=reply),
                             " ".join(text).capitalize() + "."))
    started = time.perf_counter()
    with psycopg.connect(database_url, autocommit=True) as conn:
        for sql, rows in (
                ("COPY rm_customers (id, org_id, website_id, nickname, email, created_at, updated_at) FROM STDIN",
                 [(*row, row[-1]) for row in customers]),
                ("COPY rm_search_customers (id, org_id, website_id, nickname, email) FROM STDIN",
                 [row[:-1] for row in customers]),
                ("COPY rm_conversations (id, org_id, website_id, customer_id, created_at, last_edit_time) FROM STDIN",
                 threads),
                ("COPY rm_search_messages (id, org_id, website_id, conversation_id, internal, creation_time, content) "
                 "FROM STDIN", messages)):
            with conn.cursor().copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)
        conn.execute("VACUUM ANALYZE")
    print(f"copied {len(customers):,} customers and conversations and {len(messages):,} messages in "
          f"{time.perf_counter() - started:.1f}s", flush=True)
    return org.id, operator.id, token, an_email


QUERIES = {name: word for name, (word, _) in PLANTED.items()}  # the ones with a goal


async def measure(database_url: str, base_url: str, org_id: uuid.UUID, operator_id: uuid.UUID, token: str,
                  queries: dict[str, str], samples: int) -> dict[str, dict[str, tuple[float, float]]]:
    """For each query: the floor, the view and the HTTP request, interleaved sample by sample."""
    principal = Principal("operator", org_id, uuid.uuid4(), operator_id=operator_id)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn, \
            httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Token {token}"}) as client:
        for name, q in queries.items():
            times: dict[str, list[float]] = {"floor": [], "view": [], "http": []}
            for _ in range(WARM_UP + samples):
                started = time.perf_counter()
                await (await conn.execute("SELECT id FROM rm_search_messages WHERE words @@ rm_search_words(%s) "
                                          "LIMIT 20", (q,), prepare=False)).fetchall()
                times["floor"].append(time.perf_counter() - started)
                started = time.perf_counter()
                page = await search_conversations(conn, principal, {"q": q})
                times["view"].append(time.perf_counter() - started)
                started = time.perf_counter()
                response = await client.get("/api/search", params={"q": q})
                times["http"].append(time.perf_counter() - started)
                assert response.status_code == 200, response.text
                assert page.items, f"{name}: {q!r} found nothing"
            results[name] = {kind: summary([t * 1000 for t in found[WARM_UP:]]) for kind, found in times.items()}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=200, help="requests per query")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        infra = Infrastructure(load_settings(data_dir=Path(tmp), embedded_fsync=False)).start(reuse_running=False)
        store = EventStore(infra.database_url, pool_size=2)
        api = None
        try:
            org_id, operator_id, token, email = seed(infra.database_url, store, args.conversations,
                                                     random.Random(args.seed))
            api, base_url = start_api(infra.database_url, infra.nats_url, Path(tmp) / "api")
            queries = {**QUERIES, "e-mail part": email.split("@")[0][3:], "customer name": email.split(".")[0]}
            results = asyncio.run(measure(infra.database_url, base_url, org_id, operator_id, token, queries,
                                          args.samples))
        finally:
            if api:
                api.terminate()
                api.wait(30)
            store.close()
            infra.stop()

    print(f"\n{args.conversations:,} conversations, {args.samples} samples per query; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'query':<14} {'q':<18} {'floor p50':>9} {'p99':>6}   {'view p50':>8} {'p99':>6} {'x floor':>7}   "
          f"{'HTTP p50':>8} {'p99':>6} {'x floor':>7}")
    for name, figures in results.items():
        (f50, f99), (v50, v99), (h50, h99) = figures["floor"], figures["view"], figures["http"]
        print(f"{name:<14} {queries[name][:18]:<18} {f50:>9.2f} {f99:>6.2f}   {v50:>8.2f} {v99:>6.2f} "
              f"{v99 / f99:>7.1f}   {h50:>8.2f} {h99:>6.2f} {h99 / f99:>7.1f}")
    finish(Goal.at_most(f"HTTP p99 of {name} ({queries[name]})", results[name]["http"][1], GOAL_MS)
           for name in QUERIES)


if __name__ == "__main__":
    main()
