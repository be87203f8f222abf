"""The sources surface's outputs: runs (add_source, refresh_source, get_run, cancel_run, list_runs) and a
removed source."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field

from thoth.mcp.outputs import Output, from_fields
from thoth.records import IngestRun


class Failure(Output):
    key: str = Field(description="the file, object or URL")
    reason: str


class Run(Output):
    run_id: str
    source: str = Field(description="the collection the run writes")
    state: str = Field(description="queued, running, done, failed, cancelled, interrupted or lost")
    trigger: str = Field(description="what started it: add_source, refresh_source, job, event, document, reindex")
    started_by: str
    started_at: str | None
    ended_at: str | None
    duration_seconds: float | None = Field(description="so far, while it runs")
    files_done: int = Field(description="files of its plan handled so far")
    files_total: int = Field(description="files its plan has to handle (0 until planned)")
    added: int
    updated: int
    removed: int
    failed: int
    unchanged: int
    chunks_written: int
    failures: list[Failure] = Field(description="each file that could not be used, with the reason")
    error: str = Field(description="why the run could not finish ('' when it did)")
    cancel_requested: bool
    uri: str = Field(description="the source it reads, with its git ref and path")

    @classmethod
    def of(cls, run: IngestRun) -> Run:
        from thoth.writes.run_records import state_of  # the write path loads with a writer's first call

        now = datetime.now(UTC)
        state = state_of(run, now)
        end = run.ended_at or (None if state not in ("queued", "running") else now)
        return from_fields(
            cls,
            run,
            source=run.source_id,
            state=state,
            started_at=run.started_at.isoformat() if run.started_at else None,
            ended_at=run.ended_at.isoformat() if run.ended_at else None,
            duration_seconds=round((end - run.started_at).total_seconds(), 1) if end and run.started_at else None,
            files_done=run.done_files,
            files_total=run.total_files,
            failures=[Failure(key=k, reason=r) for k, _, r in (f.partition(": ") for f in run.failures)],
            cancel_requested=run.cancel,
        )

    def render(self) -> str:
        took = f" in {self.duration_seconds:.0f}s" if self.duration_seconds is not None else ""
        line = f"Run {self.run_id} of {self.source} ({self.trigger}): {self.state}{took}"
        if self.state in ("queued", "running"):
            line += f"; {self.files_done} of {self.files_total} files" if self.files_total else "; listing the source"
            line += " (cancel requested)" if self.cancel_requested else ""
            return line + ". Call get_run with this run_id to follow it."
        line += (
            f"; {self.added} added, {self.updated} updated, {self.removed} removed, {self.failed} failed, "
            f"{self.unchanged} unchanged, {self.chunks_written} chunks written"
        )
        lines = [line + (f"; error: {self.error}" if self.error else "")]
        lines += [f"  failed: {f.key}: {f.reason}" for f in self.failures[:20]]
        return "\n".join(lines)


class RunList(Output):
    runs: list[Run] = Field(description="newest first")

    def render(self) -> str:
        return "\n".join(r.render().splitlines()[0] for r in self.runs) or "No runs recorded."


class SourceRemoved(Output):
    source: str
    documents: int = Field(description="documents the collection held")
    chunks: int

    def render(self) -> str:
        return f"Removed source {self.source}: {self.documents} documents, {self.chunks} chunks, and its tree."
