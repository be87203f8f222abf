"""Ingesting sources again from the URIs they were ingested from (the workshop reindex), each run recorded."""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, datetime

from thoth.records import Source
from thoth.source_spec import SourceSpec
from thoth.writes.objects import SourceError
from thoth.writes.run_records import RunSummary, record_run, summarise
from thoth.writes.writer import Writer

log = logging.getLogger("thoth.ingest")


def reingest(writer: Writer, kind: str, started_by: str = "reindex") -> list[dict]:
    """Ingest again every source of `kind` from the URI it was ingested from, each run recorded: what each
    did (`RunSummary.to_dict`), or why it could not run."""
    results = []
    for source in sorted(writer.store.find(Source, {"kind": kind}), key=lambda s: s.source_id):
        started_at = datetime.now(UTC)
        summaries: list[RunSummary] = []
        error = ""
        try:
            summaries.append(writer.run(SourceSpec.of(source), name=source.name, source_id=source.source_id))
        except (SourceError, ValueError) as exc:  # that source is gone or unreadable; the others go on
            log.warning("reingest %s: %s", source.source_id, exc)
            error = str(exc)
        run = summarise(summaries, trigger="reindex", started_by=started_by, started_at=started_at, error=error)
        record_run(writer.store, dataclasses.replace(run, source_id=source.source_id))
        results.append(summaries[0].to_dict() if summaries else {"source_id": source.source_id, "error": error})
    return results
