"""A re-embedding's staged vectors (`python -m ingest --reembed`) and the switch that makes them the index's
(docs/architecture.md, "reembed.py"). Staged in tables of their own, a commit per batch, so servers keep
answering from the old vectors and a killed run keeps what it staged; every step of the switch can run
again, so a run killed during it finishes it the next time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import numpy as np
import pyarrow as pa

from thoth.store import filters
from thoth.store.calibration import Floor
from thoth.store.metadata import Metadata
from thoth.store.schema import META_EMBED_FLOOR, META_EMBED_PROMPTS, META_REEMBED, REEMBED_STAGES
from thoth.store.tables import StoreError, Tables, retry_on_conflict

NEXT, OLD, VECTOR = "vector_next", "vector_old", "vector"
SWAP = ({"path": VECTOR, "rename": OLD}, {"path": NEXT, "rename": VECTOR})  # one commit: both names at once
MERGE_ROWS = 65536  # staged vectors merged into a live table per commit (memory: rows x dimension x 4 bytes)
_READ = {"chunks": ["doc_id", "section", "text"], "tree_nodes": ["source_id", "text"]}  # what is re-embedded


class Reembedding:
    def __init__(self, tables: Tables, metadata: Metadata):
        self.tables = tables
        self.metadata = metadata

    def _exists(self, name: str) -> bool:
        return name in self.tables.listed()

    def _live(self) -> list[str]:
        names = self.tables.names()
        return [table for table in REEMBED_STAGES if table in names]

    def target(self) -> dict[str, str] | None:
        """The settings rows of the model being staged for, or None when no re-embedding is under way."""
        raw = self.metadata.get(META_REEMBED) if self._live() else None
        return json.loads(raw) if raw else None

    def begin(self, target: dict[str, str], dim: int) -> bool:
        """Stage for `target` (the settings rows recording the new model); True when staging for another
        target (or a half-dropped one) was thrown away first. What is staged for `target` is kept."""
        current = self.target()
        reset = current is not None and current != target
        if reset:
            self.discard()
        for table in self._live():
            stage, key = REEMBED_STAGES[table]
            schema = pa.schema([(key, pa.string()), ("doc_id", pa.string()), ("vector", pa.list_(pa.float32(), dim))])
            if self._exists(stage) and self.tables.table(stage).schema != schema:  # left by an older target
                self._drop(stage)
            self.tables.db.create_table(stage, schema=schema, exist_ok=True)
        self.metadata.set({META_REEMBED: json.dumps(target, sort_keys=True)})
        return reset

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per live table: (rows staged, rows in the table)."""
        found = {}
        for table in self._live():
            stage = REEMBED_STAGES[table][0]
            staged = self.tables.table(stage).count_rows() if self._exists(stage) else 0
            found[table] = (staged, self.tables.table(table).count_rows())
        return found

    def pending(self, table: str, size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows of `table` not staged yet, `size` at a time: {"id", "doc_id", "section", "text"}."""
        stage, key = REEMBED_STAGES[table]
        staged = set(self.tables.table(stage).search().select([key]).limit(None).to_arrow().column(key).to_pylist())
        batch: list[dict[str, Any]] = []
        scan = self.tables.table(table).search().select([key, *_READ[table]]).limit(None).to_batches(8192)
        for records in scan:
            for row in records.to_pylist():
                if row[key] in staged:
                    continue
                staged.add(row[key])  # a node id listed twice (two tree versions) is embedded once
                batch.append({"id": row[key], "doc_id": row.get("doc_id") or row.get("source_id"), **row})
                if len(batch) == size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def stage(self, table: str, ids: list[str], doc_ids: list[str], vectors: np.ndarray) -> None:
        """Keep a batch's new vectors (one commit)."""
        stage, key = REEMBED_STAGES[table]
        data = pa.table(
            {key: ids, "doc_id": doc_ids, "vector": list(np.asarray(vectors, dtype=np.float32))},
            schema=self.tables.table(stage).schema,
        )
        retry_on_conflict(lambda: self.tables.table(stage).add(data), f"stage vectors for {table}")

    def staged_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The staged vectors of those chunk `ids` that have one (the cosine floor's sample)."""
        if not ids:
            return {}
        stage, key = REEMBED_STAGES["chunks"]
        query = self.tables.table(stage).search().where(filters.is_in(key, ids))
        rows = query.select([key, "vector"]).limit(None).to_arrow().to_pydict()
        return {k: np.asarray(v, dtype=np.float32) for k, v in zip(rows[key], rows["vector"], strict=True)}

    def switch(self, values: dict[str, str], floor: Floor | None) -> None:
        """Make the staged vectors the index's and record `values` (the model's rows) and the `floor`
        measured on them in the same settings commit; raises StoreError, switching nothing, when rows
        were written meanwhile."""
        for table in self._live():
            live = self.tables.table(table)
            if OLD in live.schema.names:
                continue  # swapped by a switch that was stopped before its settings commit
            self._fill(table)
        for table in self._live():
            live = self.tables.table(table)
            if OLD not in live.schema.names:
                retry_on_conflict(lambda live=live: live.alter_columns(*SWAP), f"switch the vectors of {table}")
        cleared = {META_REEMBED: "", META_EMBED_PROMPTS: "", META_EMBED_FLOOR: ""}  # absent below: none
        measured = {META_EMBED_FLOOR: json.dumps(asdict(floor), sort_keys=True)} if floor else {}
        self.metadata.set(cleared | values | measured)

    def _fill(self, table: str) -> None:
        # the staged vectors into `vector_next` of the live table: readers never read that column
        stage, key = REEMBED_STAGES[table]
        live = self.tables.table(table)
        if NEXT in live.schema.names:  # left by a stopped switch: filled again from the staged vectors
            retry_on_conflict(lambda: live.drop_columns([NEXT]), f"drop {NEXT} of {table}")
        field = self.tables.table(stage).schema.field("vector")
        retry_on_conflict(lambda: live.add_columns(pa.schema([pa.field(NEXT, field.type)])), f"add {NEXT}")
        schema = pa.schema([(key, pa.string()), (NEXT, field.type)])
        scan = self.tables.table(stage).search().select([key, "vector"]).limit(None).to_batches(MERGE_ROWS)
        for batch in scan:
            data = pa.Table.from_batches([batch]).rename_columns([key, NEXT]).cast(schema)
            merge = live.merge_insert(key).when_matched_update_all()
            retry_on_conflict(lambda data=data, merge=merge: merge.execute(data), f"fill {NEXT} of {table}")
        missing = live.count_rows(f"{NEXT} IS NULL")
        if missing:
            raise StoreError(
                f"{missing} rows of {table} were written while re-embedding: run `python -m ingest --reembed` "
                "again to embed them and switch"
            )

    def finish(self) -> bool:
        """After the switch: drop the old vectors (and the ANN index trained on them) and the staging;
        True when there were old vectors to drop (a switch's cleanup was due)."""
        dropped = False
        for table in self._live():
            live = self.tables.table(table)
            if OLD in live.schema.names:
                retry_on_conflict(lambda live=live: live.drop_columns([OLD]), f"drop the old vectors of {table}")
                dropped = True
        for stage, _ in REEMBED_STAGES.values():
            self._drop(stage)
        return dropped

    def discard(self) -> None:
        """Throw away a re-embedding's staged vectors (another target, or none)."""
        for table in self._live():
            live = self.tables.table(table)
            if NEXT in live.schema.names and OLD not in live.schema.names:
                retry_on_conflict(lambda live=live: live.drop_columns([NEXT]), f"drop {NEXT} of {table}")
        for stage, _ in REEMBED_STAGES.values():
            self._drop(stage)
        self.metadata.set({META_REEMBED: ""})

    def _drop(self, stage: str) -> None:
        if self._exists(stage):
            self.tables.db.drop_table(stage)
        self.tables.forget(stage)
