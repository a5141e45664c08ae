"""Search quality on the evaluation set: MRR@10 and recall@5 of title search, full-text search, vector
search and the hybrid (vector + full-text fused by reciprocal rank).

The set (bench/corpus/eval) is help articles written for this project, one Markdown file per article
under a category folder, and paraphrased questions naming their right article. Goal: hybrid MRR@10 >= 0.8; the
script exits 1 when it is missed.

    .venv/bin/python bench/search_quality.py
"""

from __future__ import annotations

import asyncio
import json

import psycopg

from harness import CORPUS, Bench, bench_environment
from bench.figures import Goal, finish  # importable once harness has put the project on the path
from projections.views.document_search import search_documents
from projections.views.documents import list_documents

GOAL_MRR = 0.8


async def ranked_titles(bench: Bench, method: str, question: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(bench.database_url, autocommit=True) as conn:
        params = {"query": question, "websiteId": str(bench.website_id), "limit": "10"}
        if method == "title":
            found = await list_documents(conn, bench.principal, {"search": question, "published": "true",
                                                                 "limit": "10"})
            return [d.title for d in found]
        mode = {"full-text": "lexical", "vector": "vector", "hybrid": "hybrid"}[method]
        return [m.title for m in await search_documents(conn, bench.settings, bench.principal, params, mode)]


def main() -> None:
    questions = json.loads((CORPUS / "eval" / "questions.json").read_text())
    articles = sorted((CORPUS / "eval" / "articles").rglob("*.md"))
    with bench_environment() as bench:
        title_of = {}
        for path in articles:
            source = path.relative_to(CORPUS / "eval" / "articles").with_suffix("").as_posix()
            text = path.read_text(encoding="utf-8")
            title_of[source] = text.splitlines()[0].lstrip("# ").strip()
            bench.import_markdown(source, text, path.parent.name)
        for name in ("core", "documents", "search"):
            bench.project(name)
        print(f"{len(articles)} articles, {len(questions)} questions")
        print(f"{'method':<10} {'MRR@10':>7} {'recall@5':>9}")
        results = {}
        for method in ("title", "full-text", "vector", "hybrid"):
            reciprocal, hits = 0.0, 0
            for q in questions:
                titles = asyncio.run(ranked_titles(bench, method, q["question"]))
                right = title_of[q["article"]]
                if right in titles[:10]:
                    reciprocal += 1 / (titles.index(right) + 1)
                hits += right in titles[:5]
            results[method] = reciprocal / len(questions)
            print(f"{method:<10} {results[method]:>7.3f} {hits / len(questions):>9.3f}")
        best_single = max(results["full-text"], results["vector"])
        print(f"hybrid / best single method: {results['hybrid'] / best_single:.3f}x")
    finish([Goal.at_least("hybrid MRR@10", results["hybrid"], GOAL_MRR)])


if __name__ == "__main__":
    main()
