"""The chunk table's indexes: BM25 (LanceDB's native full-text index) and the ANN index on vectors,
built once the table is large enough, and the new rows folded into both as the table grows."""

from __future__ import annotations

import logging
import time
from typing import Any

from thoth.records import VectorIndex, VectorIndexBuild
from thoth.store.metadata import Metadata
from thoth.store.schema import CHUNKS, META_VECTOR_INDEX_ROWS
from thoth.store.tables import Tables, retry_on_conflict

log = logging.getLogger("thoth.store")

FTS_COLUMN = "search_text"
VECTOR_COLUMN = "vector"
# An index trained on n rows is trained again once the table holds this many times n: new rows are
# only folded into the existing partitions by optimize(), which slows search as partitions grow.
RETRAIN_GROWTH = 4
# New chunks stay in the indexes' unindexed tail until it holds this many rows; then the next write folds
# them in (fold_in_due). Searches scan the tail, which costs more per row than the index does.
FOLD_IN_ROWS = 256
MIN_TRAIN_ROWS = 256  # fewer rows cannot train the quantiser's codebooks
# The ANN index is built once the chunks table holds this many rows: below it an exact search is fast enough
# and holds little (docs/performance.md, "ANN index")
VECTOR_INDEX_MIN_ROWS = 20_000
PARTITION_ROWS = 4096  # IVF partitions: one per this many rows (training time grows with partitions)
# The one index type Thoth builds: IVF partitions, each vector as RaBitQ codes of RQ_BITS a dimension,
# cheap to scan and close enough to the full vectors that few candidates need re-ranking. Fewer bits
# need more candidates for the same recall (docs/benchmarks.md, "ANN index").
INDEX_TYPE = "IvfRq"  # lancedb's name for it
RQ_BITS = 4


def is_current(index: VectorIndex) -> bool:
    """Whether an index is of the type Thoth builds; one of another type (IVF_PQ, IVF_HNSW_SQ, built by
    an older version) is searched as it is until the next ingest trains an IVF_RQ one in its place."""
    return index.type.upper() == INDEX_TYPE.upper()


class Indexes:
    def __init__(self, tables: Tables, metadata: Metadata):
        self.tables = tables
        self.metadata = metadata

    def _fts_index(self) -> Any:
        return next((idx for idx in self.tables.table(CHUNKS).list_indices() if idx.columns == [FTS_COLUMN]), None)

    def fts_has_positions(self) -> bool | None:
        """Whether the BM25 index stores word positions (phrase queries need them); None: no index yet."""
        idx = self._fts_index()
        return None if idx is None else bool((getattr(idx, "index_details", None) or {}).get("with_position"))

    def ensure_fts(self, fold_in: bool = True) -> None:
        """Build the BM25 index on chunks (English stemming and stop words, word positions for phrases),
        or fold new rows into it (`fold_in`)."""
        table = self.tables.table(CHUNKS)
        if self._fts_index() is not None:
            if fold_in:
                retry_on_conflict(table.optimize, "optimize chunks")
            return
        self._compact_first_build(table)
        retry_on_conflict(self.create_fts, "create the BM25 index")

    def _compact_first_build(self, table: Any) -> None:
        # A table's first build holds one data file per write batch, and searches read their hits and
        # the refine step's candidates from each: compacted once before its indexes are built, a large
        # table's searches cost less CPU (docs/benchmarks.md, "Latency"). Later runs compact as they
        # fold rows in (optimize). Small tables are left as they are.
        if table.count_rows() >= max(1, VECTOR_INDEX_MIN_ROWS):
            started = time.perf_counter()
            retry_on_conflict(table.optimize, "compact chunks")
            log.info("compacted chunks before indexing in %.1f s", time.perf_counter() - started)

    def fold_in_due(self) -> bool:
        """Whether the chunks outside the BM25 index are enough to fold them into the indexes now.

        optimize() compacts the table's files and merges the indexes: work in proportion to the whole
        table. One document written (ingest_document, a bucket event) stays in the unindexed tail, which
        vector and keyword searches still scan (phrases included); the write that brings the tail to
        FOLD_IN_ROWS folds it in. So a write costs the table work once per FOLD_IN_ROWS new chunks.
        """
        unindexed = self.unindexed_rows()
        return unindexed is None or unindexed >= FOLD_IN_ROWS

    def unindexed_rows(self) -> int | None:
        """Chunks outside the BM25 index (searches scan them); None: no index yet."""
        idx = self._fts_index()
        stats = self.tables.table(CHUNKS).index_stats(idx.name) if idx is not None else None
        return None if stats is None else int(stats.num_unindexed_rows)

    def create_fts(self) -> None:
        self.tables.table(CHUNKS).create_fts_index(
            FTS_COLUMN,
            use_tantivy=False,  # the native index: it builds on object storage too
            replace=True,
            language="English",
            stem=True,
            remove_stop_words=True,
            ascii_folding=True,
            with_position=True,  # phrase queries ("time off") need positions
        )

    # -- the vector index ----------------------------------------------------------------------

    def vector_index(self) -> VectorIndex | None:
        """The ANN index on chunk vectors, or None."""
        table = self.tables.table(CHUNKS)
        for idx in table.list_indices():
            if VECTOR_COLUMN in idx.columns:
                stats = table.index_stats(idx.name)
                indexed, unindexed = (stats.num_indexed_rows, stats.num_unindexed_rows) if stats else (0, 0)
                return VectorIndex(idx.name, str(idx.index_type), int(indexed), int(unindexed))
        return None

    def ensure_vector(self, min_rows: int | None = None, fold_in: bool = True) -> VectorIndexBuild | None:
        """Build the ANN index on chunk vectors once the table holds `min_rows` rows (0: never).

        None when the table is below the threshold (or nothing is due). An existing index takes new rows
        in through optimize() (no retraining; not with `fold_in` false) until the table has grown
        RETRAIN_GROWTH-fold since training. An index of another type (`is_current`) is trained again.
        """
        min_rows = VECTOR_INDEX_MIN_ROWS if min_rows is None else min_rows
        table = self.tables.table(CHUNKS)
        rows = table.count_rows()
        existing = self.vector_index()
        trained = int(self.metadata.get(META_VECTOR_INDEX_ROWS) or 0)
        if existing is None and (min_rows <= 0 or rows < max(min_rows, MIN_TRAIN_ROWS)):
            return None
        started = time.perf_counter()
        if existing is not None and is_current(existing) and rows < RETRAIN_GROWTH * max(trained, 1):
            if not fold_in:
                return None
            retry_on_conflict(table.optimize, "optimize chunks")  # folds new rows into the vector and FTS indexes
            return VectorIndexBuild("updated", rows, time.perf_counter() - started, self.vector_index() or existing)
        from lancedb.index import IvfRq

        config = IvfRq(distance_type="cosine", num_partitions=max(1, rows // PARTITION_ROWS), num_bits=RQ_BITS)
        retry_on_conflict(lambda: table.create_index(VECTOR_COLUMN, config=config, replace=True), "build the ANN index")
        self.metadata.set({META_VECTOR_INDEX_ROWS: str(rows)})
        action = "built" if existing is None else "retrained"
        seconds = time.perf_counter() - started
        log.info("vector index %s: IVF_RQ over %d rows in %.1f s", action, rows, seconds)
        return VectorIndexBuild(action, rows, seconds, self.vector_index())
