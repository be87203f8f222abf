"""The `settings` and `sources` tables under concurrent writers, on a local folder (the GCS emulator
ignores generation preconditions, DESIGN.md): several processes recording the same keys (or the same
source) at the same moment leave each key once, and an index written before the key was the row
identity is repaired."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pyarrow as pa

from tests.conftest import make_settings
from thoth.store import Store
from thoth.store.schema import INDEX_FORMAT, META_INDEX_FORMAT, SETTINGS, SOURCES, is_primary_key, schema_for

WRITERS = 4


def _record(db: str, barrier: multiprocessing.synchronize.Barrier, index: int) -> None:
    store = Store(make_settings(Path(db)))
    store.table(SETTINGS)  # opened before the barrier, so every process writes at the same moment
    barrier.wait()
    store.metadata.set({"index.embed_model": "all-MiniLM-L6-v2", "index.embed_dim": "384", "writer": str(index)})


def _record_source(db: str, barrier: multiprocessing.synchronize.Barrier, index: int) -> None:
    store = Store(make_settings(Path(db)))
    store.table(SOURCES)
    barrier.wait()
    store.upsert_source({"source_id": "docs", "name": "docs", "kind": "handbook", "document_count": index})


def _at_once(db: Path, target: object) -> None:
    """WRITERS processes running `target(db, barrier, index)`, released together."""
    context = multiprocessing.get_context("spawn")  # lancedb's runtime does not survive fork
    barrier = context.Barrier(WRITERS)
    procs = [context.Process(target=target, args=(str(db), barrier, i)) for i in range(WRITERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * WRITERS


def test_concurrent_writers_leave_each_key_once(tmp_path: Path) -> None:
    store = Store(make_settings(tmp_path / "db"))
    store.ensure_tables(384)
    _at_once(tmp_path / "db", _record)
    rows = Store(make_settings(tmp_path / "db")).table(SETTINGS).to_arrow().to_pylist()
    keys = sorted(row["key"] for row in rows)
    assert keys == ["index.embed_dim", "index.embed_model", META_INDEX_FORMAT, "writer"], rows
    assert next(r["value"] for r in rows if r["key"] == "writer") in {str(i) for i in range(WRITERS)}


def test_parallel_tasks_record_their_source_once(tmp_path: Path) -> None:
    # every task of a parallel ingest records the source it ingests (upsert_source): one row, not one per task
    Store(make_settings(tmp_path / "db")).ensure_tables(384)
    _at_once(tmp_path / "db", _record_source)
    rows = Store(make_settings(tmp_path / "db")).table(SOURCES).to_arrow().to_pylist()
    assert [row["source_id"] for row in rows] == ["docs"], rows
    assert rows[0]["document_count"] in range(WRITERS)


def test_an_index_from_before_is_rewritten_one_row_per_key(tmp_path: Path) -> None:
    import lancedb

    old = pa.schema([("key", pa.string()), ("value", pa.string())])  # the schema before issue 21
    model, dim = {"key": "index.embed_model", "value": "all-MiniLM-L6-v2"}, {"key": "index.embed_dim", "value": "384"}
    rows = [model, model, model, dim]  # three tasks of that time each inserted the model
    lancedb.connect(str(tmp_path / "db")).create_table(SETTINGS, data=pa.Table.from_pylist(rows, schema=old))
    store = Store(make_settings(tmp_path / "db"))
    assert store.table(SETTINGS).count_rows() == 4
    store.ensure_tables(384)
    assert store.table(SETTINGS).count_rows() == 3  # a row per key, and the format it was migrated to
    assert store.metadata.get(META_INDEX_FORMAT) == str(INDEX_FORMAT)
    assert is_primary_key(store.table(SETTINGS).schema.field("key"))
    assert store.metadata.index_model() == ("all-MiniLM-L6-v2", 384)
    store.metadata.set({"index.embed_dim": "384"})  # unchanged: nothing written
    store.metadata.set({"research.default_collection": "papers"})
    assert store.table(SETTINGS).count_rows() == 4


def test_a_sources_table_from_before_is_rewritten_one_row_per_source(tmp_path: Path) -> None:
    import lancedb

    old = pa.schema([(f.name, f.type) for f in schema_for(SOURCES, 0)])  # the same columns, no key
    rows = [{"source_id": "docs", "name": "docs", "document_count": n} for n in (3, 3)]  # two tasks of that time
    lancedb.connect(str(tmp_path / "db")).create_table(SOURCES, data=pa.Table.from_pylist(rows, schema=old))
    store = Store(make_settings(tmp_path / "db"))
    store.ensure_tables(384)
    assert [row["source_id"] for row in store.table(SOURCES).to_arrow().to_pylist()] == ["docs"]
    assert is_primary_key(store.table(SOURCES).schema.field("source_id"))
