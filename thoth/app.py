"""The application object: settings, the store and the embedder, shared by every tool surface.

The embedder and the tables open once per process. `warm_up()` loads them in a
background thread at server start so `/health` answers at once and the first
search does not pay for the model load.
"""

from __future__ import annotations

import logging
import threading

from thoth.config import Settings
from thoth.embed import CachedEmbedder, Embedder, available_cpus, get_embedder
from thoth.store import ModelMismatch, Store

log = logging.getLogger("thoth.app")
# onnxruntime threads per query in the server: a query is a dozen word pieces, which two threads embed
# in less time than one for the same CPU (they sleep rather than spin while idle), and more than two
# only take cores from concurrent requests (docs/performance.md, "Embedding")
SERVER_EMBED_THREADS = 2


class Thoth:
    def __init__(self, settings: Settings, store: Store | None = None):
        self.settings = settings
        self.embed_threads = min(SERVER_EMBED_THREADS, available_cpus())
        self.store = store or Store(settings)
        self._embedder: CachedEmbedder | None = None
        self._embedder_error: Exception | None = None
        self._lock = threading.Lock()
        self._warm_thread: threading.Thread | None = None

    def embedder(self) -> Embedder:
        """The embedder, checked against the model the index was built with, with an LRU of query vectors.

        Raises ModelMismatch (index built by another model) or EmbedderUnavailable.
        """
        embedder = self._embedder  # set once; no lock on the request path after that
        if embedder is not None:
            return embedder
        with self._lock:
            if self._embedder is None:
                loaded = get_embedder(self.settings, self.embed_threads)
                self.store.check_model(loaded.model_name, loaded.dim)
                self._embedder = CachedEmbedder(loaded, self.settings.query_cache_size)
            return self._embedder

    @property
    def warming_up(self) -> bool:
        return self._warm_thread is not None

    @property
    def embedder_state(self) -> str:
        if self._embedder is not None:
            return "ready"
        if self._embedder_error is not None:
            return f"error: {self._embedder_error}"
        return "loading" if self._warm_thread and self._warm_thread.is_alive() else "not loaded"

    def warm_up(self, background: bool = True) -> None:
        def open_tables() -> None:
            try:
                self.store.row_counts()  # imports lancedb, opens every table
                self.store.warm_copies(wait=False)  # the copies searches use: read now, not by the first search
            except Exception:  # said by self.embedder() below, which reads the index again
                pass

        def load() -> None:
            try:
                # The tables in a second thread: building the ONNX session runs native code without the
                # GIL, so it overlaps lancedb's import (pure Python) there and the main thread's imports.
                tables = threading.Thread(target=open_tables, name="thoth-open-tables", daemon=True)
                tables.start()
                get_embedder(self.settings, self.embed_threads)
                tables.join()
                self.embedder()  # the loaded model, checked against the one that built the index
                self._embedder_error = None
                log.info("embedder ready: %s", self.settings.embed_model)
            except Exception as exc:  # reported by /health and by the first tool call
                self._embedder_error = exc
                log.warning("warm-up: %s", exc)

        if not background:
            load()
            return
        self._warm_thread = threading.Thread(target=load, name="thoth-warm-up", daemon=True)
        self._warm_thread.start()

    def _public(self, reason: str) -> str:
        """`reason` without the database URI when /health is shown to unauthenticated callers."""
        return reason if self.settings.auth_mode == "off" else reason.replace(self.settings.db_uri, "<THOTH_DB_URI>")

    def health(self) -> tuple[int, dict]:
        """(HTTP status, body): 200 when the index is readable, 503 with the reason when not."""
        body: dict = {"service": "thoth", "embed_model": self.settings.embed_model}
        if self.settings.auth_mode == "off":  # with auth on, /health is open to anyone: no bucket name
            body["db_uri"] = self.settings.db_uri
        try:
            names = self.store.table_names()  # listed once: on GCS every listing is a request
            body["tables"] = self.store.row_counts(names)
            body["table_versions"] = self.store.versions(names)
            self.store.check_readable(body["table_versions"])  # a missing or truncated data file: 503
            body["index_model"], _ = self.store.index_model()
        except Exception as exc:  # any failure to read the index is a 503, never a 500
            return 503, {**body, "status": "unavailable", "reason": self._public(f"cannot read the index: {exc}")}
        if not body["tables"].get("chunks"):
            return 503, {**body, "status": "unavailable", "reason": "the index is empty; run `python -m ingest`"}
        body["embedder"] = self.embedder_state
        if isinstance(self._embedder_error, ModelMismatch):
            return 503, {**body, "status": "unavailable", "reason": self._public(str(self._embedder_error))}
        return 200, {**body, "status": "ok"}
