"""`python -m ingest --reembed`: the stored chunk and tree-node text embedded with the configured model into
staging, then one switch (thoth/store/reembed.py); a stopped run continues where it stopped (docs/models.md)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from thoth.config import Settings
from thoth.embed import Embedder, texts_per_call
from thoth.embedders import get_embedder
from thoth.records import Chunk
from thoth.store import Store, StoreError
from thoth.store.calibration import Floor
from thoth.store.metadata import model_values
from thoth.writes.calibrate import SAMPLE_CHUNKS, measure
from thoth.writes.chunking import embed_text

log = logging.getLogger("thoth.ingest")


@dataclass
class ReembedResult:
    model: str
    dim: int
    embedded: dict[str, int] = field(default_factory=dict)  # table -> rows embedded by this run
    total: dict[str, int] = field(default_factory=dict)  # table -> rows in the table
    switched: bool = False
    already: bool = False  # the index was built with this model: nothing to do
    interrupted: bool = False
    restarted: bool = False  # staging for another model was thrown away first
    floor: Floor | None = None
    seconds: float = 0.0

    def render(self) -> str:
        if self.already:
            dropped = "; vectors staged for another model were discarded" if self.restarted else ""
            return f"reembed: the index already uses {self.model} ({self.dim} dimensions){dropped}; nothing to do"
        done = ", ".join(f"{self.embedded.get(t, 0):,} {t}" for t in self.total)
        lines = [f"reembed: {self.model} ({self.dim} dimensions): embedded {done} in {self.seconds:.1f} s"]
        if self.restarted:
            lines.append("reembed: vectors staged for another model were discarded first")
        if self.interrupted:
            lines.append(
                "reembed: stopped before the switch; the index still answers with its old model. Run "
                "`python -m ingest --reembed` again with the same settings to continue"
            )
        elif self.switched:
            floor = f"cosine floor {self.floor.floor}" if self.floor else "no cosine floor yet (too few chunks)"
            lines.append(f"reembed: switched: the index now uses {self.model}; {floor}")
        return "\n".join(lines)


def reembed(
    settings: Settings,
    embedder: Embedder | None = None,
    stop: threading.Event | None = None,
    after_batch: Callable[[str, int], None] | None = None,
) -> ReembedResult:
    """Re-embed the index at `settings.db_uri` with the model `settings` configure and switch to it; `stop` set,
    return after the batch being staged (`interrupted`). `after_batch(table, rows)` hears of each staged batch."""
    started = time.perf_counter()
    store = Store(settings)
    if not store.has(Chunk):
        raise StoreError(f"there is no index at {settings.db_uri} to re-embed: run `python -m ingest --source` first")
    model = embedder or get_embedder(settings)
    prompts = model.prompts.pair
    target = model_values(model.model_name, model.dim, prompts)
    result = ReembedResult(model.model_name, model.dim)
    built, dim = store.metadata.index_model()
    staging = store.reembedding
    if (built, dim, store.metadata.index_prompts()) == (model.model_name, model.dim, tuple(prompts)):
        result.already = True
        if staging.target() is not None:  # staged for another model, then asked for the index's own
            result.restarted = True
            staging.discard()
        elif staging.finish():  # a switch stopped before its cleanup: finish it
            _reindex(store)
        return result
    result.restarted = staging.begin(target, model.dim)
    # one embedder call per staged batch, as a write makes (a local model's batch, a remote provider's
    # concurrent requests), so a stop loses little
    size = texts_per_call(settings)
    for table, (staged, total) in staging.counts().items():
        result.total[table], result.embedded[table] = total, 0
        for batch in staging.pending(table, size):
            if stop is not None and stop.is_set():
                result.interrupted = True
                result.seconds = time.perf_counter() - started
                return result
            texts = [embed_text(row.get("section"), row["text"] or "") for row in batch]
            vectors = model.embed_documents(texts)
            staging.stage(table, [r["id"] for r in batch], [r["doc_id"] or "" for r in batch], vectors)
            result.embedded[table] += len(batch)
            staged += len(batch)
            log.info("reembed: %s %d/%d staged", table, staged, total)
            if after_batch is not None:
                after_batch(table, len(batch))
    result.floor = _floor(store)
    staging.switch(target, result.floor)
    result.switched = True
    staging.finish()
    _reindex(store)
    result.seconds = time.perf_counter() - started
    return result


def _reindex(store: Store) -> None:
    store.indexes.ensure_fts(fold_in=True)  # the switch rewrote the chunk rows: their BM25 entries folded in
    store.indexes.ensure_vector()  # trained on the new vectors (the old index went with the old column)


def _floor(store: Store) -> Floor | None:
    # the floor of the new vectors, on the chunks a fresh ingest's calibration would sample
    chunk_ids, doc_ids = store.calibration.sample_ids(SAMPLE_CHUNKS)
    found = store.reembedding.staged_vectors(chunk_ids)
    kept = [i for i, chunk_id in enumerate(chunk_ids) if chunk_id in found]  # a chunk written meanwhile: not yet
    if not kept:
        return None
    return measure([doc_ids[i] for i in kept], np.stack([found[chunk_ids[i]] for i in kept]))
