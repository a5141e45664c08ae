"""Help-document search and listing at scale: 10,000 published documents in one website.

Reports, each against a floor measured in the same run:
- indexing throughput of the search projection (passages/s) against the bare model embedding the
  same passages;
- search latency p50/p99, query embedding included, against the bare query embedding (goal: p99 < 25 ms);
- cursor-page latency at the first and the last page (goal: the last page no slower than the first
  within noise, checked as at most 1.5x its median), against the same keyset query in plain SQL, and the
  offset read of the last page for contrast.

The script exits 1 when a goal is missed.

The corpus is generated deterministically by bench/corpus/generate.py.

    .venv/bin/python bench/search.py [--documents 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

import psycopg

from commands.documents import parse_markdown
from corpus.generate import generate
from harness import CORPUS, Bench, bench_environment, median, ms
from bench.figures import Goal, finish, percentile  # importable once harness has put the project on the path
from projections.search import embedder_for, passage_input, split_passages
from projections.views.document_search import search_documents
from projections.views.documents import list_documents

SEARCH_GOAL_P99 = 0.025
PAGE_GOAL_RATIO = 1.5  # the last page no slower than the first, within the noise of a shared machine
QUERIES = 300
PAGE_REPEATS = 30


def queries(docs: list[dict]) -> list[str]:
    """The evaluation questions (same domain) plus error codes and product terms out of the corpus."""
    rng = random.Random(3)
    asked = [q["question"] for q in json.loads((CORPUS / "eval" / "questions.json").read_text())]
    terms = [word.strip("`.,()") for doc in rng.sample(docs, 200) for word in doc["content"].split()
             if word.strip("`.,()").startswith(("E", "PARLEY-")) and any(c.isdigit() for c in word)]
    mixed = asked + terms
    rng.shuffle(mixed)
    return (mixed * (QUERIES // len(mixed) + 1))[:QUERIES]


def indexing(bench: Bench, docs: list[dict]) -> None:
    for name in ("core", "documents"):
        bench.project(name)
    seconds = bench.project("search")
    with psycopg.connect(bench.database_url) as conn:
        passages = conn.execute("SELECT count(*) FROM search_passages").fetchone()[0]
    embedder = embedder_for(bench.settings)
    sample = random.Random(5).sample(docs, 300)
    inputs = [passage_input(title, text) for title, content in (parse_markdown(d["content"], d["title"]) for d in sample)
              for text in split_passages(embedder, title, content)]
    started = time.perf_counter()
    embedder.embed(inputs)
    floor = len(inputs) / (time.perf_counter() - started)
    rate = passages / seconds
    print(f"indexing: {len(docs)} documents, {passages} passages in {seconds:.1f} s = {len(docs) / seconds:.1f} docs/s, "
          f"{rate:.1f} passages/s; bare model {floor:.1f} passages/s; ratio {rate / floor:.2f}")


async def search_latency(bench: Bench, asked: list[str]) -> Goal:
    embedder = embedder_for(bench.settings)
    async with await psycopg.AsyncConnection.connect(bench.database_url, autocommit=True) as conn:
        async def once(query: str) -> float:
            started = time.perf_counter()
            await search_documents(conn, bench.settings, bench.principal,
                                   {"query": query, "websiteId": str(bench.website_id)})
            return time.perf_counter() - started

        for query in asked[:20]:
            await once(query)
        samples = [await once(query) for query in asked]
    floor = []
    for query in asked:
        started = time.perf_counter()
        embedder.embed_query(query)
        floor.append(time.perf_counter() - started)
    p50, p99, floor50 = median(samples), percentile(samples, 99), median(floor)
    print(f"search ({len(asked)} queries): p50 {ms(p50)}, p99 {ms(p99)}; "
          f"bare query embedding p50 {ms(floor50)}; p50 ratio {p50 / floor50:.2f}")
    return Goal.at_most("search p99", p99 * 1000, SEARCH_GOAL_P99 * 1000)


async def cursor_pages(bench: Bench) -> Goal:
    async with await psycopg.AsyncConnection.connect(bench.database_url, autocommit=True) as conn:
        async def page(params: dict) -> tuple[float, object]:
            started = time.perf_counter()
            result = await list_documents(conn, bench.principal, params)
            return time.perf_counter() - started, result

        base = {"pagination": "cursor", "websiteId": str(bench.website_id), "limit": "100"}
        cursors, cursor, count = [None], None, 0
        while True:
            _, result = await page({**base, **({"cursor": cursor} if cursor else {})})
            count += len(result.items)
            cursor = result.next_cursor
            if cursor is None:
                break
            cursors.append(cursor)

        def params_of(c):
            return {**base, **({"cursor": c} if c else {})}

        first = median([(await page(params_of(cursors[0])))[0] for _ in range(PAGE_REPEATS)])
        last = median([(await page(params_of(cursors[-1])))[0] for _ in range(PAGE_REPEATS)])
        offset_last = median([(await page({"websiteId": str(bench.website_id), "limit": "100",
                                            "skip": str(100 * (len(cursors) - 1))}))[0] for _ in range(PAGE_REPEATS)])
        floor = []
        for _ in range(PAGE_REPEATS):
            started = time.perf_counter()
            await (await conn.execute("SELECT id, title, content FROM rm_documents ORDER BY id LIMIT 100")).fetchall()
            floor.append(time.perf_counter() - started)
    print(f"cursor pages: {len(cursors)} pages of 100 over {count} documents; first page {ms(first)}, "
          f"last page {ms(last)} (last/first {last / first:.2f}); "
          f"plain SQL page {ms(median(floor))} (first page / plain {first / median(floor):.2f}); "
          f"offset read of the last page {ms(offset_last)} ({offset_last / first:.2f}x the cursor's first)")
    return Goal.at_most("last cursor page / first", last / first, PAGE_GOAL_RATIO, "x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=10_000)
    args = parser.parse_args()
    docs = generate(args.documents, seed=7)
    with bench_environment() as bench:
        started = time.perf_counter()
        for n, doc in enumerate(docs):
            bench.import_markdown(f"{doc['category']}/{n:05d}.md", doc["content"], doc["category"])
        seconds = time.perf_counter() - started
        print(f"import: {len(docs)} documents in {seconds:.1f} s = {len(docs) / seconds:.0f} docs/s")
        indexing(bench, docs)
        with psycopg.connect(bench.database_url, autocommit=True) as conn:
            conn.execute("ANALYZE rm_documents")  # what autovacuum does after a bulk load; search reads its statistics
        goals = [asyncio.run(search_latency(bench, queries(docs))), asyncio.run(cursor_pages(bench))]
    finish(goals)


if __name__ == "__main__":
    main()
