"""The local embedders: sentence-transformers on torch, and onnxruntime with the model's own tokenizer
(no torch at run time). `thoth.embedders.get_embedder` picks one by THOTH_EMBED_PROVIDER."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from thoth.embed import Embedder, EmbedderUnavailable, ModelRef, available_cpus, max_seq_length


class SentenceTransformerEmbedder(Embedder):
    """sentence-transformers on torch (on the device it picks: CUDA when there is one, else CPU)."""

    def __init__(self, model: ModelRef, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(model.path or model.name))
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


class OnnxEmbedder(Embedder):
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
        sort_by_length: bool = True,  # off only to measure what the sort gains (bench/embed.py)
    ):
        import onnxruntime as ort
        from tokenizers import Tokenizer as HFTokenizer

        if model.path is None or not (model.path / "tokenizer.json").exists():
            raise EmbedderUnavailable(
                f"no tokenizer.json for model {model.name!r}; the onnx backend needs a local model folder"
            )
        onnx_path = Path(onnx_path)
        if not onnx_path.is_file():
            raise EmbedderUnavailable(f"no ONNX model at {onnx_path}; run `python -m thoth.embedders.onnx_export`")
        max_length = max_seq_length(model.path)
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
        # onnxruntime's CPU arena keeps a run's buffers for the next (a write's batches embed faster with
        # it); a batch of several texts (a write's) shrinks it after its run, so the largest batch's
        # activations (hundreds of MB for 64 long texts) are not kept for the life of the process. No
        # memory pattern: it keeps buffers per input shape (docs/operations.md, "Memory").
        opts.enable_mem_pattern = False
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
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
        return self._session.run([self._output], feed, self._shrink if len(ids) > 1 else None)[0]

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
