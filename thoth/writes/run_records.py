"""What a write to the index did: a run's `RunSummary`, and its entry in the ingest history (`IngestRun`)."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from thoth.records import IngestRun
from thoth.store import Store

if TYPE_CHECKING:  # the history's readers (`thoth status`, the console) load without the tree builder
    from thoth.writes.tree import TreeResult

log = logging.getLogger("thoth.ingest")

# Runs kept per source. The history answers "what happened lately", and a bucket that sends an event per
# upload would otherwise grow the table without bound; a few hundred rows cover weeks of daily jobs and
# the events between them, and reading them all (the console, `thoth status`) stays one small scan.
RUNS_KEPT = 200


@dataclass
class RunSummary:
    """What one write did: a run, a task of one, or an object event's."""

    source_id: str
    ingested: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # of `ingested`, the keys the source had before
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    pages: int = 0
    seconds: float = 0.0
    task: str = ""  # "2/4" when this run was one of several parallel tasks
    interrupted: bool = False  # stopped early (SIGTERM); a rerun finishes the work
    tree: TreeResult | None = None

    @property
    def changed(self) -> int:
        return len(self.ingested) + len(self.removed) + len(self.failed)

    def to_dict(self) -> dict:
        return {
            "source_id": self.source_id,
            "changed": self.changed,
            "ingested": self.ingested,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": [{"key": key, "reason": reason} for key, reason in self.failed],
            "chunks_written": self.chunks_written,
            "seconds": round(self.seconds, 3),
        }

    def render(self) -> str:
        task = f" (task {self.task})" if self.task else ""
        lines = [
            f"source {self.source_id}{task}: {self.changed} changed — {len(self.ingested)} ingested, "
            f"{self.unchanged} unchanged, {len(self.removed)} removed, {len(self.failed)} failed; "
            f"{self.chunks_written} chunks written in {self.seconds:.1f}s"
        ]
        lines += [f"  failed: {key}: {reason}" for key, reason in self.failed]
        if self.interrupted:
            lines.append("  interrupted: stopped after the last written batch; run again to finish")
        if self.tree is not None:
            lines.append("  " + self.tree.render())
        return "\n".join(lines)


def summarise(
    summaries: Sequence[RunSummary], *, trigger: str, started_by: str, started_at: datetime, error: str = ""
) -> IngestRun:
    """One run record for what `summaries` did (a sidecar event rewrites several documents: one run)."""
    tree = [s.tree.render() for s in summaries if s.tree is not None]
    interrupted = any(s.interrupted for s in summaries)
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
        interrupted=interrupted,
        state="failed" if error else ("interrupted" if interrupted else "done"),
    )


def record_run(store: Store, run: IngestRun, *, existing: bool = False) -> None:
    """Keep `run` in the history (`existing`: only in an index that has collections already, for a run
    that failed before writing). Never raises: the write it describes stands whether or not its record
    could be written, and the log says why it could not."""
    try:
        store.record_run(run, RUNS_KEPT, only_into_an_index=existing)
    except Exception as exc:  # the history is a report, not part of the write
        log.warning("could not record the %s run of %s: %s", run.trigger, run.source_id, exc)


ENDED = ("done", "failed", "cancelled", "interrupted")
# A running run writes its heartbeat every RUN_WATCH_SECONDS (thoth/writes/job.py); one silent this long
# died without saying so (killed for memory, its machine gone): reported `lost`. A queued run may wait
# minutes for a Cloud Run execution to start.
RUN_WATCH_SECONDS = 2.0
LOST_AFTER_SECONDS = {"running": 120.0, "queued": 900.0}


def state_of(run: IngestRun, now: datetime | None = None) -> str:
    """queued, running, done, failed, cancelled, interrupted, or lost (a run that stopped answering)."""
    state = run.state or ("failed" if run.error else "interrupted" if run.interrupted else "done")
    limit = LOST_AFTER_SECONDS.get(state)
    if limit is not None:
        seen = run.heartbeat_at or run.started_at
        if seen is not None and ((now or datetime.now(UTC)) - seen).total_seconds() > limit:
            return "lost"
    return state


def active(run: IngestRun) -> bool:
    return state_of(run) in ("queued", "running")


def finish(store: Store, run_id: str, run: IngestRun, *, cancelled: bool = False) -> None:
    """A recorded run (started over MCP) ended as `run` says: its counts, failures and state."""
    state = "cancelled" if cancelled and run.state in ("interrupted", "done") else run.state
    ended = {
        name: getattr(run, name)
        for name in ("ended_at", "added", "updated", "removed", "failed", "unchanged", "chunks_written", "tree")
    }
    values = {**ended, "error": run.error, "interrupted": run.interrupted}
    if run.failures:  # (Lance cannot set a list column to an empty list; the row has none yet)
        values["failures"] = list(run.failures)
    try:
        store.runs.update(run_id, {**values, "state": state, "heartbeat_at": datetime.now(UTC)})
    except Exception as exc:  # the history is a report, not part of the write
        log.warning("could not record the end of run %s: %s", run_id, exc)


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
