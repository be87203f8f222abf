"""The LanceDB store: connect (folder or gs://), read and write Thoth's tables.

Only this package knows table names, column names and LanceDB calls; the
ingest job and the retrieval functions go through `Store`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

import pyarrow as pa

from thoth._imports import LANCEDB_REST_CLIENT, deferred_packages
from thoth.config import Settings
from thoth.errors import ServerFault
from thoth.records import (
    Chunk,
    Document,
    Hit,
    Match,
    Partition,
    Session,
    Source,
    TreeNode,
    field_names,
    from_row,
    to_row,
)
from thoth.store import filters
from thoth.store.held import HeldCopy
from thoth.store.schema import (
    ALL_TABLES,
    CHUNKS,
    DOCUMENTS,
    META_EMBED_DIM,
    META_EMBED_MODEL,
    META_TREE_PREFIX,
    META_VECTOR_INDEX_ROWS,
    PARTITIONS,
    PRIMARY_KEYS,
    RANKING_COLUMNS,
    SESSIONS,
    SETTINGS,
    SOURCES,
    TREE_NODES,
    is_primary_key,
    schema_for,
)

# The table each record is read from and written to.
TABLE_OF: dict[type, str] = {
    Source: SOURCES,
    Document: DOCUMENTS,
    Partition: PARTITIONS,
    Chunk: CHUNKS,
    TreeNode: TREE_NODES,
    Session: SESSIONS,
}
OPTIONAL_TABLES = (TREE_NODES, SESSIONS)  # written only once a tree or a session exists: absent means none
FTS_COLUMN = "search_text"
FTS_SECTION_COLUMN = "section"  # title and heading path: a field of its own when boosted (ensure_section_index)
COMMIT_ATTEMPTS = 8

log = logging.getLogger("thoth.store")
T = TypeVar("T")
R = TypeVar("R")


def _is_conflict(exc: Exception) -> bool:
    message = str(exc).lower()
    return "conflict" in message or "concurrent" in message or "retryable" in message


def retry_on_conflict(fn: Callable[[], T], what: str) -> T:
    """Run one write, retrying when another writer committed first (parallel ingest tasks).

    Lance retries compatible commits itself; what is left (e.g. two deletes of the same
    fragment) surfaces as a commit-conflict error, and the write is simply tried again.
    """
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == COMMIT_ATTEMPTS or not _is_conflict(exc):
                raise
            delay = min(2.0, 0.05 * 2**attempt) * (0.5 + random.random())
            log.info("commit conflict on %s (attempt %d), retrying in %.2fs: %s", what, attempt, delay, exc)
            time.sleep(delay)
    raise AssertionError("unreachable")


# Columns of a tree node for navigation and display (everything but the vector).
NODE_COLUMNS = [name for name in field_names(TreeNode) if name not in ("similarity", "chunk")]
VECTOR_COLUMN = "vector"
VECTOR_INDEX_NAME = "vector_idx"
# An index trained on n rows is trained again once the table holds this many times n: new rows are
# only folded into the existing partitions by optimize(), which slows search as partitions grow.
RETRAIN_GROWTH = 4
# New chunks stay in the indexes' unindexed tail until it holds this many rows; then the next write folds
# them in (Store.fold_in_due). Searches scan the tail: BM25 without the index costs ~0.1 ms a row.
FOLD_IN_ROWS = 256
MIN_TRAIN_ROWS = 256  # a PQ codebook has 256 centroids per sub-vector: fewer rows cannot train it
PARTITION_ROWS = 4096  # IVF partitions: one per this many rows
COUNT_SECONDS = 1.0  # how long Store trusts the chunk table's metadata it asked for (_chunk_count, _Recent)


class _Recent:
    """One fact about a table handle (its column names, its vector index's type) that a search needs,
    asked of lancedb again only when COUNT_SECONDS have passed or the handle changed: asking on every
    search is a trip through lancedb's runtime that takes the GIL from its worker threads."""

    def __init__(self, ask: Callable[[Any], Any]):
        self._ask = ask  # async: table -> the fact
        self._known: tuple[Any, float, Any] | None = None  # (table handle, when asked, the fact)

    async def get(self, table: Any) -> Any:
        now = time.monotonic()
        known = self._known
        if known is None or known[0] is not table or now - known[1] >= COUNT_SECONDS:
            known = self._known = (table, now, await self._ask(table))
        return known[2]


async def _names_of(table: Any) -> list[str]:
    return (await table.schema()).names


async def _vector_index_type(table: Any) -> str | None:
    """lancedb's name for the type of the table's vector index ("IvfRq"), or None without one."""
    return next((index.index_type for index in await table.list_indices() if VECTOR_COLUMN in index.columns), None)


def _lancedb() -> Any:
    """Import lancedb on first use (a server does it in its warm-up thread), without running the
    `__init__` of its REST-namespace client, which Thoth never calls (thoth/_imports.py)."""
    with _import_lock:  # a second thread waits here for the whole import, never sees it half done
        if "lancedb" not in sys.modules:
            os.environ.setdefault("LANCEDB_LOG", "error")  # Lance's Rust warnings (deprecations, "creating dataset")
            deferred_packages(LANCEDB_REST_CLIENT)
            import lancedb
        import lancedb

    return lancedb


_import_lock = threading.Lock()


class StoreError(ServerFault):
    """The index cannot be read or written; the message says why."""


def _lance_message(exc: Exception) -> str:
    # Lance's messages end in the Rust source path that raised them: of no use to an operator.
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return re.sub(r",\s*/\S+\.rs:\d+:\d+\s*$", "", first).strip() or type(exc).__name__


class IndexMissing(StoreError):
    """There is no index at the configured URI yet."""


class ModelMismatch(StoreError):
    """The index was built with another embedding model than the one loaded."""


class Store:
    """One LanceDB database (a folder or gs:// prefix) holding Thoth's tables."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.uri = settings.db_uri
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._warned_positions = False
        self._warned_sections: bool | None = None  # None: not checked yet
        self._readable: dict[str, int] = {}  # table -> the latest version read whole (check_readable)
        self._memory = HeldCopy("the chunk table's vectors", lambda t: _run(self._read_small(t)))  # _memory_vectors
        self._ranking = HeldCopy("the chunk table's ranking columns", lambda t: _run(self._read_ranking(t)))
        self._count: tuple[float, int] | None = None  # (when counted, the chunk table's rows): _chunk_count
        self._names = _Recent(_names_of)
        self._index_type = _Recent(_vector_index_type)

    # -- connection -------------------------------------------------------

    @property
    def db(self) -> Any:
        if self._db is None:
            with self._lock:
                if self._db is None:
                    interval = self.settings.read_consistency_seconds
                    for name, value in self.settings.storage_env().items():
                        os.environ.setdefault(name, value)  # read by Lance's Rust code, not by Thoth
                    try:
                        self._db = _lancedb().connect(
                            self.uri,
                            read_consistency_interval=timedelta(seconds=interval) if interval >= 0 else None,
                            storage_options=self.settings.storage_options() or None,
                        )
                    except Exception as exc:
                        raise self._unusable(exc, "cannot connect to") from exc
        return self._db

    def _unusable(self, exc: Exception, doing: str) -> StoreError:
        """A storage failure as one sentence: on gs://, why the bucket cannot be used and what to do."""
        if self.uri.startswith("gs://"):
            from thoth.gcs import bucket_problem

            problem = bucket_problem(self.settings, self.uri)
            if problem:
                return StoreError(problem)
        return StoreError(f"{doing} the index at {self.uri}: {_lance_message(exc)}")

    def table_names(self) -> list[str]:
        try:
            result = self.db.list_tables()
        except StoreError:
            raise
        except Exception as exc:  # Lance raises RuntimeError/OSError when the storage is not there
            raise self._unusable(exc, "cannot list the tables of") from exc
        names = getattr(result, "tables", result)
        return [n for n in names if n in ALL_TABLES]

    def table(self, name: str) -> Any:
        table = self._tables.get(name)  # one lookup: ensure_tables() may clear the cache from another thread
        if table is None:
            with self._lock:
                table = self._tables.get(name)
                if table is None:
                    try:
                        table = self._tables[name] = self.db.open_table(name)
                    except (ValueError, FileNotFoundError) as exc:
                        raise IndexMissing(
                            f"table {name!r} does not exist in {self.uri}; run `python -m ingest` first"
                        ) from exc
                    except StoreError:
                        raise
                    except Exception as exc:  # Lance raises RuntimeError/OSError for unreadable tables
                        raise self._unusable(exc, f"cannot open table {name!r} in") from exc
        return table

    def ensure_tables(self, dim: int) -> None:
        """Create any missing table (the chunk table with `dim`-wide vectors); add columns new to the schema.

        Several ingest tasks may call this at once: creating is `exist_ok`, and a lost race is retried.
        """
        existing = set(self.table_names())
        for name in ALL_TABLES:
            if name not in existing:
                try:
                    self.db.create_table(name, schema=schema_for(name, dim), exist_ok=True)
                except Exception:
                    if name not in self.table_names():  # not a lost race with another task: a real failure
                        raise
        self._tables.clear()
        for name in ALL_TABLES:
            self._add_missing_columns(name, schema_for(name, dim))
        for name, column in PRIMARY_KEYS.items():
            self._ensure_primary_key(name, column)

    def _add_missing_columns(self, name: str, wanted: pa.Schema) -> None:
        # An index written before a column existed gets it, all nulls (no re-ingest needed).
        table = self.table(name)
        missing = [f for f in wanted if f.name not in table.schema.names]
        if missing:
            retry_on_conflict(lambda: table.add_columns(missing), f"add columns to {name}")

    def _ensure_primary_key(self, name: str, column: str) -> None:
        # A table written before its key was the row identity (and maybe holding a key twice, from
        # parallel tasks of that time) is rewritten once, one row per key, under the keyed schema.
        table = self.table(name)
        if is_primary_key(table.schema.field(column)):
            return
        rows = {row[column]: row for row in table.to_arrow().to_pylist() if row[column] is not None}
        wanted = schema_for(name, 0)
        data = pa.Table.from_pylist(list(rows.values()), schema=wanted)
        retry_on_conflict(lambda: self.db.create_table(name, data=data, schema=wanted, mode="overwrite"), name)
        self._tables.pop(name, None)

    def ensure_table(self, name: str, dim: int = 0) -> None:
        """Create one table if it is missing (e.g. `sessions` on an index built before it existed)."""
        if name not in self.table_names():
            self.db.create_table(name, schema=schema_for(name, dim), exist_ok=True)
            self._tables.pop(name, None)

    def row_counts(self, names: list[str] | None = None) -> dict[str, int]:
        """Rows per table (`names`, or every table: listing them is a bucket listing on GCS)."""
        return {name: self.table(name).count_rows() for name in (names or self.table_names())}

    def versions(self, names: list[str] | None = None) -> dict[str, int]:
        return {name: self.table(name).version for name in (names or self.table_names())}

    def check_readable(self, versions: dict[str, int]) -> None:
        """Read every data file of each table's latest version (one column, so every fragment is opened);
        raise StoreError naming the table when one is missing or truncated. A version read once is not
        read again, so a health probe costs this only after a write."""
        for name, version in versions.items():
            if self._readable.get(name) == version:
                continue
            table = self.table(name)
            column = table.schema.names[0]
            try:
                table.count_rows(f"{column} IS NOT NULL OR {column} IS NULL")
            except Exception as exc:
                raise StoreError(f"table {name!r} (version {version}) cannot be read: {exc}") from exc
            self._readable[name] = version

    # -- settings (small key/value state) and the model check -------------------------

    def get_setting(self, key: str) -> str | None:
        rows = self.table(SETTINGS).search().where(filters.eq("key", key)).limit(1).to_list()
        return rows[0]["value"] if rows else None

    def set_setting(self, key: str, value: str) -> None:
        self.set_settings({key: value})

    def set_settings(self, values: dict[str, str]) -> None:
        """Write several keys in one commit (readers never see half of them).

        Safe under concurrent writers: `key` is the table's primary key, so a merge_insert that lost
        the race to insert a key is retried by Lance as an update (no key is ever stored twice).
        """
        changed = {k: v for k, v in values.items() if self.get_setting(k) != v}
        if not changed:
            return
        table = self.table(SETTINGS)
        rows = [{"key": k, "value": v} for k, v in changed.items()]
        data = pa.Table.from_pylist(rows, schema=schema_for(SETTINGS, 0))
        retry_on_conflict(
            lambda: table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(data),
            f"settings {', '.join(changed)}",
        )

    def index_model(self) -> tuple[str | None, int | None]:
        if SETTINGS not in self.table_names():
            return None, None
        model, dim = self.get_setting(META_EMBED_MODEL), self.get_setting(META_EMBED_DIM)
        return model, int(dim) if dim else None

    def record_model(self, model_name: str, dim: int) -> None:
        self.check_model(model_name, dim)
        self.set_settings({META_EMBED_MODEL: model_name, META_EMBED_DIM: str(dim)})

    def check_model(self, model_name: str, dim: int) -> None:
        """Raise ModelMismatch unless the index was built with this model (or is still empty)."""
        built_with, built_dim = self.index_model()
        if built_with is not None and (built_with != model_name or built_dim != dim):
            raise ModelMismatch(
                f"the index at {self.uri} was built with embedding model {built_with!r} ({built_dim} dimensions) "
                f"but this process loads {model_name!r} ({dim} dimensions); set THOTH_EMBED_MODEL={built_with} "
                f"or re-ingest into a new THOTH_DB_URI"
            )

    # -- records ------------------------------------------------------------------
    # Every read outside this package goes through these: a record type names the table, a Match
    # (thoth.records) the rows, `fields` the columns (the record's others stay at their defaults).

    def _columns(self, record: type, fields: list[str] | None) -> list[str]:
        return _present(record, fields, self.table(TABLE_OF[record]).schema.names)

    def _absent(self, record: type) -> bool:
        return TABLE_OF[record] in OPTIONAL_TABLES and TABLE_OF[record] not in self.table_names()

    def find(
        self, record: type[R], match: Match | None = None, *, fields: list[str] | None = None, limit: int | None = None
    ) -> list[R]:
        """The records of `record`'s table that `match`, in storage order."""
        if self._absent(record):
            return []
        query = self.table(TABLE_OF[record]).search().select(self._columns(record, fields))
        where = filters.where(match or {})
        if where:
            query = query.where(where)
        return [from_row(record, row) for row in query.limit(limit).to_list()]

    def first(self, record: type[R], match: Match, *, fields: list[str] | None = None) -> R | None:
        found = self.find(record, match, fields=fields, limit=1)
        return found[0] if found else None

    def count_of(self, record: type, match: Match | None = None) -> int:
        if self._absent(record):
            return 0
        return self.table(TABLE_OF[record]).count_rows(filters.where(match or {}))

    def scan_of(
        self, record: type, fields: list[str], match: Match | None = None, batch_size: int = 8192
    ) -> Iterator[pa.RecordBatch]:
        """`fields` of `record`'s table in Arrow record batches (for aggregates over many rows)."""
        if self._absent(record):
            return iter(())
        return self.scan(TABLE_OF[record], fields, filters.where(match or {}), batch_size)

    def vectors(self, record: type, ids: list[str]) -> dict[str, Any]:
        """The embedding of each of `ids` (chunk or tree-node ids) that exists."""
        if not ids or self._absent(record):
            return {}
        key = field_names(record)[0]
        rows = self.table(TABLE_OF[record]).search().where(filters.is_in(key, ids)).select([key, VECTOR_COLUMN])
        return {row[key]: row[VECTOR_COLUMN] for row in rows.limit(None).to_list()}

    def has(self, record: type) -> bool:
        """Whether `record`'s table exists yet (an index being built may lack some)."""
        return TABLE_OF[record] in self.table_names()

    def fields_of(self, record: type) -> set[str]:
        """The record's fields that its table has (a table written by an older version lacks newer ones)."""
        return set(self.table(TABLE_OF[record]).schema.names) & set(field_names(record))

    def insert(self, record: type, rows: list[dict] | pa.Table) -> None:
        """Add rows (dicts, or an Arrow table of the table's columns) to `record`'s table."""
        self.add(TABLE_OF[record], rows)

    def remove(self, record: type, match: Match) -> None:
        """Delete the rows of `record`'s table that `match` (never every row: a match is required)."""
        where = filters.where(match)
        if not where:
            raise ValueError("Store.remove needs a match: it never empties a table")
        self.delete(TABLE_OF[record], where)

    def change(self, record: type, match: Match, values: dict[str, object]) -> None:
        """Set `values` on the rows of `record`'s table that `match`."""
        self.update(TABLE_OF[record], filters.where(match) or "true", values)

    def put(self, record: Any) -> None:
        """Add one record (a session) to its table."""
        table = TABLE_OF[type(record)]
        self.ensure_table(table)
        self._add_missing_columns(table, schema_for(table, 0))  # a column newer than the table
        self.add(table, [to_row(record)])

    # -- sources and documents ----------------------------------------------

    def upsert_source(self, row: dict) -> None:
        data = pa.Table.from_pylist([row], schema=self.table(SOURCES).schema)
        retry_on_conflict(
            lambda: (
                self.table(SOURCES)
                .merge_insert("source_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            ),
            "sources",
        )

    # -- writes ---------------------------------------------------------------

    def add(self, table: str, rows: list[dict] | pa.Table) -> None:
        if isinstance(rows, list):
            if not rows:
                return
            rows = pa.Table.from_pylist(rows, schema=self.table(table).schema)
        retry_on_conflict(lambda: self.table(table).add(rows), f"add to {table}")

    def delete(self, table: str, where: str) -> None:
        retry_on_conflict(lambda: self.table(table).delete(where), f"delete from {table}")

    def update(self, table: str, where: str, values: dict | None = None, values_sql: dict | None = None) -> None:
        """Set columns of matching rows: `values` literal, `values_sql` SQL expressions built by this package."""
        retry_on_conflict(
            lambda: self.table(table).update(where=where, values=values, values_sql=values_sql),
            f"update {table}",
        )

    def repoint_chunks(self, source_id: str, doc_id: str, key: str, ref_base: str) -> None:
        """Point a document's chunks at `key`, their source_ref at `ref_base` (each keeps its #page=N)."""
        page = "CASE WHEN page_start IS NULL THEN '' ELSE concat('#page=', CAST(page_start AS VARCHAR)) END"
        self.update(
            CHUNKS,
            f"{filters.eq('source_id', source_id)} AND {filters.eq('doc_id', doc_id)}",
            values_sql={"key": filters.quote(key), "source_ref": f"concat({filters.quote(ref_base)}, {page})"},
        )

    def _fts_index(self, column: str = FTS_COLUMN) -> Any:
        return next((idx for idx in self.table(CHUNKS).list_indices() if idx.columns == [column]), None)

    def fts_has_positions(self) -> bool | None:
        """Whether the BM25 index stores word positions (phrase queries need them); None: no index yet."""
        idx = self._fts_index()
        return None if idx is None else bool((getattr(idx, "index_details", None) or {}).get("with_position"))

    def fts_has_sections(self) -> bool:
        """Whether titles and heading paths have their own BM25 index (the boosted field)."""
        return self._fts_index(FTS_SECTION_COLUMN) is not None

    def ensure_fts_index(self, fold_in: bool = True) -> None:
        """Build the BM25 index on chunks (English stemming and stop words, word positions for phrases),
        or fold new rows into it (`fold_in`). An index built before positions were stored is rebuilt
        once, with a log line: that is the migration of tables written by older versions."""
        table = self.table(CHUNKS)
        positions = self.fts_has_positions()
        if positions:
            if fold_in:
                retry_on_conflict(table.optimize, "optimize chunks")
            return
        if positions is False:
            log.warning("migrating the BM25 index of chunks: rebuilding it with word positions (phrase queries)")
        self._compact_first_build(table)
        started = time.perf_counter()
        retry_on_conflict(lambda: self._create_fts(FTS_COLUMN, with_position=True), "create the BM25 index")
        if positions is False:
            log.warning("BM25 index migrated (word positions) in %.1f s", time.perf_counter() - started)

    def _compact_first_build(self, table: Any) -> None:
        # A table's first build holds one data file per write batch, and searches read their hits and
        # the refine step's candidates from each: compacted once before its indexes are built, a 1M-chunk
        # table answered vector searches in x0.74 and BM25 in x0.81 the CPU (docs/benchmarks.md,
        # "Latency"). Later runs compact as they fold rows in (optimize). Small tables are left as they are.
        if table.count_rows() >= max(1, self.settings.vector_index_min_rows):
            started = time.perf_counter()
            retry_on_conflict(table.optimize, "compact chunks")
            log.info("compacted chunks before indexing in %.1f s", time.perf_counter() - started)

    def fold_in_due(self) -> bool:
        """Whether the chunks outside the BM25 index are enough to fold them into the indexes now.

        optimize() compacts the table's files and merges the indexes: work in proportion to the whole
        table (0.7 s at 3,000 chunks, 2.4 s at 12,000 on 2 busy cores). One document written
        (ingest_document, a bucket event) stays in the unindexed tail, which vector and keyword
        searches still scan (phrases included); the write that brings the tail to FOLD_IN_ROWS folds
        it in. So a write costs the table work once per FOLD_IN_ROWS new chunks, not every time.
        """
        idx = self._fts_index()
        stats = self.table(CHUNKS).index_stats(idx.name) if idx is not None else None
        return stats is None or stats.num_unindexed_rows >= FOLD_IN_ROWS

    def ensure_section_index(self) -> None:
        """The BM25 index of the title/heading field that `section_boost` weighs. Ingest does not build
        it: measured on the dev splits it does not help, since the text field already holds the title
        and heading path (docs/benchmarks.md); bench.quality's ablation builds it to show that."""
        if not self.fts_has_sections():
            retry_on_conflict(lambda: self._create_fts(FTS_SECTION_COLUMN, False), "create the heading index")

    def _create_fts(self, column: str, with_position: bool) -> None:
        self.table(CHUNKS).create_fts_index(
            column,
            use_tantivy=False,  # the native index: it builds on object storage too
            replace=True,
            language="English",
            stem=True,
            remove_stop_words=True,
            ascii_folding=True,
            with_position=with_position,  # phrase queries ("time off") need positions
        )

    # -- RAPTOR trees ----------------------------------------------------------------------

    def tree_pointer(self, source_id: str) -> dict | None:
        """The current tree of a source: {"version", "fingerprint", ...}, or None if none was built."""
        if SETTINGS not in self.table_names():
            return None
        raw = self.get_setting(META_TREE_PREFIX + source_id)
        return json.loads(raw) if raw else None

    def set_tree_pointer(self, source_id: str, pointer: dict) -> None:
        """Rewrite a source's tree pointer (e.g. mark its tree stale); `replace_tree` writes a new one."""
        self.set_setting(META_TREE_PREFIX + source_id, json.dumps(pointer, sort_keys=True))

    def replace_tree(self, source_id: str, version: str, rows: list[dict], pointer: dict) -> None:
        """Write a source's new tree so readers never see half of it.

        Rows go in under their own `tree_version` (after removing any a killed run left with that
        version), then the source's pointer switches to it in one write, then older versions go.
        """
        scope = filters.eq("source_id", source_id)
        self.delete(TREE_NODES, f"{scope} AND {filters.eq('tree_version', version)}")
        for start in range(0, len(rows), 4096):
            self.add(TREE_NODES, rows[start : start + 4096])
        self.set_setting(META_TREE_PREFIX + source_id, json.dumps({**pointer, "version": version}, sort_keys=True))
        self.delete(TREE_NODES, f"{scope} AND NOT {filters.eq('tree_version', version)}")

    def drop_tree(self, source_id: str) -> None:
        if TREE_NODES in self.table_names():
            self.delete(TREE_NODES, filters.eq("source_id", source_id))
        if SETTINGS in self.table_names():
            self.delete(SETTINGS, filters.eq("key", META_TREE_PREFIX + source_id))

    def node_vector_search(self, vector: Any, limit: int, match: Match) -> list[TreeNode]:
        """The tree nodes nearest `vector` by cosine, each with its `similarity`."""
        if TREE_NODES not in self.table_names():
            return []
        query = self.table(TREE_NODES).search(vector, vector_column_name="vector").metric("cosine")
        query = query.where(filters.where(match), prefilter=True).select([*NODE_COLUMNS, "_distance"])
        rows = query.limit(limit).to_list()
        return [from_row(TreeNode, {**row, "similarity": 1.0 - float(row["_distance"])}) for row in rows]

    # -- the vector index ----------------------------------------------------------------------

    def vector_index(self) -> dict | None:
        """The ANN index on chunk vectors: {"name", "type", "indexed_rows", "unindexed_rows", "sub_vectors",
        "outdated"}, or None. `sub_vectors`: IVF_PQ's codes per vector (None for another index type);
        `outdated`: an IVF_PQ index of another code layout than `pq_sub_vectors` gives (an older build)."""
        table = self.table(CHUNKS)
        for idx in table.list_indices():
            if VECTOR_COLUMN in idx.columns:
                stats = table.index_stats(idx.name)
                compression = (getattr(idx, "index_details", None) or {}).get("compression") or {}
                sub_vectors = compression.get("num_sub_vectors")
                return {
                    "name": idx.name,
                    "type": str(idx.index_type),
                    "indexed_rows": int(stats.num_indexed_rows) if stats else 0,
                    "unindexed_rows": int(stats.num_unindexed_rows) if stats else 0,
                    "sub_vectors": sub_vectors,
                    "outdated": sub_vectors not in (None, pq_sub_vectors(self._dim())),
                }
        return None

    def ensure_vector_index(
        self, min_rows: int | None = None, index_type: str | None = None, fold_in: bool = True
    ) -> dict | None:
        """Build the ANN index on chunk vectors once the table holds `min_rows` rows (0: never).

        Returns what was done ({"action": "built" | "retrained" | "updated", "rows", "seconds", ...}) or
        None when the table is below the threshold. An existing index takes new rows in through
        optimize() (no retraining; not with `fold_in` false) until the table has grown RETRAIN_GROWTH-fold
        since training. An outdated index (`vector_index`), or one of another type than `index_type`
        (THOTH_VECTOR_INDEX_TYPE changed), is trained again.
        """
        min_rows = self.settings.vector_index_min_rows if min_rows is None else min_rows
        index_type = (index_type or self.settings.vector_index_type).upper()
        table = self.table(CHUNKS)
        rows = table.count_rows()
        existing = self.vector_index()
        trained = int(self.get_setting(META_VECTOR_INDEX_ROWS) or 0)
        if existing is None and (min_rows <= 0 or rows < max(min_rows, MIN_TRAIN_ROWS)):
            return None
        started = time.perf_counter()
        current = existing is not None and not existing["outdated"] and is_index_type(existing["type"], index_type)
        if current and rows < RETRAIN_GROWTH * max(trained, 1):
            if not fold_in:
                return None
            retry_on_conflict(table.optimize, "optimize chunks")  # folds new rows into the vector and FTS indexes
            seconds = time.perf_counter() - started
            return {"action": "updated", "rows": rows, "seconds": seconds, **(self.vector_index() or existing)}
        config = _vector_index_config(index_type, rows, self._dim())
        retry_on_conflict(lambda: table.create_index(VECTOR_COLUMN, config=config, replace=True), "build the ANN index")
        self.set_setting(META_VECTOR_INDEX_ROWS, str(rows))
        action = "built" if existing is None else "retrained"
        seconds = time.perf_counter() - started
        log.info("vector index %s: %s over %d rows in %.1f s", action, index_type, rows, seconds)
        return {"action": action, "rows": rows, "seconds": seconds, **(self.vector_index() or {})}

    def _dim(self) -> int:
        return int(self.table(CHUNKS).schema.field(VECTOR_COLUMN).type.list_size)

    # -- reads for retrieval ---------------------------------------------------

    def _chunks_async(self) -> Any:
        return self.table(CHUNKS)._table  # the AsyncTable inside lancedb's LanceTable (lancedb pinned <0.41)

    def vector_search(
        self, vector: Any, limit: int, match: Match | None = None, exact: bool = False, fields: list[str] | None = None
    ) -> list[Hit]:
        """Nearest chunks by cosine. With an ANN index, `exact` bypasses it (brute force, for recall checks).
        `fields`: the chunk fields to fetch (default all the table has). A table of at most
        `memory_search_rows` chunks is searched in memory when no filter applies (thoth.store.memory)."""
        where = filters.where(match or {})
        table = self._chunks_async()
        memory = None if where else self._memory_vectors(table)
        if memory is not None:
            return memory.search(vector, limit, _present(Chunk, fields, memory.rows.column_names))
        held = self._ranking_columns(table, fields)
        return _run(self._vector_hits(table, vector, limit, where, exact, fields, held))

    def warm_copies(self, wait: bool = True) -> None:
        """Read the chunk table's copies that searches use (`_memory_vectors` of a small table,
        `_ranking_columns` of a large one) now, at start-up, so that the first searches find them held.
        A small table's vectors are waited for; a large table's ranking columns only with `wait`: the
        server starts reading them and answers meanwhile (over GCS they take seconds at 1M chunks)."""
        table = self._chunks_async()
        self._memory_vectors(table, wait=True)
        if self.settings.ranking_copy_rows > 0 and self.reads_late():
            self._ranking.get(table, _run(table.version()), wait=wait)

    def _memory_vectors(self, table: Any, wait: bool = False) -> Any:
        """The chunk table's current version in memory (MemoryVectors), or None: when it holds more than
        `memory_search_rows` chunks or has an ANN index, and while a new version is being read.

        The first version is read before the first search (warm-up does it at start); a newer one (an
        ingest's write) beside the searches, LanceDB answering meanwhile (thoth.store.held)."""
        if self.settings.memory_search_rows <= 0 or self._chunk_count() > self.settings.memory_search_rows:
            return None  # a large table, known without asking lancedb for its version on every search
        return self._memory.get(table, _run(table.version()), wait=wait or not self._memory.holds(table))

    def _ranking_columns(self, table: Any, fields: list[str] | None) -> tuple[int, Any] | None:
        """(version, RankingColumns) when a large table's search (`reads_late`) asks only for columns the
        copy holds and a copy is held; None otherwise (the search reads its columns). The held copy is
        taken as it is: `_search_rows` checks its version after the search, where asking costs no trip
        to lancedb's loop, and starts reading a new one (no search waits for it)."""
        if fields is None or self.settings.ranking_copy_rows <= 0 or not set(fields) <= set(RANKING_COLUMNS):
            return None
        if not self.reads_late():
            return None
        held = self._ranking.current(table)
        if held is not None and held[1] is not None:
            return held
        version = _run(table.version())  # none held yet, or declined: read (again) for this version
        copy = self._ranking.get(table, version)
        return None if copy is None else (version, copy)

    async def _read_small(self, table: Any) -> Any:
        from thoth.store.memory import MemoryVectors  # numpy: not needed before the first search

        if await table.count_rows() > self.settings.memory_search_rows:
            return None
        if any(VECTOR_COLUMN in index.columns for index in await table.list_indices()):
            return None  # an ANN index answers as it was built to (a table past THOTH_VECTOR_INDEX_MIN_ROWS)
        columns = [*_present(Chunk, None, await self._column_names(table)), VECTOR_COLUMN]
        return MemoryVectors.of(await table.query().select(columns).with_row_id().to_arrow(), VECTOR_COLUMN)

    async def _read_ranking(self, table: Any) -> Any:
        from thoth.store.memory import RankingColumns

        if await table.count_rows() > self.settings.ranking_copy_rows:
            return None
        names = await self._column_names(table)
        rows = await table.query().select([c for c in RANKING_COLUMNS if c in names]).with_row_id().to_arrow()
        return RankingColumns.of(rows)

    async def _search_rows(
        self, table: Any, search: Any, limit: int, score: str, fields: list[str] | None, held: Any
    ) -> list[dict]:
        """The first `limit` rows a `search` (a lancedb query) finds: the chunk `fields` (`_present`), its
        `score` column and the row id. With `held` (_ranking_columns), it reads
        only the row ids and scores and takes the fields from the copy, if the table is still at the
        copy's version when the search is done (a row id always names the same row of a version)."""
        columns = _present(Chunk, fields, await self._column_names(table))

        async def read(selected: list[str]) -> list[dict]:
            return (await _arrow(search.select(selected).with_row_id().limit(limit), limit)).to_pylist()

        if held is not None:
            version, copy = held
            scored = await read([score])
            found = copy.rows_of([row["_rowid"] for row in scored], columns)
            now = await table.version()
            if found is not None and now == version:
                return [{**row, **more} for row, more in zip(found, scored, strict=True)]
            if now != version:
                self._ranking.get(table, now)  # read the new version beside the searches
        return await read([*columns, score])

    async def _vector_hits(
        self,
        table: Any,
        vector: Any,
        limit: int,
        where: str | None,
        exact: bool,
        fields: list[str] | None,
        held: Any = None,
    ) -> list[Hit]:
        query = table.query().nearest_to(vector).column(VECTOR_COLUMN).distance_type("cosine")
        if exact:
            query = query.bypass_vector_index()
        else:  # ignored by a brute-force scan; used by the index when there is one
            factor = -(-refine_candidates(await self._refine_factor(table), limit) // limit)  # ceil
            query = query.nprobes(self.settings.vector_nprobes).refine_factor(factor)
            query = query.ef(factor * limit)  # IVF_HNSW_SQ's graph search: as wide (it must be >= limit x factor)
        if where:
            query = query.where(where)  # a prefilter: applied inside the index search, not to its results
        # _distance named: Lance warns on every search whose columns leave it out
        rows = await self._search_rows(table, query, limit, "_distance", fields, held)
        return [
            Hit(from_row(Chunk, row), similarity=1.0 - float(row["_distance"]), row_id=row["_rowid"]) for row in rows
        ]

    def keyword_search(self, words: str, limit: int, match: Match | None = None, **options: Any) -> list[Hit]:
        """`start_keyword_search`'s hits, waited for (`options`: its phrases, section_boost, fields)."""
        return self.start_keyword_search(words, limit, match, **options).result()

    def start_keyword_search(
        self,
        words: str,
        limit: int,
        match: Match | None = None,
        phrases: tuple[str, ...] = (),
        section_boost: float = 0.0,
        fields: list[str] | None = None,
    ) -> concurrent.futures.Future[list[Hit]]:
        """BM25 over chunks: any of `words`, and every one of `phrases` (words in that order). With a
        `section_boost`, words matched in the title and heading path also count that many times over.
        It runs on lancedb's event loop while the caller does something else (embeds the query);
        `.result()` waits for its hits.

        An index without word positions (built by an older version, not yet migrated by ingest)
        cannot answer phrases: they are searched as words then, and a warning says how to migrate.
        """
        if words and section_boost > 0:
            self._check_sections()  # reads the index list: here, not on lancedb's loop
        table = self._chunks_async()
        where = filters.where(match or {})
        held = self._ranking_columns(table, fields) if words else None
        return _start(self._keyword_hits(table, words, limit, where, phrases, section_boost, fields, held))

    async def _keyword_hits(
        self,
        table: Any,
        words: str,
        limit: int,
        where: str | None,
        phrases: tuple[str, ...],
        section_boost: float,
        fields: list[str] | None,
        held: Any = None,
    ) -> list[Hit]:
        from lancedb.query import BooleanQuery, MatchQuery, MultiMatchQuery, Occur, PhraseQuery

        query: Any = None
        if words and section_boost > 0:
            query = MultiMatchQuery(words, [FTS_COLUMN, FTS_SECTION_COLUMN], boosts=[1.0, section_boost])
        elif words:
            query = MatchQuery(words, FTS_COLUMN)
        if phrases:
            clauses = [(Occur.MUST, PhraseQuery(p, FTS_COLUMN)) for p in phrases]
            query = BooleanQuery(clauses + ([(Occur.SHOULD, query)] if query is not None else []))
        if query is None:
            return []
        try:
            return await self._fts(table, query, limit, where, fields, held)
        except ValueError as exc:
            if not phrases or "position" not in str(exc):
                raise
            if not self._warned_positions:
                self._warned_positions = True
                log.warning(
                    "the BM25 index has no word positions: phrases are searched as words until "
                    "`python -m ingest` migrates it"
                )
            words = " ".join([words, *phrases]).strip()
            return await self._keyword_hits(table, words, limit, where, (), section_boost, fields, held)

    def _check_sections(self) -> None:
        # Without its index the heading field is not boosted (Lance does not fail): say how to migrate, once.
        if self._warned_sections is None:
            self._warned_sections = not self.fts_has_sections()
            if self._warned_sections:
                log.warning("the BM25 index has no title/heading field (ensure_section_index): titles are not boosted")

    async def _fts(
        self, table: Any, query: Any, limit: int, where: str | None, fields: list[str] | None, held: Any = None
    ) -> list[Hit]:
        search = table.query().nearest_to_text(query)
        if where:
            search = search.where(where)  # a prefilter, as for vectors
        # _score named: Lance warns on every search whose columns leave it out
        rows = await self._search_rows(table, search, limit, "_score", fields, held)
        hits = [Hit(from_row(Chunk, row), bm25=float(row["_score"]), row_id=row["_rowid"]) for row in rows]
        hits.sort(key=lambda h: (-(h.bm25 or 0.0), h.chunk_id))  # equal scores: one order, not storage order
        return hits

    def reads_late(self) -> bool:
        """Whether searches should read ids first and `fill` the hits kept (a large table: see
        Settings.late_read_rows)."""
        return self._chunk_count() >= self.settings.late_read_rows

    def _chunk_count(self) -> int:
        """The chunk table's rows, counted at most once a second: the count is table metadata, but
        asking lancedb's event loop for it cost 0.24 ms of every search, and a table crossing a
        threshold (reads_late, the in-memory search) only changes how its searches read, not what they
        find."""
        now = time.monotonic()
        counted = self._count
        if counted is None or now - counted[0] >= COUNT_SECONDS:
            counted = self._count = (now, self.table(CHUNKS).count_rows())
        return counted[1]

    async def _column_names(self, table: Any) -> list[str]:
        """The chunk table's column names, asked of lancedb at most once a second. Columns are only ever
        added (migrations), never dropped, so names a second old are all there; a column added meanwhile
        is read from the next second on. Asking on every search cost three trips through lancedb's
        runtime a request."""
        return await self._names.get(table)

    async def _refine_factor(self, table: Any) -> int:
        """THOTH_VECTOR_REFINE_FACTOR, or when it is 0 the factor for the type of the table's vector
        index (REFINE_FACTORS), asked of lancedb at most once a second: a table keeps the index it has
        until ingest trains another one, and the settings may name another type than the table has."""
        if self.settings.vector_refine_factor > 0:
            return self.settings.vector_refine_factor
        return REFINE_FACTORS.get(await self._index_type.get(table), DEFAULT_REFINE_FACTOR)

    def fill(self, hits: list[Hit], fields: list[str] | None = None) -> list[Hit]:
        """`hits` with their chunks' `fields` (default all) read and set beside what the search read:
        on a large table searches rank on ids and a few fields, and only the hits a ranking keeps are
        read whole (at 1M chunks 7-17% less CPU than reading every candidate's text: docs/benchmarks.md,
        "Latency"). Rows are read by the row id the search saw; a hit whose row moved since (a write or
        compaction in between) is read by its chunk id, and one deleted since is left out. Order is kept."""
        if not hits:
            return hits
        return _run(self._filled(self._chunks_async(), hits, fields))

    async def _filled(self, table: Any, hits: list[Hit], fields: list[str] | None) -> list[Hit]:
        columns = _present(Chunk, fields, await self._column_names(table))
        rows: dict[str, dict] = {}
        row_ids = [h.row_id for h in hits if h.row_id is not None]
        if row_ids:
            try:
                taken = await _arrow(table.take_row_ids(row_ids).select(columns), len(row_ids))
            except (ValueError, OSError, RuntimeError) as exc:  # a row id of an older table version
                log.info("row ids moved since the search (%s): reading hits by chunk id", _lance_message(exc))
            else:
                rows = {row["chunk_id"]: row for row in taken.to_pylist()}
        missing = [h.chunk_id for h in hits if h.chunk_id not in rows]
        if missing:
            found = table.query().where(filters.where({"chunk_id": missing})).select(columns)
            rows |= {row["chunk_id"]: row for row in (await found.to_arrow()).to_pylist()}
        return [replace(h, chunk=_with_row(h.chunk, rows[h.chunk_id])) for h in hits if h.chunk_id in rows]

    def scan(
        self, table: str, columns: list[str], where: str | None = None, batch_size: int = 8192
    ) -> Iterator[pa.RecordBatch]:
        """Stream `columns` of a table in record batches (never the whole table in memory)."""
        query = self.table(table).search().select(columns)
        if where:
            query = query.where(where)
        yield from query.limit(None).to_batches(batch_size)


REFINE_BASE = 10  # the refine factor is set for a 10-hit search (recall@10 is what it is tuned on)
# The refine factor by the type of the vector index (lancedb's name for it), for recall@10 >= 0.97
# at 1M chunks and nprobes 8 (docs/benchmarks.md, "Tenth pass"): IVF_PQ's 96-byte codes need 200
# candidates (0.977-0.992); IVF_RQ's 4-bit codes 40 (0.984; 20 gave 0.966-0.979 over two trainings).
# 40 is what hybrid search's 40-deep vector list re-ranks anyway: it costs that search nothing more.
REFINE_FACTORS = {"IvfPq": 20, "IvfRq": 4}
DEFAULT_REFINE_FACTOR = 20  # IVF_HNSW_SQ: its graph search is as wide (`ef`)
# IVF_RQ's bits a dimension. Fewer need more candidates for the same recall: at 1M chunks, 100 of them gave
# recall@10 0.74 with 1 bit, 0.96 with 2, 0.98 with 3 and 0.99 with 4; 20 gave 0.73, 0.91 and 0.98 with 2-4.
RQ_BITS = 4


def refine_candidates(factor: int, limit: int) -> int:
    """ANN candidates re-ranked on the full vectors: `factor` x 10, whatever the limit (at least the limit).

    The top 10 after re-ranking depend only on how many candidates were re-ranked, so hybrid search's
    40-deep vector list keeps the recall@10 of a 10-hit search without re-ranking four times as many
    (docs/benchmarks.md, "Latency": 2,000 candidates were half of a search's CPU at 100k chunks)."""
    return max(factor * REFINE_BASE, limit)


def _present(record: type, fields: list[str] | None, names: list[str]) -> list[str]:
    """The columns to read for `record`: `fields` (default all its fields), its id always and first,
    those that a table with columns `names` has."""
    have = set(names)
    wanted = field_names(record) if fields is None else (field_names(record)[0], *fields)
    return [c for c in dict.fromkeys(wanted) if c in have]


_CHUNK_FIELDS = frozenset(field_names(Chunk))


def _with_row(chunk: Chunk, row: dict) -> Chunk:
    """`chunk` with the fields `row` holds taken from it (converted as `from_row` does)."""
    read = from_row(Chunk, row)
    return replace(chunk, **{name: getattr(read, name) for name in row if name in _CHUNK_FIELDS})


async def _arrow(query: Any, most: int) -> pa.Table:
    """`await query.to_arrow()` for a search's or a take's few rows (at most `most`), in fewer trips
    through lancedb's runtime, each of which takes the GIL on a tokio worker: without lancedb's check
    for blob columns (it asks for the table's schema before every query; Thoth's tables have none),
    and without waiting for the end of a stream that has given all the rows it can. Reads lancedb's
    inner query (lancedb pinned <0.41; tests/test_fill.py runs it)."""
    stream = await query._inner.execute()
    batches, rows = [], 0
    async for batch in stream:
        batches.append(batch)
        rows += batch.num_rows
        if rows >= most:
            break
    return pa.Table.from_batches(batches, schema=stream.schema)


def _start(coro: Any) -> concurrent.futures.Future:
    """Run a coroutine of lancedb calls on lancedb's own event loop; its future."""
    from lancedb.background_loop import LOOP

    return asyncio.run_coroutine_threadsafe(coro, LOOP.loop)


def _run(coro: Any) -> Any:
    from lancedb.background_loop import LOOP

    return LOOP.run(coro)


def pq_sub_vectors(dim: int) -> int:
    """IVF_PQ's codes per vector: one per 4 dimensions (96 bytes a 384-d vector) where the width allows.
    One per 8 lost recall on text whose query words are common (0.92-0.93 at 1M chunks, refine factor
    50); one per 4 held 0.99-1.00 with a refine factor of 20-30, at the same latency (docs/benchmarks.md,
    "Fourth pass")."""
    return next(dim // per for per in (4, 2, 1) if dim % per == 0)


def is_index_type(found: str, index_type: str) -> bool:
    """Whether lancedb's name for an index ("IvfPq") is the type Thoth's settings name ("IVF_PQ")."""
    return found.upper() == index_type.upper().replace("_", "")


def _vector_index_config(index_type: str, rows: int, dim: int) -> Any:
    """The index's configuration, sized by measurement (docs/benchmarks.md, "ANN index").

    IVF_PQ: one partition per ~4096 rows (training cost grows with partitions x sample, so sqrt(rows)
    partitions took minutes at 100k on 2 cores), `pq_sub_vectors` codes a vector; the refine step
    re-ranks candidates on the full vectors, which brings recall@10 above 0.95.
    IVF_RQ: the same partitions, each vector as RaBitQ codes of RQ_BITS a dimension (192 bytes a
    384-d vector): cheaper to scan than the PQ codes and close enough that few candidates are re-ranked.
    IVF_HNSW_SQ: a graph per partition over 8-bit scalar-quantised vectors.
    """
    from lancedb.index import HnswSq, IvfPq, IvfRq

    partitions = max(1, rows // PARTITION_ROWS)
    if index_type == "IVF_HNSW_SQ":
        return HnswSq(distance_type="cosine", num_partitions=partitions)
    if index_type == "IVF_PQ":
        return IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=pq_sub_vectors(dim))
    if index_type == "IVF_RQ":
        return IvfRq(distance_type="cosine", num_partitions=partitions, num_bits=RQ_BITS)
    raise StoreError(f"unknown vector index type {index_type!r}; use IVF_PQ, IVF_RQ or IVF_HNSW_SQ")


__all__ = ["Store", "StoreError", "IndexMissing", "ModelMismatch", "CHUNKS", "DOCUMENTS", "PARTITIONS"]
