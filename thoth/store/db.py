"""The store: Thoth's tables read and written as records. Only this package knows table names, column
names and LanceDB calls; the ingest job and the retrieval functions go through `Store`, a facade over
tables (connect, migrate, write), metadata (settings, model, tree pointers), indexes and chunk search."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from thoth.config import Settings
from thoth.records import (
    EVERY_COLLECTION,
    Chunk,
    Collections,
    Document,
    Hit,
    IngestRun,
    Match,
    Partition,
    Session,
    Source,
    TreeNode,
    TreePointer,
    field_names,
    from_row,
    to_row,
)
from thoth.store import filters
from thoth.store.calibration import Calibration
from thoth.store.chunks import ChunkSearch, Reading, present
from thoth.store.figures import Figures
from thoth.store.indexes import VECTOR_COLUMN, Indexes
from thoth.store.lance import Lance
from thoth.store.metadata import Metadata
from thoth.store.migration import migrate
from thoth.store.oauth_state import OAuthState
from thoth.store.reembed import Reembedding
from thoth.store.runs import Runs
from thoth.store.schema import CHUNKS, DOCUMENTS, PARTITIONS, SESSIONS, SETTINGS, SOURCES, TREE_NODES
from thoth.store.served import Pair
from thoth.store.tables import StoreError, Tables

# The table each record is read from and written to.
TABLE_OF: dict[type, str] = {
    Source: SOURCES,
    Document: DOCUMENTS,
    Partition: PARTITIONS,
    Chunk: CHUNKS,
    TreeNode: TREE_NODES,
    Session: SESSIONS,
}
# Columns of a tree node for navigation and display (everything but the vector).
NODE_COLUMNS = [name for name in field_names(TreeNode) if name not in ("similarity", "chunk")]

R = TypeVar("R")


class Store:
    """One LanceDB database (a folder or gs:// prefix) holding Thoth's tables. `public_api`: reach
    lancedb's async API through its published functions only (thoth.store.lance).

    `readable`: the collections this store's reads see (`reading` gives a store for a caller who may read
    only some): every query of a record, search and tree pointer is filtered by it in the query itself (a
    prefilter, so a search's top-k stays full), and what it leaves out does not exist for that caller."""

    def __init__(self, settings: Settings, public_api: bool = False):
        self.settings = settings
        self.uri = settings.db_uri
        self.tables = Tables(settings)
        self.lance = Lance(
            public_api, self.uri, settings.read_consistency_seconds, settings.storage_options(), settings.lance_cache_mb
        )
        self.metadata = Metadata(self.tables)
        self.indexes = Indexes(self.tables, self.metadata)
        self.chunks = ChunkSearch(self.tables, self.lance)
        self.runs = Runs(self.tables)
        self.oauth_state = OAuthState(self.tables)  # THOTH_AUTH=oauth: used codes, refresh-token families
        self.calibration = Calibration(self.tables, self.metadata)
        self.reembedding = Reembedding(self.tables, self.metadata)  # `python -m ingest --reembed`'s staging
        self.figures = Figures(settings)  # figure pictures beside the tables
        self.readable: Collections = EVERY_COLLECTION
        self._format_current = False  # the index is at INDEX_FORMAT (migrate)

    def reading(self, collections: Collections) -> Store:
        """This store as a caller who may read only `collections` sees it (tables, copies and caches shared)."""
        if collections == self.readable:
            return self
        view = copy.copy(self)
        view.readable = collections
        return view

    def _where(self, match: Match | None) -> str | None:
        """`match`'s where clause within the readable collections."""
        return filters.both(filters.where(match or {}), filters.within(self.readable))

    # -- tables ---------------------------------------------------------------------------

    def table(self, name: str) -> Any:
        return self.tables.table(name)

    def exists(self) -> bool:
        """Whether the database is there; asking never creates a local folder (connecting would)."""
        return "://" in self.uri or Path(self.uri).is_dir()

    def ensure_tables(self, dim: int) -> None:
        self.tables.ensure(dim)
        self.migrate()

    def migrate(self) -> None:
        """Bring an index an older Thoth wrote to this code's format, once a process (thoth.store.migration).
        Only ingest's writes call it (tables ensured, a source or a run recorded): reads never do, nor `put`."""
        if not self._format_current and self.exists():  # asking never creates a local folder
            self._format_current = migrate(self.tables, self.metadata, self.indexes)

    def row_counts(self, names: list[str] | None = None) -> dict[str, int]:
        """Rows per table (`names`, or every table: listing them is a bucket listing on GCS)."""
        return {name: self.table(name).count_rows() for name in (names or self.tables.names())}

    def versions(self, names: list[str] | None = None) -> dict[str, int]:
        return {name: self.table(name).version for name in (names or self.tables.names())}

    # -- settings, tree pointers (the rest of metadata: `store.metadata`) -----------------------

    def saved_state(self, key: str) -> dict:
        """The JSON object saved under `key` (what a web or git source's last run saw); {} when none or damaged."""
        try:
            state = json.loads(self.metadata.get(key) or "{}")
        except (StoreError, ValueError):  # no settings table yet, or a damaged value: nothing known
            return {}
        return state if isinstance(state, dict) else {}

    def delete_settings(self, keys: list[str]) -> None:
        """Forget settings (what a removed source's runs remembered)."""
        if keys and SETTINGS in self.tables.names():
            self.tables.delete(SETTINGS, filters.is_in("key", keys))

    def tree_pointer(self, source_id: str) -> TreePointer | None:
        return self.metadata.tree_pointer(source_id) if source_id in self.readable else None

    # -- records ------------------------------------------------------------------
    # Every read outside this package goes through these: a record type names the table, a Match
    # (thoth.records) the rows, `fields` the columns (the record's others stay at their defaults).

    def _query(self, record: type, columns: list[str], match: Match | None) -> Any:
        """A query of `columns` of `record`'s table, the rows that `match` within the readable collections."""
        query = self.table(TABLE_OF[record]).search().select(columns)
        where = self._where(match)
        return query.where(where) if where else query

    def find(
        self, record: type[R], match: Match | None = None, *, fields: list[str] | None = None, limit: int | None = None
    ) -> list[R]:
        """The records of `record`'s table that `match`, in storage order."""
        columns = present(record, self.table(TABLE_OF[record]).schema.names, fields)
        return [from_row(record, row) for row in self._query(record, columns, match).limit(limit).to_list()]

    def first(self, record: type[R], match: Match, *, fields: list[str] | None = None) -> R | None:
        found = self.find(record, match, fields=fields, limit=1)
        return found[0] if found else None

    def count_of(self, record: type, match: Match | None = None) -> int:
        return self.table(TABLE_OF[record]).count_rows(self._where(match))

    def scan_of(self, record: type, fields: list[str], match: Match | None = None) -> Iterator[pa.RecordBatch]:
        """`fields` of `record`'s table in Arrow record batches (never the whole table in memory)."""
        return self._query(record, fields, match).limit(None).to_batches(batch_size=8192)

    def vectors(self, record: type, ids: list[str]) -> dict[str, Any]:
        """The embedding of each of `ids` (chunk or tree-node ids) that exists."""
        if not ids:
            return {}
        key = field_names(record)[0]
        rows = self._query(record, [key, VECTOR_COLUMN], {key: ids}).limit(None).to_list()
        return {row[key]: row[VECTOR_COLUMN] for row in rows}

    def has(self, record: type) -> bool:
        """Whether `record`'s table exists yet (an index being built may lack some)."""
        return TABLE_OF[record] in self.tables.names()

    def insert(self, record: type, rows: list[dict] | pa.Table) -> None:
        """Add rows (dicts, or an Arrow table of the table's columns) to `record`'s table."""
        self.tables.add(TABLE_OF[record], rows)

    def remove(self, record: type, match: Match) -> None:
        """Delete the rows of `record`'s table that `match` (never every row: a match is required)."""
        where = filters.where(match)
        if not where:
            raise ValueError("Store.remove needs a match: it never empties a table")
        if self.tables.table(TABLE_OF[record]).count_rows(where):  # a delete of nothing still commits a version
            self.tables.delete(TABLE_OF[record], where)

    def change(self, record: type, match: Match, values: dict[str, object]) -> None:
        """Set `values` on the rows of `record`'s table that `match`."""
        self.tables.update(TABLE_OF[record], filters.where(match) or "true", values)

    def put(self, record: Any) -> None:
        """Add one record (a session) to its table; never migrates (a reader's request writes sessions)."""
        self.tables.add(TABLE_OF[type(record)], [to_row(record)])

    def replace_documents(self, rows: list[dict]) -> None:
        """Add documents rows, each replacing the row of its (source, key) in the same commit."""
        if rows:
            self.tables.merge(DOCUMENTS, ["source_id", "key"], rows, "documents")

    def swap_staged(self, source_id: str, doc_ids: set[str], suffix: str) -> None:
        """Swap the partitions and chunks of `doc_ids` with those staged under each doc_id + `suffix` (a
        re-parse's), one update per table (chunks last: they are what searches find), so a reader finds each
        document's rows old or new, whole, never neither; its old rows are then the ones under the suffix."""
        if not doc_ids:
            return
        ids = sorted(doc_ids | {doc_id + suffix for doc_id in doc_ids})
        # the suffix added, and dropped where that makes it twice (Lance refuses a CASE as an update's value)
        toggled = f"replace(concat(doc_id, {filters.quote(suffix)}), {filters.quote(suffix * 2)}, '')"
        where = f"{filters.eq('source_id', source_id)} AND {filters.is_in('doc_id', ids)}"
        for table in (PARTITIONS, CHUNKS):
            self.tables.update(table, where, values_sql={"doc_id": toggled})

    def upsert_source(self, row: dict) -> None:
        self.migrate()
        self.tables.merge(SOURCES, "source_id", [row], "sources")

    def repoint_chunks(self, source_id: str, doc_id: str, key: str, ref_base: str) -> None:
        """Point a document's chunks at `key`, their source_ref at `ref_base` (each keeps its #page=N)."""
        page = "CASE WHEN page_start IS NULL THEN '' ELSE concat('#page=', CAST(page_start AS VARCHAR)) END"
        self.tables.update(
            CHUNKS,
            f"{filters.eq('source_id', source_id)} AND {filters.eq('doc_id', doc_id)}",
            values_sql={"key": filters.quote(key), "source_ref": f"concat({filters.quote(ref_base)}, {page})"},
        )

    # -- the ingest history ----------------------------------------------------------------------

    def record_run(self, run: IngestRun, keep: int, only_into_an_index: bool = False) -> None:
        """Add one run to the history, keeping its source's newest `keep` (thoth.store.runs)."""
        self.migrate()
        self.runs.record(run, keep, only_into_an_index)

    def recent_runs(self, source_id: str | None = None, limit: int | None = None) -> list[IngestRun]:
        """The recorded runs, newest first: of one source, or of all (of the readable collections)."""
        if self.readable.every:
            return self.runs.recent(source_id, limit)
        if source_id is not None and source_id not in self.readable:
            return []
        return [run for run in self.runs.recent(source_id, None) if run.source_id in self.readable][:limit]

    # -- search ----------------------------------------------------------------------------

    # A search's steps, in order (thoth.store.chunks; thoth.retrieval.search runs them): a reading within
    # the readable collections, its candidate lists, the kept hits read whole, the versions not served.

    def search_reading(self, match: Match | None = None, *, vector: bool) -> Reading:
        return self.chunks.reading(match, self.readable, vector)

    def keyword_candidates(
        self, reading: Reading, words: str, phrases: tuple[str, ...], depth: int
    ) -> Future[list[Hit]]:
        """BM25 over chunks, started: any of `words`, and every one of `phrases` (words in that order)."""
        return self.chunks.keyword(reading, words, phrases, depth)

    def vector_candidates(self, reading: Reading, vector: Any, depth: int) -> list[Hit]:
        return self.chunks.vector(reading, vector, depth)

    def completed(self, reading: Reading, hits: list[Hit]) -> list[Hit]:
        return self.chunks.completed(reading, hits)

    def unserved(self, reading: Reading, hits: list[Hit]) -> frozenset[Pair]:
        return self.chunks.unserved(reading, hits)

    def node_vector_search(self, vector: Any, limit: int, match: Match) -> list[TreeNode]:
        """The tree nodes nearest `vector` by cosine, each with its `similarity`."""
        query = self.table(TREE_NODES).search(vector, vector_column_name=VECTOR_COLUMN).metric("cosine")
        query = query.where(self._where(match), prefilter=True).select([*NODE_COLUMNS, "_distance"])
        rows = query.limit(limit).to_list()
        return [from_row(TreeNode, {**row, "similarity": 1.0 - float(row["_distance"])}) for row in rows]
