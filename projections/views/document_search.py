"""Searching published help documents: vector search over passages fused with full-text search.

The vector side asks the website's Qdrant collection for the nearest passages (a document ranks by
its best passage); the lexical side ranks documents by PostgreSQL full-text search, any of the query's
lexemes matching (except those too common to tell documents apart), so exact product terms and error
codes are found even when the model blurs them. The two
rankings are fused by reciprocal rank (RRF): a document's score is the sum of 1/(10 + rank) over the
rankings that contain it. Every match is re-checked against the documents read model (organization,
website, locale, published), so the index can never show what the list would not.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from concurrent.futures import Future
from typing import Literal, Mapping

import msgspec
import psycopg

from commands.documents import LOCALE
from commands.errors import Invalid
from commands.principal import Principal
from events.ids import parse_id
from projections.documents import text_search_config
from projections.search import SENTENCE_BREAK, SearchConfig, collection_name, embedder_for, index_for, plain_text

Mode = Literal["hybrid", "vector", "lexical"]
# Smaller than the customary 60: a 10-result list is judged by its top ranks (on the evaluation set,
# MRR@10 0.862 at 10 against 0.845 at 60, with both rankings weighted equally).
RRF_K = 10
CANDIDATES = 40  # per ranking, before fusion
DEFAULT_LIMIT, MAX_LIMIT = 10, 50
SNIPPET_CHARS = 240
# A lexeme in more than 2% of the documents (and more than 100 of them) is left out of full-text matching.
COMMON_FRACTION, COMMON_MIN_ROWS, COMMON_TTL = 0.02, 100, 60.0
_common: dict[tuple, tuple[float, frozenset[str]]] = {}
_WORD = re.compile(r"\w[\w.-]*\w|\w", re.UNICODE)


class Match(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId"}):
    id: uuid.UUID
    website_id: uuid.UUID
    title: str
    locale: str
    category: str | None
    score: float
    snippet: str


def parse_query(params: Mapping[str, str]) -> str:
    query = " ".join((params.get("query") or "").split())
    if not query:
        raise Invalid("query is required", "query")
    if len(query) > 1000:
        raise Invalid("query is longer than 1000 characters", "query")
    return query


def parse_locale(params: Mapping[str, str]) -> str:
    locale = params.get("locale") or "en"
    if not LOCALE.match(locale):
        raise Invalid("locale must be a language tag such as en or pt-BR", "locale")
    return locale


async def _websites(conn: psycopg.AsyncConnection, principal: Principal, requested: str | None) -> list[uuid.UUID]:
    """The websites searched: the pinned or visitor's one, else the requested one, else all of the org's."""
    wanted = None
    if requested:
        wanted = parse_id(requested)
        if wanted is None or (principal.website_id is not None and wanted != principal.website_id):
            return []
    wanted = wanted or principal.website_id
    rows = await (await conn.execute(
        "SELECT id FROM rm_websites WHERE org_id = %s AND (%s::uuid IS NULL OR id = %s) ORDER BY id",
        (principal.org_id, wanted, wanted))).fetchall()
    return [row[0] for row in rows]


def _nearest(search: SearchConfig, query: str, locale: str, websites: Future) -> dict[uuid.UUID, int]:
    """Documents in order of their best passage: document id -> best passage number.

    Runs in a worker thread: the model releases the GIL while it works, and a Qdrant server is a network
    call. The websites to search arrive (from the event loop) while the model works."""
    vector = embedder_for(search).embed_query(query)
    index = index_for(search)
    searched = websites.result()
    hits = [hit for website in searched for hit in index.query(collection_name(website, locale), vector, CANDIDATES)]
    if len(searched) > 1:  # merge the websites' rankings
        hits.sort(key=lambda h: -h.score)
    best: dict[uuid.UUID, int] = {}
    for hit in hits:
        best.setdefault(hit.document_id, hit.n)
    return best


async def _common_lexemes(conn: psycopg.AsyncConnection) -> frozenset[str]:
    """Lexemes so frequent they neither discriminate nor stay cheap to rank (PostgreSQL's column
    statistics of the full-text index, refreshed by ANALYZE; cached for a minute)."""
    where = (conn.info.host, conn.info.port, conn.info.dbname)
    cached = _common.get(where)
    if cached and time.monotonic() - cached[0] < COMMON_TTL:
        return cached[1]
    row = await (await conn.execute(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
        "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename AND c.relnamespace = s.schemaname::regnamespace "
        "WHERE s.tablename = 'rm_documents' AND s.attname = 'lexemes' AND s.schemaname = current_schema()")).fetchone()
    common = frozenset()
    if row and row[0]:
        elements, frequencies, rows = row
        common = frozenset(lexeme for lexeme, frequency in zip(elements, frequencies)
                           if frequency > COMMON_FRACTION and frequency * rows > COMMON_MIN_ROWS)
    _common[where] = (time.monotonic(), common)
    return common


# Any of the query's lexemes but the very common ones, quoted as tsquery text wants: one round trip.
LEXICAL_SQL = r"""
SELECT d.id FROM rm_documents d, (
    SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery AS q
    FROM unnest(tsvector_to_array(to_tsvector(%(config)s::regconfig, unaccent(%(query)s)))) AS lexeme
    WHERE lexeme <> ALL(%(common)s::text[])) AS terms
WHERE d.org_id = %(org)s AND d.website_id = ANY(%(websites)s) AND d.locale = %(locale)s AND d.published
AND d.lexemes @@ terms.q ORDER BY ts_rank(d.lexemes, terms.q, 1) DESC, d.id LIMIT %(limit)s
"""


async def _lexical_ranking(conn: psycopg.AsyncConnection, principal: Principal, websites: list[uuid.UUID],
                           locale: str, query: str) -> list[uuid.UUID]:
    """Documents containing any of the query's lexemes, by ts_rank; the very common lexemes are left out."""
    common = await _common_lexemes(conn)
    rows = await (await conn.execute(LEXICAL_SQL, {
        "config": text_search_config(locale), "query": query, "common": sorted(common), "org": principal.org_id,
        "websites": websites, "locale": locale, "limit": CANDIDATES})).fetchall()
    return [row[0] for row in rows]


def fuse(*rankings: list[uuid.UUID]) -> list[tuple[uuid.UUID, float]]:
    scores: dict[uuid.UUID, float] = {}
    for ranking in rankings:
        for rank, document_id in enumerate(ranking, start=1):
            scores[document_id] = scores.get(document_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def snippet(passage: str, query: str) -> str:
    """The passage (plain text) from its sentence sharing most words with the query, cut to a short excerpt."""
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    sentences = [s for s in SENTENCE_BREAK.split(passage) if s.strip()] or [""]
    start = max(range(len(sentences)),
                key=lambda i: (len(words & {w.lower() for w in _WORD.findall(sentences[i])}), -i))
    text = " ".join(" ".join(sentences[start:]).split())
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"


async def search_documents(conn: psycopg.AsyncConnection, search: SearchConfig, principal: Principal,
                           params: Mapping[str, str], mode: Mode = "hybrid") -> list[Match]:
    """GET /api/documents/search: published documents of the caller's websites, best first."""
    query, locale = parse_query(params), parse_locale(params)
    if "websiteId" in params and parse_id(params["websiteId"]) is None:  # empty too: never "every website"
        raise Invalid("websiteId is not an id", "websiteId")
    limit = params.get("limit")
    try:
        limit = min(int(limit), MAX_LIMIT) if limit else DEFAULT_LIMIT
    except ValueError:
        raise Invalid("limit must be an integer", "limit") from None
    if limit < 1:
        raise Invalid("limit must be at least 1", "limit")
    # One hop to a worker thread embeds the query and asks the index, while this connection finds the
    # websites (handed over as soon as known) and PostgreSQL ranks the full-text matches.
    known: Future = Future()
    nearest = (asyncio.get_running_loop().run_in_executor(None, _nearest, search, query, locale, known)
               if mode != "lexical" else None)
    websites: list[uuid.UUID] = []
    try:
        websites = await _websites(conn, principal, params.get("websiteId"))
    finally:
        known.set_result(websites)
    if not websites:
        return []
    lexical = await _lexical_ranking(conn, principal, websites, locale, query) if mode != "vector" else []
    vector = await nearest if nearest else {}
    ranked = fuse(list(vector), lexical)
    return await _matches(conn, principal, websites, locale, query, ranked, vector, limit)


async def _matches(conn: psycopg.AsyncConnection, principal: Principal, websites: list[uuid.UUID], locale: str,
                   query: str, ranked: list[tuple[uuid.UUID, float]], best_passage: dict[uuid.UUID, int],
                   limit: int) -> list[Match]:
    """The visible documents among the ranked ones, each with a snippet of its best passage."""
    wanted = [document_id for document_id, _ in ranked[:limit * 2]]
    documents: dict[uuid.UUID, tuple] = {}
    passages: dict[uuid.UUID, dict[int, str]] = {}
    for row in await (await conn.execute(
            "SELECT d.id, d.website_id, d.title, d.locale, d.category, CASE WHEN p.n IS NULL THEN d.content END, "
            "p.n, p.text FROM rm_documents d LEFT JOIN search_passages p ON p.document_id = d.id "
            "WHERE d.id = ANY(%s) AND d.org_id = %s AND d.website_id = ANY(%s) AND d.locale = %s AND d.published",
            (wanted, principal.org_id, websites, locale))).fetchall():
        documents[row[0]] = row
        if row[6] is not None:
            passages.setdefault(row[0], {})[row[6]] = row[7]
    matches = []
    for document_id, score in ranked:
        row = documents.get(document_id)
        if row is None:
            continue
        texts = passages.get(document_id) or {0: plain_text(row[5])}  # passages are stored as plain text
        passage = texts.get(best_passage.get(document_id, -1)) or _most_overlapping(texts.values(), query)
        matches.append(Match(row[0], row[1], row[2], row[3], row[4], round(score, 6), snippet(passage, query)))
        if len(matches) == limit:
            break
    return matches


def _most_overlapping(texts, query: str) -> str:
    words = {w.lower() for w in _WORD.findall(query)}
    return max(texts, key=lambda text: len(words & {w.lower() for w in _WORD.findall(text)}))
