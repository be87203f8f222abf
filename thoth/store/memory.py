"""Copies of the chunk table held in memory (kept by version: thoth.store.held).

`MemoryVectors`: exact vector search in memory for a small chunk table. LanceDB's brute force pays for
planning and scanning files on every query, many times a matrix product (docs/benchmarks.md, "Latency").
Cosine as LanceDB computes it, to float32's last bit; equal scores in table order.
`RankingColumns`: the columns a large table's searches rank by, so they read only row ids and scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from thoth.records import EVERY_COLLECTION, Chunk, Collections, Hit, from_row

ROW_ID = "_rowid"
MASKS_HELD = 64  # readable sets whose row masks a copy keeps (one per distinct set of grants in use)


@dataclass(frozen=True)
class MemoryVectors:
    """One version of a chunk table (Store keeps which): its vectors scaled to unit length, and its other
    columns."""

    unit: np.ndarray  # (rows, dim) float32
    rows: pa.Table  # the chunk columns and LanceDB's _rowid, in the same order
    by_row_id: RankingColumns  # the same rows by row id, for the rows other searches find
    # per readable set, which rows it may see (a caller's grants; computed once per copy)
    _masks: dict[Collections, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, table: pa.Table, vector_column: str) -> MemoryVectors:
        column = table.column(vector_column).combine_chunks()
        dim = column.type.list_size
        vectors = column.flatten().to_numpy(zero_copy_only=False).reshape(len(table), dim).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms > 0, norms, 1.0)
        rows = table.drop_columns([vector_column])
        return cls(unit, rows, RankingColumns.of(rows))

    def mask(self, readable: Collections) -> np.ndarray | None:
        """Which rows are of the `readable` collections (None: all are)."""
        if readable.every:
            return None
        found = self._masks.get(readable)
        if found is None:
            ids = pa.array(sorted(readable.ids), type=pa.string())
            inside = pc.is_in(self.rows.column("source_id"), value_set=ids).to_numpy(zero_copy_only=False)
            found = ~inside if readable.all_but else inside
            if len(self._masks) >= MASKS_HELD:
                self._masks.pop(next(iter(self._masks)))
            self._masks[readable] = found
        return found

    def search(
        self, vector: Any, limit: int, columns: list[str], readable: Collections = EVERY_COLLECTION
    ) -> list[Hit]:
        """The `limit` chunks nearest `vector` by cosine, with `columns` read (the chunk id among them), of
        the `readable` collections only."""
        count = len(self.rows)
        if count == 0 or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        # einsum, not `@`: OpenBLAS threads a matrix-vector product, and with many searches at once on few
        # cores its threads contend, each search many times slower than einsum's (docs/benchmarks.md)
        similarity = np.einsum("ij,j->i", self.unit, query)
        mask = self.mask(readable)
        if mask is not None:  # rows of other collections are never candidates
            similarity = np.where(mask, similarity, np.float32(-np.inf))
            count = int(mask.sum())
            if count == 0:
                return []
        k = min(limit, count)
        top = np.argpartition(-similarity, k - 1)[:k] if k < len(similarity) else np.arange(k)
        top = top[np.lexsort((top, -similarity[top]))]  # best first; equal scores in table order
        rows = self.rows.select([*columns, ROW_ID]).take(pa.array(top)).to_pylist()
        distance = np.float32(1.0) - similarity[top]  # as LanceDB reports it (float32), for the same figures
        return [
            Hit(from_row(Chunk, row), similarity=1.0 - float(d), row_id=row[ROW_ID])
            for d, row in zip(distance.tolist(), rows, strict=True)
        ]


@dataclass(frozen=True)
class RankingColumns:
    """Columns of every row of one version of a chunk table, by LanceDB row id, so that a search reads
    only row ids and scores: a large table's ranking columns (reading four short columns for a search's
    candidates was a large share of its CPU: docs/benchmarks.md, "Latency"), or a small table's all."""

    row_ids: np.ndarray  # uint64, ascending
    rows: pa.Table  # the same rows, in the same order

    @classmethod
    def of(cls, table: pa.Table, compact: tuple[str, ...] = ()) -> RankingColumns:
        """The copy of `table` (with its row ids); the `compact` columns held in less memory (`_compacted`):
        those read only for the few hits a search keeps, since a compacted column costs more to take."""
        row_ids = table.column(ROW_ID).to_numpy()
        if len(row_ids) > 1 and not bool((row_ids[1:] > row_ids[:-1]).all()):
            order = np.argsort(row_ids, kind="stable")
            table, row_ids = table.take(pa.array(order)), row_ids[order]
        rows = table.drop_columns([ROW_ID]).combine_chunks()
        columns = [_compacted(rows.column(n)) if n in compact else rows.column(n) for n in rows.column_names]
        return cls(row_ids, pa.table(columns, names=rows.column_names))

    def rows_of(self, row_ids: list[int], columns: list[str]) -> list[dict] | None:
        """`columns` of the rows with these row ids, in their order; None when one is not held (a row
        written after this version) or a column is not."""
        if not set(columns) <= set(self.rows.column_names):
            return None
        wanted = np.asarray(row_ids, dtype=np.uint64)
        at = np.searchsorted(self.row_ids, wanted)
        if len(at) and (int(at.max()) >= len(self.row_ids) or not bool((self.row_ids[at] == wanted).all())):
            return None
        return _decoded(self.rows.select(columns).take(pa.array(at))).to_pylist()


def _decoded(rows: pa.Table) -> pa.Table:
    """`rows` with their dictionary-encoded columns decoded: `to_pylist` of a dictionary column converts its
    whole dictionary (a document's strings at 100k chunks: 0.3 ms a column), decoding the few taken rows
    first 0.04 ms."""
    columns = [
        pa.chunked_array([c.dictionary_decode() for c in column.chunks], type=column.type.value_type)
        if pa.types.is_dictionary(column.type)
        else column
        for column in rows.columns
    ]
    return pa.table(columns, names=rows.column_names)


def _compacted(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """`column` with the same values in less memory: strings dictionary-encoded (a source's, document's or
    partition's strings repeat on each of its chunks), integers in the narrowest type that holds them
    (none at all when every one is NULL, as exercise numbers are outside workshops)."""
    if pa.types.is_string(column.type):
        encoded = column.dictionary_encode().combine_chunks()
        for index in (pa.int8(), pa.int16()):  # indices as narrow as the distinct values allow
            if _holds(index, 0, len(encoded.dictionary)):
                return pa.chunked_array([encoded.cast(pa.dictionary(index, column.type))])
        return pa.chunked_array([encoded])
    if not pa.types.is_integer(column.type) or len(column) == 0:
        return column
    if column.null_count == len(column):
        return pa.chunked_array([pa.nulls(len(column))])
    low, high = pc.min_max(column).values()
    for narrow in (pa.int8(), pa.int16(), pa.int32()):
        if _holds(narrow, low.as_py(), high.as_py()) and narrow.bit_width < column.type.bit_width:
            return column.cast(narrow)
    return column


def _holds(kind: pa.DataType, low: int, high: int) -> bool:
    bound = 1 << (kind.bit_width - 1)
    return -bound <= low and high < bound
