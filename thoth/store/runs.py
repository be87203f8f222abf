"""The ingest history: one `ingest_runs` row per write to the index (a job run or task, a bucket event, an
`ingest_document` call, a workshop reindex), pruned to the newest runs of each source.

The table is history, not index content: it is not among the index's tables (thoth.store.schema.ALL_TABLES),
so health's table versions and the write path's "a run that changed nothing writes nothing" are about the
searchable index alone. It is created by the first run recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from thoth.records import IngestRun, from_row, to_row
from thoth.store import filters
from thoth.store.schema import INGEST_RUNS, SOURCES, schema_for
from thoth.store.tables import Tables


class Runs:
    def __init__(self, tables: Tables):
        self.tables = tables
        self._found = False  # the table is never dropped: once seen, /health need not list the tables for it
        self._read: tuple[int, list[IngestRun]] | None = None  # (table version, every run newest first)

    def _exists(self) -> bool:
        if not self._found:
            self._found = INGEST_RUNS in self.tables.listed()
        return self._found

    def record(self, run: IngestRun, keep: int, only_into_an_index: bool = False) -> None:
        """Add `run`, then drop its source's runs older than the newest `keep`. `only_into_an_index`: not
        when the database has no index yet (a job that failed before writing must not create one)."""
        if only_into_an_index and ("://" not in self.tables.uri and not Path(self.tables.uri).is_dir()):
            return  # connecting would create the folder
        if only_into_an_index and SOURCES not in self.tables.names():
            return
        self._ensure()
        self.tables.add(INGEST_RUNS, [to_row(run)])
        older = self.recent(run.source_id)[keep:]
        if older:
            self.tables.delete(INGEST_RUNS, filters.is_in("run_id", [r.run_id for r in older]))

    def _ensure(self) -> None:
        if not self._exists():
            self.tables.db.create_table(INGEST_RUNS, schema=schema_for(INGEST_RUNS, 0), exist_ok=True)
            self._found = True

    def update(self, run_id: str, values: dict[str, object]) -> None:
        """Set some columns of one run (its progress, its end, a cancel request): only those, so a cancel
        and the run's own progress never overwrite each other."""
        self._ensure()
        self.tables.update(INGEST_RUNS, filters.eq("run_id", run_id), values)

    def get(self, run_id: str) -> IngestRun | None:
        """One run, read from the table as it is now (another instance, or the run itself, may have
        written it since)."""
        if not self._exists():
            return None
        table = self.tables.table(INGEST_RUNS)
        table.checkout_latest()
        rows = table.search().where(filters.eq("run_id", run_id)).limit(1).to_list()
        return from_row(IngestRun, rows[0]) if rows else None

    def recent(self, source_id: str | None = None, limit: int | None = None) -> list[IngestRun]:
        """Runs newest first: of `source_id`, or of every source."""
        if not self._exists():
            return []
        table = self.tables.table(INGEST_RUNS)
        version, read = table.version, self._read
        if read is None or read[0] != version:  # read again only after a write: /health asks on every probe
            runs = [from_row(IngestRun, row) for row in table.search().limit(None).to_list()]
            oldest = datetime.min.replace(tzinfo=UTC)
            runs.sort(key=lambda r: (r.started_at or oldest, r.run_id), reverse=True)
            read = self._read = (version, runs)
        runs = [r for r in read[1] if source_id is None or r.source_id == source_id]
        return runs[:limit] if limit is not None else runs
