"""The semantic index of help documents: passages of published documents, embedded, in Qdrant.

One Qdrant collection per website and locale holds the passages of that website's published documents
in that language, so the hot query (a website's help center in one language) is an unfiltered
nearest-neighbour search. `search_passages` in PostgreSQL records, in the projection's transaction,
which passages (and so which Qdrant points) each document has: an update or delete removes exactly
those, and the query side reads snippets from it.

Qdrant is written before the PostgreSQL transaction commits. A crash in between replays the batch,
which is harmless: every event carries the document's whole state and point ids are derived from
(document, passage number), so re-applying converges on the same index.

Qdrant's local mode (the embedded default, under `<data_dir>/qdrant`) admits one process per folder:
the API process, which searches the index, then runs this projection too (see `Runtime`); with a
Qdrant server (`PARLEY_QDRANT_URL`) it runs with the other workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import psycopg

from events import types as ev
from events.store import Recorded
from parley.settings import Settings

if TYPE_CHECKING:  # the model and Qdrant load lazily: importing them costs seconds
    from projections.search_model import Embedder

COLLECTION_PREFIX = "parley_docs_"
EMBED_CHUNK = 64
DDL = """
CREATE TABLE IF NOT EXISTS search_passages (
    document_id uuid NOT NULL, n integer NOT NULL, collection text NOT NULL, point_id uuid NOT NULL,
    text text NOT NULL, PRIMARY KEY (document_id, n));
"""


def collection_name(website_id: uuid.UUID, locale: str) -> str:
    return f"{COLLECTION_PREFIX}{website_id.hex}_{locale.lower()}"


def point_id(document_id: uuid.UUID, n: int) -> uuid.UUID:
    return uuid.uuid5(document_id, str(n))


# --- passages ---------------------------------------------------------------------------------------

_MARKUP = [
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # links and images keep their text
    (re.compile(r"^[ \t]{0,3}(#{1,6}|[-*+>]|\d+\.)[ \t]+", re.M), ""),  # headings, bullets, quotes
    (re.compile(r"[*_`~]{1,3}"), ""),  # emphasis and code marks
]
_PARAGRAPH = re.compile(r"\n\s*\n")
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def plain_text(markdown: str) -> str:
    for pattern, replacement in _MARKUP:
        markdown = pattern.sub(replacement, markdown)
    return markdown.strip()


def split_passages(embedder: "Embedder", title: str, content: str) -> list[str]:
    """Passages of whole paragraphs (else sentences, else runs of words) that fit the model with the title.

    Each passage is embedded as "title. passage", so the budget is the model's minus the title's share.
    """
    budget = embedder.max_tokens - embedder.count_tokens(title) - 1

    def tokens(text: str) -> int:
        return embedder.count_tokens(text) - 2  # without [CLS] and [SEP]

    def fitting(text: str, splitters: list) -> list[tuple[str, int]]:
        size = tokens(text)
        if size <= budget:
            return [(text, size)]
        if not splitters:  # one word longer than the budget: the model truncates it
            return [(text, budget)]
        return [piece for part in splitters[0](text) if part for piece in fitting(part, splitters[1:])]

    pieces = [piece for paragraph in _PARAGRAPH.split(plain_text(content))
              for piece in fitting(" ".join(paragraph.split()), [SENTENCE_BREAK.split, str.split]) if piece[0]]
    passages: list[str] = []
    current, used = "", 0
    for piece, size in pieces:
        if current and used + size + 1 > budget:  # +1: the joining space may start a new token
            passages.append(current)
            current, used = "", 0
        current, used = (f"{current} {piece}" if current else piece), used + size + 1
    if current or not passages:
        passages.append(current)
    return passages


def passage_input(title: str, passage: str) -> str:
    return f"{title}. {passage}" if passage else title


# --- the shared model and index, one per process ----------------------------------------------------

_lock = threading.Lock()
_embedders: dict[Path, "Embedder"] = {}
_indexes: dict[str, "SearchIndex"] = {}


def embedder_for(settings: Settings) -> "Embedder":
    """The process's embedder (loading takes a second or two, so it happens on first use)."""
    key = settings.data_dir.resolve()
    with _lock:
        if key not in _embedders:
            from projections.search_model import Embedder

            _embedders[key] = Embedder(key)
        return _embedders[key]


def index_for(settings: Settings) -> "SearchIndex":
    key = settings.qdrant_url or str(settings.data_dir.resolve() / "qdrant")
    with _lock:
        if key not in _indexes:
            _indexes[key] = SearchIndex(settings)
        return _indexes[key]


def close_indexes() -> None:
    with _lock:
        for index in _indexes.values():
            index.client.close()
        _indexes.clear()


@dataclass(frozen=True)
class Hit:
    document_id: uuid.UUID
    n: int
    score: float


class IndexBusy(RuntimeError):
    """Qdrant's local storage is open in another process."""


class SearchIndex:
    """Qdrant, with every call serialized in local mode (its in-process engine is not thread-safe)."""

    def __init__(self, settings: Settings):
        from qdrant_client import QdrantClient

        if settings.qdrant_url:
            self.client = QdrantClient(url=settings.qdrant_url)
            self._guard: threading.Lock | None = None
        else:
            path = settings.data_dir.resolve() / "qdrant"
            try:
                self.client = QdrantClient(path=str(path))
            except RuntimeError as exc:
                raise IndexBusy(
                    f"the Qdrant local storage {path} is held by another process (a running `parley serve`?); "
                    "stop it, or run a Qdrant server and set PARLEY_QDRANT_URL") from exc
            self._guard = threading.Lock()
        self._known: set[str] = set()

    @contextlib.contextmanager
    def _serial(self) -> Iterator[None]:
        if self._guard is None:
            yield
        else:
            with self._guard:
                yield

    def _ensure(self, collection: str, dim: int) -> None:
        from qdrant_client import models

        if collection in self._known:
            return
        if not self.client.collection_exists(collection):
            # The vectors are unit length, so the dot product is the cosine; local mode would otherwise
            # re-normalize every stored vector on each query (6x slower at 10,000 points).
            self.client.create_collection(collection, vectors_config=models.VectorParams(
                size=dim, distance=models.Distance.DOT))
        self._known.add(collection)

    def replace(self, removed: dict[str, list[uuid.UUID]], added: dict[str, list[tuple[uuid.UUID, int, list[float]]]],
                dim: int) -> None:
        """Deletes points, then upserts (document, passage, vector) points, collection by collection."""
        from qdrant_client import models

        with self._serial():
            for collection, ids in removed.items():
                if ids and self.client.collection_exists(collection):
                    self.client.delete(collection, points_selector=models.PointIdsList(points=[str(i) for i in ids]))
            for collection, points in added.items():
                self._ensure(collection, dim)
                self.client.upsert(collection, points=[
                    models.PointStruct(id=str(point_id(doc, n)), vector=vector,
                                       payload={"document_id": str(doc), "n": n})
                    for doc, n, vector in points])

    def query(self, collection: str, vector: list[float], limit: int) -> list[Hit]:
        with self._serial():
            if collection not in self._known and not self.client.collection_exists(collection):
                return []
            points = self.client.query_points(collection, query=vector, limit=limit, with_payload=True).points
        return [Hit(uuid.UUID(p.payload["document_id"]), p.payload["n"], p.score) for p in points]

    def drop_all(self) -> None:
        with self._serial():
            for collection in self.client.get_collections().collections:
                if collection.name.startswith(COLLECTION_PREFIX):
                    self.client.delete_collection(collection.name)
            self._known.clear()


# --- the projection ---------------------------------------------------------------------------------

class SearchProjection:
    name = "search"

    def __init__(self, settings: Settings):
        self.settings = settings

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)
        if await (await conn.execute("SELECT EXISTS (SELECT 1 FROM search_passages)")).fetchone() == (True,):
            # Loading the model takes seconds: a help center in use starts loading it now, in the
            # background, so start-up stays fast and the first change or query does not wait for it.
            threading.Thread(target=embedder_for, args=(self.settings,), name="embedder-warm-up", daemon=True).start()

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await asyncio.to_thread(lambda: index_for(self.settings).drop_all())
        await conn.execute("DROP TABLE IF EXISTS search_passages")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        await self.apply_all(conn, [recorded])

    async def apply_all(self, conn: psycopg.AsyncConnection, batch: Sequence[Recorded]) -> None:
        """Indexes each touched document's final state in the batch, embedding all passages at once."""
        final: dict[uuid.UUID, ev.DocumentState | None] = {}
        for recorded in batch:
            e = recorded.event
            if isinstance(e, ev.DocumentState):
                final[e.document_id] = e
            elif isinstance(e, ev.DocumentDeleted):
                final[e.document_id] = None
        if not final:
            return
        rows = await (await conn.execute(
            "DELETE FROM search_passages WHERE document_id = ANY(%s) RETURNING collection, point_id",
            (list(final),))).fetchall()
        removed: dict[str, list[uuid.UUID]] = {}
        for collection, point in rows:
            removed.setdefault(collection, []).append(point)
        live = [state for state in final.values() if state is not None and state.published]
        passages = await asyncio.to_thread(self._embed, live)
        added: dict[str, list[tuple[uuid.UUID, int, list[float]]]] = {}
        for state, n, text, vector in passages:
            added.setdefault(collection_name(state.website_id, state.locale), []).append(
                (state.document_id, n, vector))
        if removed or added:
            dim = embedder_for(self.settings).dim if added else 0
            await asyncio.to_thread(index_for(self.settings).replace, removed, added, dim)
        if passages:
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO search_passages (document_id, n, collection, point_id, text) VALUES (%s, %s, %s, %s, %s)",
                    [(state.document_id, n, collection_name(state.website_id, state.locale),
                      point_id(state.document_id, n), text) for state, n, text, _ in passages])

    def _embed(self, states: list[ev.DocumentState]) -> list[tuple[ev.DocumentState, int, str, list[float]]]:
        if not states:
            return []
        embedder = embedder_for(self.settings)
        split = [(state, n, text) for state in states
                 for n, text in enumerate(split_passages(embedder, state.title, state.content))]
        inputs = [passage_input(state.title, text) for state, _, text in split]
        # The model is shared with the search route, one call at a time: small calls let queries in between.
        vectors = [vector for start in range(0, len(inputs), EMBED_CHUNK)
                   for vector in embedder.embed(inputs[start:start + EMBED_CHUNK])]
        return [(state, n, text, vector.tolist()) for (state, n, text), vector in zip(split, vectors)]
