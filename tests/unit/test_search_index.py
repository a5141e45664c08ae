"""The embedded vector index (Qdrant Edge): exact nearest passages, persistence, one process per folder."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from projections.search import EdgeIndex, IndexBusy, point_id

DIM = 384


def unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def index(tmp_path):
    opened = EdgeIndex(tmp_path / "qdrant-edge")
    yield opened
    opened.close()


def test_query_returns_the_exact_nearest_passages_best_first(index):
    rng = np.random.default_rng(7)
    vectors = unit(rng, 2000)
    points = [(uuid.uuid4(), n % 3, vectors[n].tolist()) for n in range(len(vectors))]
    index.replace({}, {"parley_docs_a_en": points}, DIM)
    for query in unit(rng, 5):
        expected = np.argsort(-(vectors @ query))[:20]  # exact, as a brute-force scan finds them
        hits = index.query("parley_docs_a_en", query, 20)
        assert [(hit.document_id, hit.n) for hit in hits] == [points[i][:2] for i in expected]
        np.testing.assert_allclose([hit.score for hit in hits], (vectors @ query)[expected], rtol=1e-5)


def test_replace_deletes_then_upserts_and_collections_stay_apart(index):
    rng = np.random.default_rng(8)
    a, b, c = unit(rng, 3)
    doc, other = uuid.uuid4(), uuid.uuid4()
    index.replace({}, {"parley_docs_a_en": [(doc, 0, a.tolist()), (doc, 1, b.tolist())],
                       "parley_docs_a_de": [(other, 0, c.tolist())]}, DIM)
    assert [(h.document_id, h.n) for h in index.query("parley_docs_a_en", b, 10)] == [(doc, 1), (doc, 0)]
    # A new version of the document: its old points go, its new one comes.
    index.replace({"parley_docs_a_en": [point_id(doc, 0), point_id(doc, 1)]},
                  {"parley_docs_a_en": [(doc, 0, c.tolist())]}, DIM)
    assert [(h.document_id, h.n) for h in index.query("parley_docs_a_en", b, 10)] == [(doc, 0)]
    assert [h.document_id for h in index.query("parley_docs_a_de", c, 10)] == [other]
    assert index.query("parley_docs_never_en", c, 10) == []
    index.replace({"parley_docs_gone_en": [point_id(doc, 0)]}, {}, DIM)  # a collection never created
    assert not (index.root / "parley_docs_gone_en").exists()


def test_the_index_survives_a_reopen_and_drop_all_empties_it(tmp_path):
    rng = np.random.default_rng(9)
    vectors = unit(rng, 50)
    points = [(uuid.uuid4(), 0, v.tolist()) for v in vectors]
    first = EdgeIndex(tmp_path / "edge")
    first.replace({}, {"parley_docs_a_en": points}, DIM)
    before = first.query("parley_docs_a_en", vectors[3], 5)
    first.close()
    again = EdgeIndex(tmp_path / "edge")
    try:
        assert again.query("parley_docs_a_en", vectors[3], 5) == before
        assert before[0].document_id == points[3][0]
        again.drop_all()
        assert again.query("parley_docs_a_en", vectors[3], 5) == []
        assert again.collections() == []
    finally:
        again.close()


def test_one_opener_per_folder(tmp_path):
    first = EdgeIndex(tmp_path / "edge")
    try:
        with pytest.raises(IndexBusy, match="PARLEY_QDRANT_URL"):
            EdgeIndex(tmp_path / "edge")
    finally:
        first.close()
    EdgeIndex(tmp_path / "edge").close()  # free again once closed
