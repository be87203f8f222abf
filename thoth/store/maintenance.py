"""Keeping the index healthy under writes all day (`python -m ingest maintain`, and the server in the
background): compaction, cleanup of versions older than RETENTION_MINUTES (a reader holding one would lose
its files), new chunks folded into the indexes, and orphans swept: rows of a version no `documents` row
points at, left by a write killed after its switch. An orphan goes only once a maintenance run saw it
`orphan_grace` before with no rows added since, since a write in flight (a long PDF's windows, staged for
minutes) looks the same; so do figure pictures no chunk names (docs/operations.md)."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from thoth.records import Chunk, Document, Partition
from thoth.store.schema import CHUNKS, META_MAINTENANCE, META_ORPHANS
from thoth.store.tables import retry_on_conflict

if TYPE_CHECKING:
    from thoth.store.db import Store

log = logging.getLogger("thoth.store")
ORPHAN_GRACE = timedelta(minutes=10)  # far longer than one write takes between its rows and its switch
RETENTION_MINUTES = 60  # versions older are cleaned: longer than any reader holds one


@dataclass
class TableHealth:
    """One table as /health shows it."""

    versions: int
    files: int  # data and deletion files of the latest version
    fragments: int
    unindexed_rows: int | None = None  # chunks only: rows outside the BM25 index (searched by a scan)
    last_maintained: str | None = None  # ISO time of the last maintenance run that compacted it

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class MaintenanceReport:
    """What one maintenance run removed, per table, and how long it took."""

    versions_removed: dict[str, int] = field(default_factory=dict)
    bytes_removed: dict[str, int] = field(default_factory=dict)
    files_removed: dict[str, int] = field(default_factory=dict)
    orphans_removed: int = 0
    figures_removed: int = 0
    seconds: float = 0.0

    def render(self) -> str:
        lines = [
            f"maintenance: {sum(self.versions_removed.values())} versions, {sum(self.files_removed.values())} "
            f"compacted files and {sum(self.bytes_removed.values()) / 1e6:.1f} MB removed, "
            f"{self.orphans_removed} orphaned documents' rows and {self.figures_removed} unnamed figure pictures "
            f"swept in {self.seconds:.1f}s"
        ]
        for name in sorted(self.versions_removed):
            lines.append(
                f"  {name}: {self.versions_removed[name]} versions, {self.files_removed.get(name, 0)} files, "
                f"{self.bytes_removed.get(name, 0) / 1e6:.1f} MB"
            )
        return "\n".join(lines)


def table_health(store: Store) -> dict[str, TableHealth]:
    """Per table: its versions, files, fragments, (chunks) unindexed rows, and when it was last maintained."""
    maintained = json.loads(store.metadata.get(META_MAINTENANCE) or "{}")
    report = {}
    for name in store.tables.names():
        table = store.table(name)
        latest = (table.list_versions() or [{}])[-1].get("metadata", {})
        stats = table.stats()
        report[name] = TableHealth(
            versions=len(table.list_versions()),
            files=int(latest.get("total_data_files", 0)) + int(latest.get("total_deletion_files", 0)),
            fragments=int(stats["fragment_stats"]["num_fragments"]),
            unindexed_rows=store.indexes.unindexed_rows() if name == CHUNKS else None,
            last_maintained=maintained.get(name),
        )
    return report


def maintain(
    store: Store, retention: timedelta | None = None, orphan_grace: timedelta = ORPHAN_GRACE
) -> MaintenanceReport:
    """Sweep orphans, fold new rows into the indexes, compact every table and clean its old versions."""
    started = time.perf_counter()
    retention = timedelta(minutes=RETENTION_MINUTES) if retention is None else retention
    report = MaintenanceReport()
    if store.has(Chunk) and store.has(Document):
        report.orphans_removed = sweep_orphans(store, orphan_grace)
        report.figures_removed = sweep_figures(store, orphan_grace)
        store.indexes.ensure_vector(fold_in=False)  # trains or retrains it when due; optimize below folds in
        store.indexes.ensure_fts(fold_in=False)  # builds it when missing
    now = datetime.now(UTC).isoformat(timespec="seconds")
    maintained = {}
    for name in store.tables.names():
        table = store.table(name)
        # optimize: compaction, the indexes' new rows merged in, and versions older than `retention` removed
        stats = retry_on_conflict(
            lambda t=table: store.lance.run(store.lance.async_of(t).optimize(cleanup_older_than=retention)),
            f"maintain {name}",
        )
        report.versions_removed[name] = int(stats.prune.old_versions_removed)
        report.bytes_removed[name] = int(stats.prune.bytes_removed)
        report.files_removed[name] = int(stats.compaction.files_removed)
        maintained[name] = now
    store.metadata.set({META_MAINTENANCE: json.dumps(maintained, sort_keys=True)})
    report.seconds = time.perf_counter() - started
    log.info("%s", report.render().replace("\n", ";"))
    return report


def sweep_orphans(store: Store, grace: timedelta = ORPHAN_GRACE) -> int:
    """Delete the chunks and partitions of versions no `documents` row points at, once seen `grace` ago with
    as many rows as now; the number of (source, doc_id) versions swept."""
    owned = {(d.source_id, d.doc_id) for d in store.find(Document, fields=["source_id", "doc_id"])}
    found: Counter[tuple[str, str]] = Counter()  # rows of each version
    for record in (Chunk, Partition):
        for batch in store.scan_of(record, ["source_id", "doc_id"]):
            found.update(zip(batch.column("source_id").to_pylist(), batch.column("doc_id").to_pylist(), strict=True))
    orphans = set(found) - owned
    now = datetime.now(UTC)
    recorded = _orphan_record(store)
    seen: dict[tuple[str, ...], tuple[datetime, int]] = {
        tuple(k.split("\n", 1)): (datetime.fromisoformat(at), rows) for k, (at, rows) in recorded.items()
    }
    # first seen now, or rows added since (a write going on): due only with no grace
    since = {o: seen[o][0] if o in seen and seen[o][1] == found[o] else now for o in orphans}
    due = sorted(o for o in orphans if now - since[o] >= grace)
    for source_id, doc_id in due:
        for record in (Chunk, Partition):
            store.remove(record, {"source_id": source_id, "doc_id": doc_id})
    waiting = sorted(set(orphans) - set(due))
    record = {f"{s}\n{d}": [since[(s, d)].isoformat(), found[(s, d)]] for s, d in waiting}
    if record != recorded:
        store.metadata.set({META_ORPHANS: json.dumps(record, sort_keys=True)})
    if due:
        log.warning("swept the rows of %d document versions no document points at (killed writes)", len(due))
    return len(due)


def sweep_figures(store: Store, grace: timedelta = ORPHAN_GRACE) -> int:
    """Delete the figure pictures no chunk names, once older than `grace` (a write puts its pictures before
    the chunks that name them); how many. The chunks are scanned only when some picture is that old."""
    now = datetime.now(UTC)
    old = [name for name, written in store.figures.listed() if now - written >= grace]
    named: set[str] = set()
    for batch in store.scan_of(Chunk, ["figure"]) if old else ():
        named.update(batch.column("figure").to_pylist())
    unnamed = [name for name in old if name not in named]
    for name in unnamed:
        store.figures.remove(name)
    if unnamed:
        log.info("removed %d figure pictures no chunk names", len(unnamed))
    return len(unnamed)


def _orphan_record(store: Store) -> dict[str, list]:
    """Each orphan seen: [when first seen with its present row count, that count]."""
    return {k: v for k, v in json.loads(store.metadata.get(META_ORPHANS) or "{}").items() if isinstance(v, list)}
