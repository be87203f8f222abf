"""The embedders (`local.py`: ONNX and sentence-transformers; `remote.py` with `openai.py` and `vertex.py`:
endpoints) and `get_embedder`, which picks one by THOTH_EMBED_PROVIDER and loads it once per process. What
they implement, and what their users need, is thoth/embed.py."""

from __future__ import annotations

import threading
from typing import Any

from thoth import embed
from thoth.config import REMOTE_EMBED_PROVIDERS, Settings
from thoth.embed import Embedder, configured_prompts, embed_batch, get_tokenizer, resolve_model

_lock = threading.Lock()
_embedders: dict[tuple[object, ...], Embedder] = {}


def loaded_embedders() -> list[Embedder]:
    """The embedders this process has loaded (the ingest summary reports what remote ones sent)."""
    with _lock:
        return list(_embedders.values())


def get_embedder(settings: Settings, threads: int = 0) -> Embedder:
    """The process-wide embedder for `settings` (loaded on first use, then reused). `threads`: onnxruntime
    threads per call; 0, one per core, suits ingest's large batches (the server asks for fewer)."""
    if settings.embed_provider in REMOTE_EMBED_PROVIDERS:
        return _remote_embedder(settings)
    backend, prompts = settings.embed_backend, configured_prompts(settings)
    int8 = backend == "onnx" and settings.embed_int8
    threads = threads if backend == "onnx" else 0
    key = (settings.embed_model, backend, int8, settings.cache_dir if backend == "onnx" else "", threads, prompts)
    with _lock:
        if key not in _embedders:
            from thoth.embedders.local import OnnxEmbedder, SentenceTransformerEmbedder

            model, batch = resolve_model(settings.embed_model), embed_batch(settings)
            if backend == "onnx":
                from thoth.embedders.onnx_export import export_in_subprocess

                path = export_in_subprocess(model, settings.cache_dir, int8=int8)
                _embedders[key] = OnnxEmbedder(model, path, batch_size=batch, threads=threads or None)
            else:
                _embedders[key] = SentenceTransformerEmbedder(model, batch_size=batch)
            _embedders[key].prompts = prompts
        return _embedders[key]


def _remote_embedder(settings: Settings) -> Embedder:
    from thoth.embedders import remote

    options: dict[str, Any] = dict(
        prompts=configured_prompts(settings),
        dimensions=settings.embed_dimensions,
        batch_size=embed_batch(settings),
        concurrency=embed.REMOTE_CONCURRENCY,
        retries=remote.RETRIES,
        timeout=remote.TIMEOUT_SECONDS,
    )
    where = (settings.embed_model, settings.gcp_project, settings.gcp_location)
    # the options too: a test that changes a module constant (fewer retries) gets an embedder that uses it
    cache_key = (settings.embed_provider, settings.embed_url, settings.embed_api_key, *where, *options.values())
    with _lock:
        if cache_key not in _embedders:
            options["max_tokens"] = get_tokenizer(settings).max_tokens  # chunks are cut by the bundled tokenizer
            if settings.embed_provider == "vertex":
                from thoth.embedders.vertex import VertexEmbedder

                _embedders[cache_key] = VertexEmbedder(*where, base_url=settings.embed_url, **options)
            else:
                from thoth.embedders.openai import OpenAIEmbedder

                url, key = settings.embed_url, settings.embed_api_key
                _embedders[cache_key] = OpenAIEmbedder(url, settings.embed_model, key, **options)
        return _embedders[cache_key]
