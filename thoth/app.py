"""The application object: settings, the store and the embedder, shared by every tool surface. They open
once per process; `warm_up()` loads them in a background thread so `/health` answers at once."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from thoth import access
from thoth.config import Settings
from thoth.embed import CachedEmbedder, Embedder, available_cpus
from thoth.embedders import get_embedder
from thoth.store import ModelMismatch, Store, StoreError

log = logging.getLogger("thoth.app")
# onnxruntime threads per query in the server: a query is a dozen word pieces, which two threads embed
# in less time than one for the same CPU (they sleep rather than spin while idle), and more than two
# only take cores from concurrent requests (docs/performance.md, "Embedding")
SERVER_EMBED_THREADS = 2
# A running server checks the index's model again this often: an index moved to another model
# (`python -m ingest --reembed`) is then refused, naming the command, instead of searched with the wrong one.
MODEL_RECHECK_SECONDS = 60.0
QUERY_CACHE_SIZE = 1024  # query embeddings the server remembers (assistants repeat queries): one vector each


@dataclass(frozen=True)
class Health:
    """What /health (and `ping`) reports: is the index readable and searchable, and if not, why."""

    embed_model: str
    status: str = "ok"  # "ok" or "unavailable"
    reason: str | None = None
    db_uri: str | None = None  # shown only with auth off: /health is open to anyone
    tables: dict[str, int] | None = None  # row counts, when the tables could be listed
    table_versions: dict[str, int] | None = None
    table_health: dict[str, dict] | None = None  # per table: versions, files, unindexed rows, last maintained
    index_model: str | None = None
    readable: bool = False  # the tables were read through to the index's model (it may be None: empty)
    embedder: str | None = None
    last_run: dict[str, Any] | None = None  # the newest write recorded in the ingest history, in short

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def http_status(self) -> int:
        return 200 if self.ok else 503

    @property
    def readable_but_empty(self) -> bool:
        """The tables could be listed (so the URI and permissions are right) but hold no chunks yet."""
        return self.readable and not (self.tables or {}).get("chunks")

    def without_index_details(self) -> Health:
        """This report less what counts or names collections (row counts, versions, the last run's source):
        /health where THOTH_ACCESS_FILE shares some collections with some people only."""
        return replace(self, tables=None, table_versions=None, table_health=None, last_run=None)

    def to_json(self) -> dict[str, Any]:
        """/health's body; the keys in the order the route has always given them."""

        def present(**values: Any) -> dict[str, Any]:
            return {key: value for key, value in values.items() if value is not None}

        body: dict[str, Any] = {"service": "thoth", "embed_model": self.embed_model}
        body |= present(db_uri=self.db_uri, tables=self.tables, table_versions=self.table_versions)
        body |= present(table_health=self.table_health)
        body |= {"index_model": self.index_model} if self.readable else {}
        body |= present(embedder=self.embedder, last_run=self.last_run)
        return body | {"status": self.status} | present(reason=self.reason)


class Thoth:
    def __init__(self, settings: Settings, store: Store | None = None):
        self.settings = settings
        self.embed_threads = min(SERVER_EMBED_THREADS, available_cpus())
        self.index = store or Store(settings)  # every collection: the job's, warm-up's and /internal's view
        self.access_rules = access.load_rules(settings.access_file)  # checked at start: a bad file stops it
        self._embedder: CachedEmbedder | None = None
        self._embedder_error: Exception | None = None
        self._model_checked = 0.0  # when the index's model was last found to be the loaded one
        self._lock = threading.Lock()
        self._warm_thread: threading.Thread | None = None
        self._bucket_problem: str | None = None  # found at warm-up; /health asks again until it is gone
        self._writes: Any = None
        self._health_cache: tuple[dict[str, int], dict[str, dict]] | None = None
        self._writes_lock = threading.Lock()  # not `_lock`: the model load holds that one for seconds

    @property
    def store(self) -> Store:
        """The index as the caller of the request being handled sees it: only the collections it may read
        (thoth.access; every collection outside a request and with no THOTH_ACCESS_FILE)."""
        return self.index.reading(access.readable())

    @property
    def shows_index_details(self) -> bool:
        """Whether /health and the console may show table sizes and the last run: they count and name
        every collection, so not where some are shared with some people only."""
        return self.access_rules is None or access.readable().every

    @property
    def writes(self) -> Any:
        """The instance's write gate (thoth/writes/gate.py): one write at a time, maintenance after enough."""
        with self._writes_lock:
            if self._writes is None:
                from thoth.writes.gate import WriteGate  # the write path loads with the first write

                self._writes = WriteGate(self.index)
        return self._writes

    def bucket_problem(self) -> str | None:
        """Why the database's bucket cannot be used (one listing request), for a gs:// index; else None.

        Asked before Lance: Lance retries a missing bucket for seconds on every call, and names no bucket."""
        if not self.settings.db_uri.startswith("gs://"):
            return None
        from thoth.gcs import bucket_problem

        self._bucket_problem = bucket_problem(self.settings, self.settings.db_uri)
        return self._bucket_problem

    def embedder(self) -> Embedder:
        """The embedder, checked against the model the index was built with, with an LRU of query vectors.

        Raises ModelMismatch (index built by another model) or EmbedderUnavailable.
        """
        embedder = self._embedder  # set once; no lock on the request path after that
        if embedder is not None:
            if time.monotonic() - self._model_checked < MODEL_RECHECK_SECONDS:
                return embedder
            self.index.metadata.check_model(embedder.model_name, embedder.dim, embedder.prompts.pair)
            self._model_checked = time.monotonic()  # only when it matched: a moved index is refused each time
            return embedder
        with self._lock:
            if self._embedder is None:
                loaded = get_embedder(self.settings, self.embed_threads)
                self.index.metadata.check_model(loaded.model_name, loaded.dim, loaded.prompts.pair)
                self._model_checked = time.monotonic()
                self._embedder = CachedEmbedder(loaded, QUERY_CACHE_SIZE)
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
                self.index.row_counts()  # imports lancedb, opens every table
                self.index.chunks.warm(wait=False)  # the copies searches use: read now, not by the first search
            except Exception:  # said by self.embedder() below, which reads the index again
                pass

        def load() -> None:
            try:
                if problem := self.bucket_problem():  # said at once, named; the tables and model would wait on it
                    raise StoreError(problem)
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

    def table_health(self) -> dict[str, dict]:
        """Per table: versions, files, fragments, unindexed rows, last maintained (as /health shows them)."""
        return self._table_health(self.index.versions())

    def _table_health(self, versions: dict[str, int]) -> dict[str, dict]:
        # listing versions and indexes costs requests on GCS: asked again only after a write
        cached = self._health_cache
        if cached is None or cached[0] != versions:
            from thoth.store.maintenance import table_health

            cached = self._health_cache = (versions, {n: h.to_json() for n, h in table_health(self.index).items()})
        return cached[1]

    def _public(self, reason: str) -> str:
        """`reason` without the database URI when /health is shown to unauthenticated callers."""
        return reason if self.settings.auth_mode == "off" else reason.replace(self.settings.db_uri, "<THOTH_DB_URI>")

    def _last_run(self) -> dict[str, Any] | None:
        try:
            runs = self.index.recent_runs(limit=1)
        except Exception as exc:  # the history is a report: the index's health does not depend on it
            log.warning("cannot read the ingest history: %s", exc)
            return None
        if not runs:
            return None
        run = runs[0]
        short = {"source_id": run.source_id, "trigger": run.trigger, "started_by": run.started_by}
        short |= {"ended_at": run.ended_at.isoformat() if run.ended_at else None, "added": run.added}
        short |= {"updated": run.updated, "removed": run.removed, "failed": run.failed}
        return short | ({"error": run.error} if run.error else {})

    def health(self) -> Health:
        """Readable (status ok) or not, with the reason."""
        shown = self.settings.db_uri if self.settings.auth_mode == "off" else None  # no bucket name behind auth
        report = Health(self.settings.embed_model, db_uri=shown)
        try:
            if self._bucket_problem and self.bucket_problem():  # still missing: not worth Lance's retries
                raise StoreError(self._bucket_problem)
            names = self.index.tables.names()  # listed once: on GCS every listing is a request
            report = replace(report, tables=self.index.row_counts(names))
            report = replace(report, table_versions=self.index.versions(names))
            self.index.tables.check_readable(report.table_versions)  # a missing or truncated data file: 503
            report = replace(report, index_model=self.index.metadata.index_model()[0], readable=True)
            report = replace(report, table_health=self._table_health(report.table_versions))
            report = replace(report, last_run=self._last_run())
        except Exception as exc:  # any failure to read the index is a 503, never a 500
            return replace(report, status="unavailable", reason=self._public(f"cannot read the index: {exc}"))
        if not (report.tables or {}).get("chunks"):
            return replace(report, status="unavailable", reason="the index is empty; run `python -m ingest`")
        report = replace(report, embedder=self.embedder_state)
        if isinstance(self._embedder_error, ModelMismatch):
            return replace(report, status="unavailable", reason=self._public(str(self._embedder_error)))
        return report
