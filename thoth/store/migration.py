"""The index format: the version of the tables' layout, recorded in the `settings` table
(`schema.INDEX_FORMAT`). An index written before formats were recorded, or by an older Thoth, is
brought to this format once, by the next ingest's first write, which logs the steps it took: columns
new to a table are added (NULL in the rows already there), a table whose key was not yet its row
identity is rewritten one row per key, a BM25 index without word positions is rebuilt. An index of a
newer format than this code knows is refused (`Metadata.index_format`)."""

from __future__ import annotations

import logging

import pyarrow as pa

from thoth.store import schema
from thoth.store.indexes import Indexes
from thoth.store.metadata import Metadata
from thoth.store.tables import Tables, retry_on_conflict

log = logging.getLogger("thoth.store")


def migrate(tables: Tables, metadata: Metadata, indexes: Indexes) -> bool:
    """Bring the index to INDEX_FORMAT; False when there is no index yet (nothing is recorded)."""
    names = tables.listed()
    if schema.SOURCES not in names:
        return False
    recorded = metadata.index_format()
    if recorded == schema.INDEX_FORMAT:
        return True
    steps = [_add_columns(tables, name) for name in (*schema.ALL_TABLES, schema.INGEST_RUNS) if name in names]
    steps += [_key_rows(tables, name, column) for name, column in schema.PRIMARY_KEYS.items() if name in names]
    if schema.CHUNKS in names and indexes.fts_has_positions() is False:
        retry_on_conflict(indexes.create_fts, "rebuild the BM25 index")
        steps.append("BM25 index rebuilt with word positions")
    metadata.set({schema.META_INDEX_FORMAT: str(schema.INDEX_FORMAT)})
    level = logging.WARNING if any(steps) else logging.INFO  # a new index: its format recorded
    was = f"format {recorded}" if recorded else "no recorded format"
    done = "; ".join(step for step in steps if step) or "nothing to change"
    log.log(level, "index at %s migrated from %s to format %d: %s", tables.uri, was, schema.INDEX_FORMAT, done)
    return True


def _add_columns(tables: Tables, name: str) -> str:
    table = tables.table(name)
    missing = [f for f in schema.schema_for(name, 0) if f.name not in table.schema.names]
    if missing:
        retry_on_conflict(lambda: table.add_columns(missing), f"add columns to {name}")
    return f"{name} gained {', '.join(f.name for f in missing)}" if missing else ""


def _key_rows(tables: Tables, name: str, column: str) -> str:
    # parallel tasks of that time may have written a key twice: the last row of each key is kept
    if schema.is_primary_key(tables.table(name).schema.field(column)):
        return ""
    rows = {row[column]: row for row in tables.table(name).to_arrow().to_pylist() if row[column] is not None}
    wanted = schema.schema_for(name, 0)
    data = pa.Table.from_pylist(list(rows.values()), schema=wanted)
    retry_on_conflict(lambda: tables.db.create_table(name, data=data, schema=wanted, mode="overwrite"), name)
    tables.forget(name)
    return f"{name} rewritten one row per {column}"
