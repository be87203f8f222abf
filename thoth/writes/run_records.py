"""The ingest history's entries: what a write to the index did, as an `IngestRun` the store keeps.

The job (`thoth ingest`), bucket events (thoth/mcp/internal.py), `ingest_document` and workshop reindex
each record one run when they finish (or fail), so an operator can see when the index last changed, what
changed, what failed and why, and who or what started it.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from thoth.records import IngestRun
from thoth.store import Store
from thoth.writes.runs import RunSummary

log = logging.getLogger("thoth.ingest")

# Runs kept per source. The history answers "what happened lately", and a bucket that sends an event per
# upload would otherwise grow the table without bound; a few hundred rows cover weeks of daily jobs and
# the events between them, and reading them all (the console, `thoth status`) stays one small scan.
RUNS_KEPT = 200


def summarise(
    summaries: Sequence[RunSummary],
    *,
    trigger: str,
    started_by: str,
    started_at: datetime,
    error: str = "",
) -> IngestRun:
    """One run record for what `summaries` did (a sidecar event rewrites several documents: one run)."""
    tree = [s.tree.render() for s in summaries if s.tree is not None]
    return IngestRun(
        run_id=uuid.uuid4().hex,
        source_id=summaries[0].source_id if summaries else "",
        trigger=trigger,
        started_by=started_by,
        started_at=started_at,
        ended_at=datetime.now(UTC),
        added=sum(len(s.ingested) - len(s.updated) for s in summaries),
        updated=sum(len(s.updated) for s in summaries),
        removed=sum(len(s.removed) for s in summaries),
        failed=sum(len(s.failed) for s in summaries),
        unchanged=sum(s.unchanged for s in summaries),
        chunks_written=sum(s.chunks_written for s in summaries),
        tree="; ".join(tree),
        failures=tuple(f"{key}: {reason}" for s in summaries for key, reason in s.failed),
        error=error,
        interrupted=any(s.interrupted for s in summaries),
    )


def record_run(store: Store, run: IngestRun, *, existing: bool = False) -> None:
    """Keep `run` in the history (`existing`: only in an index that has collections already, for a run
    that failed before writing). Never raises: the write it describes stands whether or not its record
    could be written, and the log says why it could not."""
    try:
        store.record_run(run, RUNS_KEPT, only_into_an_index=existing)
    except Exception as exc:  # the history is a report, not part of the write
        log.warning("could not record the %s run of %s: %s", run.trigger, run.source_id, exc)


def describe(run: IngestRun) -> str:
    """One line: when, what started it, what it changed."""
    when = run.ended_at.strftime("%Y-%m-%d %H:%M:%S UTC") if run.ended_at else "?"
    what = (
        f"{run.added} added, {run.updated} updated, {run.removed} removed, {run.failed} failed, "
        f"{run.chunks_written} chunks"
    )
    outcome = f" ERROR: {run.error}" if run.error else (" (interrupted)" if run.interrupted else "")
    return f"{when}  {run.source_id}  {run.trigger} ({run.started_by}): {what}{outcome}"


def to_json(run: IngestRun) -> dict:
    """The run as the CLI's `--json` and /health give it (times as ISO 8601)."""
    times = {name: (at.isoformat() if (at := getattr(run, name)) else None) for name in ("started_at", "ended_at")}
    return {**dataclasses.asdict(run), **times, "failures": list(run.failures)}
