"""The semantic index of help documents: passages of published documents, embedded, in Qdrant.

One Qdrant collection per website and locale holds the passages of that website's published documents
in that language, so the hot query (a website's help center in one language) is an unfiltered
nearest-neighbour search. `search_passages` in PostgreSQL records, in the projection's transaction,
which passages (and so which Qdrant points) each document has: an update or delete removes exactly
those, and the query side reads snippets from it.

Qdrant is written before the PostgreSQL transaction commits. A crash in between replays the batch,
which is harmless: every event carries the document's whole state and point ids are derived from
(document, passage number), so re-applying converges on the same index.

The embedded default is Qdrant Edge (the Qdrant engine in-process, under `<data_dir>/qdrant-edge`),
which admits one process per folder: the API process, which searches the index, then runs this
projection too (see `Runtime`); with a Qdrant server (`PARLEY_QDRANT_URL`, reached with qdrant-client)
it runs with the other workers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

import psycopg

from events import types as ev
from events.store import Recorded

if TYPE_CHECKING:  # the model and Qdrant load lazily: importing them costs seconds
    from projections.search_model import Embedder

log = logging.getLogger("parley.search")
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


@dataclass(frozen=True)
class SearchConfig:
    """Where the search model's files and the index are: the data directory (the embedded index under it,
    Qdrant Edge) or a Qdrant server's URL."""

    data_dir: Path
    qdrant_url: str | None = None


# --- the shared model and index, one per process ----------------------------------------------------

_lock = threading.Lock()
_embedders: dict[Path, "Embedder"] = {}
_indexes: dict[str, "SearchIndex"] = {}
_warming: dict[Path, threading.Thread] = {}
WARM_UP_NICENESS = 10


def embedder_for(config: SearchConfig) -> "Embedder":
    """The process's embedder, loaded by the first caller (`warm_up` at start-up) while others wait."""
    key = config.data_dir.resolve()
    with _lock:
        if key not in _embedders:
            from projections.search_model import Embedder

            _embedders[key] = Embedder(key)
        return _embedders[key]


def warm_up(config: SearchConfig) -> None:
    """Starts loading the process's embedder in the background, once, when the process has started:
    loading takes seconds (tens on a busy machine), and the first document saved or searched would
    otherwise wait for it."""
    key = config.data_dir.resolve()
    with _lock:
        if key in _embedders or key in _warming:
            return
        _warming[key] = threading.Thread(target=_load_in_background, args=(config,), name="embedder-warm-up",
                                         daemon=True)
    _warming[key].start()


def _load_in_background(config: SearchConfig) -> None:
    # at a lower priority than the requests this process serves meanwhile (Linux: per thread)
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WARM_UP_NICENESS)
    except (AttributeError, OSError):
        pass
    embedder_for(config)


def embedder_loaded(config: SearchConfig) -> bool:
    """Whether this process's embedder is ready (a search's query is embedded at once)."""
    return config.data_dir.resolve() in _embedders


def index_for(config: SearchConfig) -> "SearchIndex":
    key = config.qdrant_url or str(edge_root(config))
    with _lock:
        if key not in _indexes:
            _indexes[key] = ServerIndex(config.qdrant_url) if config.qdrant_url else EdgeIndex(edge_root(config))
        return _indexes[key]


def close_indexes() -> None:
    with _lock:
        for index in _indexes.values():
            index.close()
        _indexes.clear()


def edge_root(config: SearchConfig) -> Path:
    return config.data_dir.resolve() / "qdrant-edge"


@dataclass(frozen=True)
class Hit:
    document_id: uuid.UUID
    n: int
    score: float


class IndexBusy(RuntimeError):
    """The embedded index's storage is open in another process."""


class SearchIndex(Protocol):
    def replace(self, removed: dict[str, list[uuid.UUID]],
                added: dict[str, list[tuple[uuid.UUID, int, list[float]]]], dim: int) -> None:
        """Deletes points, then upserts (document, passage, vector) points, collection by collection."""

    def query(self, collection: str, vector: Sequence[float], limit: int) -> list[Hit]:
        """The nearest passages of the collection (none if it does not exist), best first."""

    def drop_all(self) -> None: ...

    def close(self) -> None: ...


def _payload(document_id: uuid.UUID, n: int) -> dict:
    return {"document_id": str(document_id), "n": n}


class EdgeIndex:
    """Qdrant Edge, the Qdrant engine run in-process (the embedded default): one shard, a folder under
    `<data_dir>/qdrant-edge`, per collection.

    A query is an exact scan of the collection's vectors in native code (under a millisecond at 10,000
    passages; qdrant-client's local mode took 7 ms or more, computing in float64 numpy). No optimizer
    ever builds an HNSW graph (indexing_threshold 0), so results are exact and writes stay cheap. Only
    one process may open the folder: a lock file says so at once, before any shard is touched.
    """

    def __init__(self, root: Path):
        import fcntl

        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self._lock_file = open(root / ".lock", "a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            raise IndexBusy(
                f"the search index {root} is held by another process (a running `parley serve`?); "
                "stop it, or run a Qdrant server and set PARLEY_QDRANT_URL") from None
        self._shards: dict[str, object] = {}
        self._guard = threading.Lock()  # opening, creating and closing shards; the shards lock themselves

    def _shard(self, collection: str, dim: int = 0):
        """The collection's open shard; with `dim`, created if missing, else None if missing."""
        shard = self._shards.get(collection)
        if shard is not None:
            return shard
        from qdrant_edge import (Distance, EdgeConfig, EdgeOptimizersConfig, EdgeShard,
                                 EdgeVectorParams)

        with self._guard:
            if collection in self._shards:
                return self._shards[collection]
            path = self.root / collection
            if (path / "edge_config.json").is_file():
                shard = EdgeShard.load(str(path))
            elif dim:
                # The vectors are unit length, so the dot product is the cosine.
                shard = EdgeShard.create(str(path), EdgeConfig(
                    vectors=EdgeVectorParams(size=dim, distance=Distance.Dot),
                    optimizers=EdgeOptimizersConfig(indexing_threshold=0), max_search_threads=1))
            else:
                return None
            self._shards[collection] = shard
            return shard

    def replace(self, removed: dict[str, list[uuid.UUID]],
                added: dict[str, list[tuple[uuid.UUID, int, list[float]]]], dim: int) -> None:
        from qdrant_edge import Point, UpdateOperation

        touched = []
        for collection, ids in removed.items():
            if ids and (shard := self._shard(collection)) is not None:
                shard.update(UpdateOperation.delete_points(list(ids)))
                touched.append(shard)
        for collection, points in added.items():
            shard = self._shard(collection, dim)
            shard.update(UpdateOperation.upsert_points([
                Point(point_id(doc, n), vector, _payload(doc, n)) for doc, n, vector in points]))
            touched.append(shard)
        for shard in touched:  # on disk before the projection's transaction commits
            shard.flush()

    def query(self, collection: str, vector: Sequence[float], limit: int) -> list[Hit]:
        from qdrant_edge import Query, QueryRequest

        shard = self._shard(collection)
        if shard is None:
            return []
        points = shard.query(QueryRequest(limit=limit, query=Query.Nearest(vector), with_payload=True))
        return [Hit(uuid.UUID(p.payload["document_id"]), p.payload["n"], p.score) for p in points]

    def collections(self) -> list[str]:
        return [path.name for path in self.root.iterdir() if path.name.startswith(COLLECTION_PREFIX)]

    def drop_all(self) -> None:
        with self._guard:
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            for name in self.collections():
                shutil.rmtree(self.root / name)

    def close(self) -> None:
        with self._guard:
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            self._lock_file.close()  # releases the lock


class ServerIndex:
    """A Qdrant server (`PARLEY_QDRANT_URL`), shared by every API and worker process."""

    def __init__(self, url: str):
        from qdrant_client import QdrantClient

        self.client = QdrantClient(url=url)
        self._known: set[str] = set()

    def _ensure(self, collection: str, dim: int) -> None:
        from qdrant_client import models

        if collection in self._known:
            return
        if not self.client.collection_exists(collection):
            self.client.create_collection(collection, vectors_config=models.VectorParams(
                size=dim, distance=models.Distance.DOT))
        self._known.add(collection)

    def replace(self, removed: dict[str, list[uuid.UUID]],
                added: dict[str, list[tuple[uuid.UUID, int, list[float]]]], dim: int) -> None:
        from qdrant_client import models

        for collection, ids in removed.items():
            if ids and self.client.collection_exists(collection):
                self.client.delete(collection, points_selector=models.PointIdsList(points=[str(i) for i in ids]))
        for collection, points in added.items():
            self._ensure(collection, dim)
            self.client.upsert(collection, points=[
                models.PointStruct(id=str(point_id(doc, n)), vector=vector, payload=_payload(doc, n))
                for doc, n, vector in points])

    def query(self, collection: str, vector: Sequence[float], limit: int) -> list[Hit]:
        if collection not in self._known and not self.client.collection_exists(collection):
            return []
        points = self.client.query_points(collection, query=[float(x) for x in vector], limit=limit,
                                          with_payload=True).points
        return [Hit(uuid.UUID(p.payload["document_id"]), p.payload["n"], p.score) for p in points]

    def drop_all(self) -> None:
        for collection in self.client.get_collections().collections:
            if collection.name.startswith(COLLECTION_PREFIX):
                self.client.delete_collection(collection.name)
        self._known.clear()

    def close(self) -> None:
        self.client.close()


# --- the projection ---------------------------------------------------------------------------------

class SearchProjection:
    name = "search"
    handles = (ev.DocumentState, ev.DocumentDeleted)

    def __init__(self, config: SearchConfig):
        self.config = config

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)
        indexed = await (await conn.execute("SELECT EXISTS (SELECT 1 FROM search_passages)")).fetchone() == (True,)
        root = edge_root(self.config)
        if indexed and not self.config.qdrant_url and not (
                root.is_dir() and any(p.name.startswith(COLLECTION_PREFIX) for p in root.iterdir())):
            # Passages are recorded but the embedded index that held them is gone (deleted, or written by
            # an earlier engine: qdrant-client's local mode, under <data_dir>/qdrant): index from the start.
            log.warning("the search index %s is missing: re-indexing every document from the event store", root)
            await conn.execute("TRUNCATE search_passages")
            await conn.execute("UPDATE parley_projection_positions SET position = 0 WHERE name = %s", (self.name,))

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await asyncio.to_thread(lambda: index_for(self.config).drop_all())
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
            dim = embedder_for(self.config).dim if added else 0
            await asyncio.to_thread(index_for(self.config).replace, removed, added, dim)
        if passages:
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO search_passages (document_id, n, collection, point_id, text) VALUES (%s, %s, %s, %s, %s)",
                    [(state.document_id, n, collection_name(state.website_id, state.locale),
                      point_id(state.document_id, n), text) for state, n, text, _ in passages])

    def _embed(self, states: list[ev.DocumentState]) -> list[tuple[ev.DocumentState, int, str, list[float]]]:
        if not states:
            return []
        embedder = embedder_for(self.config)
        split = [(state, n, text) for state in states
                 for n, text in enumerate(split_passages(embedder, state.title, state.content))]
        inputs = [passage_input(state.title, text) for state, _, text in split]
        # The model is shared with the search route, one call at a time: small calls let queries in between.
        vectors = [vector for start in range(0, len(inputs), EMBED_CHUNK)
                   for vector in embedder.embed(inputs[start:start + EMBED_CHUNK])]
        return [(state, n, text, vector.tolist()) for (state, n, text), vector in zip(split, vectors)]
