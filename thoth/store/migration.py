"""The index format: the version of the tables' layout, recorded in the `settings` table
(`schema.INDEX_FORMAT`). An index written before formats were recorded, or by an older Thoth, is
brought to this format once, by the next ingest's first write, which logs the steps it took: tables it
lacks are created, columns new to a table are added (NULL in the rows already there), a table whose key
was not yet its row identity is rewritten one row per key, a BM25 index without word positions is
rebuilt, a tree pointer without its layer sizes gets them. Reading code therefore knows one layout only.
An index of a newer format than this code knows is refused (`Metadata.index_format`). Only ingest's
writes migrate (`Store.migrate`): a server's reads and a session's write never do."""

from __future__ import annotations

import dataclasses
import logging

import pyarrow as pa

from thoth.store import filters, schema
from thoth.store.indexes import VECTOR_COLUMN, Indexes
from thoth.store.metadata import Metadata, pointer_json, pointer_of
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
    steps = [_create_tables(tables, names)]
    steps += [_add_columns(tables, name) for name in (*schema.ALL_TABLES, schema.INGEST_RUNS) if name in names]
    steps += [_key_rows(tables, name, column) for name, column in schema.PRIMARY_KEYS.items() if name in names]
    if schema.CHUNKS in names and indexes.fts_has_positions() is False:
        retry_on_conflict(indexes.create_fts, "rebuild the BM25 index")
        steps.append("BM25 index rebuilt with word positions")
    steps += [_layer_sizes(tables, metadata)]
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


def _create_tables(tables: Tables, names: list[str]) -> str:
    # older versions created `tree_nodes` and `sessions` only once a tree or a session was written
    missing = [name for name in schema.ALL_TABLES if name not in names]
    if not missing or schema.CHUNKS not in names:
        return ""
    tables.ensure(tables.table(schema.CHUNKS).schema.field(VECTOR_COLUMN).type.list_size)
    return f"{', '.join(missing)} created"


def _layer_sizes(tables: Tables, metadata: Metadata) -> str:
    # pointers written before they recorded their layer sizes: counted from the tree's nodes
    prefix = schema.META_TREE_PREFIX
    fixed = {}
    for row in tables.table(schema.SETTINGS).to_arrow().to_pylist():  # a small table
        if not row["key"].startswith(prefix):
            continue
        pointer, source_id = pointer_of(row["value"]), row["key"][len(prefix) :]
        if pointer.layer_sizes or not pointer.nodes:
            continue
        scope = f"{filters.eq('source_id', source_id)} AND {filters.eq('tree_version', pointer.version)}"
        nodes = tables.table(schema.TREE_NODES).search().where(scope).select(["level"]).limit(None).to_list()
        levels = [node["level"] for node in nodes]
        chunks = tables.table(schema.CHUNKS).count_rows(filters.eq("source_id", source_id))
        sizes = (chunks, *(levels.count(n) for n in range(1, max(levels, default=0) + 1)))
        fixed[row["key"]] = pointer_json(dataclasses.replace(pointer, layer_sizes=sizes))
    if not fixed:
        return ""
    metadata.set(fixed)
    return f"tree pointers of {', '.join(key[len(prefix) :] for key in sorted(fixed))} given their layer sizes"
