"""The ONNX MiniLM built from the packaged weights, checked against a plain numpy BERT."""

import json
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # fastembed must never reach for the hub

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from projections.search_model import Embedder, max_seq_length, model_dir, package_weights_dir

SENTENCES = [
    "How do I reset my password?",
    "My order arrived damaged and I would like a refund.",
    "Shipping times to Canada",
    "Hi",
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def embedder(data_dir):
    return Embedder(data_dir)


def _layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def reference_embedding(text: str) -> np.ndarray:
    """all-MiniLM-L6-v2 as sentence-transformers runs it, in float64 numpy, one unpadded text."""
    weights_dir = package_weights_dir()
    cfg = json.loads((weights_dir / "config.json").read_text())
    w = {k: v.astype(np.float64) for k, v in load_file(str(weights_dir / "model.safetensors")).items()}
    tok = Tokenizer.from_file(str(weights_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_seq_length(weights_dir))
    ids = np.array(tok.encode(text).ids)
    eps, heads = cfg["layer_norm_eps"], cfg["num_attention_heads"]

    def linear(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def norm(x, name):
        return _layer_norm(x, w[f"{name}.weight"], w[f"{name}.bias"], eps)

    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][: len(ids)]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = norm(x, "embeddings.LayerNorm")
    seq, hidden = x.shape
    head_dim = hidden // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (linear(x, f"{p}.attention.self.{n}").reshape(seq, heads, head_dim).transpose(1, 0, 2)
                   for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_dim)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(seq, hidden)
        x = norm(linear(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1 + _erf(h / math.sqrt(2)))
        x = norm(linear(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_matches_numpy_reference(embedder):
    # One batch of unequal lengths, so padding and the attention mask are exercised too.
    got = embedder.embed(SENTENCES)
    assert got.shape == (len(SENTENCES), 384)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    expected = np.stack([reference_embedding(s) for s in SENTENCES])
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_embed_query_matches_batch(embedder):
    query = embedder.embed_query(SENTENCES[1])
    assert query.shape == (384,)
    np.testing.assert_allclose(query, embedder.embed(SENTENCES)[1], atol=1e-5)


def test_query_session_is_the_same_model(embedder):
    # embed_query runs a session of its own: same numbers as the numpy reference and as the batch path,
    # for a one-token text, accents and emoji, and a text past 256 tokens (truncated the same way).
    np.testing.assert_allclose(embedder.embed_query(SENTENCES[0]), reference_embedding(SENTENCES[0]), atol=1e-5)
    long_text = " ".join(f"parcel {i}" for i in range(300))
    for text in ("Hi", "Ünïcödé café, déjà vu 🙂", long_text):
        query = embedder.embed_query(text)
        assert query.dtype == np.float32
        np.testing.assert_allclose(query, embedder.embed([text])[0], atol=1e-5)
    assert not np.allclose(embedder.embed_query(long_text), embedder.embed_query(long_text[:200]), atol=1e-3)


def test_empty_batch(embedder):
    assert embedder.embed([]).shape == (0, 384)


def test_ranking(embedder):
    query = embedder.embed_query("How do I reset my password?")
    near, far = embedder.embed(["Resetting your account password", "Shipping times to Canada"])
    assert query @ near > 0.7
    assert query @ far < 0.3


def test_model_dir_built_once(data_dir, embedder):
    built = model_dir(data_dir)
    assert built.parent == data_dir / "models"
    assert built.name.startswith("minilm-") and len(built.name) == len("minilm-") + 16
    onnx_mtime = (built / "model.onnx").stat().st_mtime_ns
    Embedder(data_dir).embed_query("again")
    assert (built / "model.onnx").stat().st_mtime_ns == onnx_mtime
    assert [p.name for p in (data_dir / "models").iterdir()] == [built.name]  # no temp dirs left


def test_truncates_at_256_tokens(embedder):
    assert embedder.max_tokens == 256
    words = "the customer asked whether the parcel could be delivered to another address".split()
    text = " ".join(f"{words[i % len(words)]} {i}" for i in range(300))
    assert embedder.count_tokens(text) > 600
    tok = Tokenizer.from_file(str(package_weights_dir() / "tokenizer.json"))
    tok.no_truncation()
    prefix = tok.decode(tok.encode(text).ids[1:255])  # 254 tokens + [CLS] + [SEP] = 256
    assert embedder.count_tokens(prefix) == 256
    full, head, shorter = embedder.embed([text, prefix, tok.decode(tok.encode(text).ids[1:150])])
    np.testing.assert_allclose(full, head, atol=1e-4)
    assert full @ shorter < 0.999  # the check above can tell prefixes apart
