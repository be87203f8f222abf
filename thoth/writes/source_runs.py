"""Sources a writer manages over MCP: add one, refresh it, remove it; start, follow and cancel their runs.

A run is recorded when it starts (`queued`) and launched (launch.py) as a process that updates its own record
(run_watch.py); a cancel is a flag on that record. Everything is in the index, so any instance answers for any run."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from thoth.config import Settings
from thoth.errors import ClientError, NotFound
from thoth.records import Chunk, Document, IngestRun, Partition, Source
from thoth.source_spec import GIT_STATE_KEY, WEB_STATE_KEY, ScopeError, SourceSpec, slug
from thoth.store import Store
from thoth.writes.launch import ingest_args, launch, launch_local, records_here
from thoth.writes.run_records import ENDED, RUNS_KEPT, active, state_of

WAIT_POLL_SECONDS = 0.5  # how often a tool that waits for its run reads the run's record


def spec_from(uri: str, *, ref: str | None, include: object, exclude: object) -> SourceSpec:
    """The spec of a source a writer names over MCP: a website, a git repository or a bucket prefix. A folder
    or file:// repository on the server's own disk is the command line's (`thoth ingest`), not a caller's."""
    try:
        return SourceSpec.parse(uri, ref=ref, include=include, exclude=exclude, remote=True)
    except ScopeError as exc:
        if exc.argument == "source":
            raise ClientError(f"uri: {exc}", argument="uri") from None
        raise


def _source(store: Store, source_id: str) -> Source | None:
    return store.first(Source, {"source_id": source_id}) if store.has(Source) else None


def _running(store: Store, source_id: str) -> IngestRun | None:
    return next((r for r in store.recent_runs(source_id, limit=20) if active(r)), None)


def start(
    store: Store, settings: Settings, spec: SourceSpec, name: str, source_id: str, *, trigger: str, caller: str
) -> IngestRun:
    """Record a run of `spec` into collection `source_id` and launch it; the run as recorded (`queued`)."""
    running = _running(store, source_id)
    if running is not None:
        raise ClientError(
            f"source: a run of {source_id!r} is already {state_of(running)} (run_id {running.run_id}); "
            "wait for it (get_run) or cancel it (cancel_run)",
            argument="source",
        )
    run = _queued(source_id, trigger, caller, spec.uri)
    args = ingest_args(spec, name, run.run_id, settings.db_uri, trigger=trigger, started_by=run.started_by)
    return _launched(store, run, lambda: launch(settings, args), recorded=records_here(settings))


def _queued(source_id: str, trigger: str, caller: str, uri: str) -> IngestRun:
    now = datetime.now(UTC)
    return IngestRun(
        uuid.uuid4().hex, source_id, trigger, caller or "local", now, state="queued", uri=uri, heartbeat_at=now
    )


def _launched(store: Store, run: IngestRun, start_it: Callable[[], str], *, recorded: bool) -> IngestRun:
    """`run` recorded (where the server records runs) and started; a start that fails leaves it `failed`."""
    if recorded:
        store.record_run(run, RUNS_KEPT)
    try:
        execution = start_it()
    except Exception as exc:
        if recorded:
            store.runs.update(run.run_id, {"state": "failed", "error": str(exc), "ended_at": datetime.now(UTC)})
        raise
    if recorded:
        store.runs.update(run.run_id, {"execution": execution})
    return replace(run, execution=execution)


def collection_of(spec: SourceSpec, name: str | None) -> tuple[str, str]:
    """(collection id, name) a source goes into."""
    try:
        label = name or spec.collection_name
        return slug(label), label
    except ValueError as exc:
        raise ClientError(f"name: {exc}", argument="name") from None


def add(store: Store, settings: Settings, spec: SourceSpec, name: str | None, *, caller: str) -> IngestRun:
    """Start the first run of a new source (or a run of the same source with this scope)."""
    source_id, label = collection_of(spec, name)
    existing = _source(store, source_id)
    if existing is not None and SourceSpec.of(existing).location != spec.location:
        raise ClientError(
            f"name: collection {source_id!r} already reads {SourceSpec.of(existing).location}; choose another "
            "name, or refresh_source it",
            argument="name",
        )
    return start(store, settings, spec, label, source_id, trigger="add_source", caller=caller)


def refresh(store: Store, settings: Settings, source_id: str, *, caller: str) -> IngestRun:
    """Start a run of a source as it was last ingested (its recorded scope)."""
    source = _source(store, source_id)
    if source is None:
        raise NotFound(f"source {source_id!r} is not indexed (list_collections lists the sources)", argument="source")
    spec = SourceSpec.of(source)
    if spec.kind == "folder" or source.uri.startswith("mcp://"):
        raise ClientError(
            f"source {source_id!r} is {'a folder' if spec.kind == 'folder' else 'written by ingest_document'}: "
            "only websites, git repositories and buckets are refreshed over MCP",
            argument="source",
        )
    return start(store, settings, spec, source.name or source_id, source_id, trigger="refresh_source", caller=caller)


def start_document(
    store: Store,
    settings: Settings,
    dataset_id: str,
    content: str,
    source: str | None,
    tags: list[str] | None,
    *,
    caller: str,
) -> IngestRun:
    """`ingest_document` of a long text as a run of its own (a child process): the text is staged in
    THOTH_CACHE_DIR/runs/ID.json for `thoth ingest document --document FILE`, which deletes it."""
    from thoth.writes.documents import TEXT_URI, check_document

    check_document(store, dataset_id, content)
    run = _queued(dataset_id, "document", caller, TEXT_URI)
    staged = Path(settings.cache_dir).expanduser() / "runs" / f"{run.run_id}.json"
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_text(json.dumps({"dataset_id": dataset_id, "content": content, "source": source, "tags": tags}))
    args = ["document", "--document", str(staged), "--db", settings.db_uri, "--run-id", run.run_id]
    args += ["--trigger", "document", "--started-by", run.started_by]
    try:
        return _launched(store, run, lambda: launch_local(settings, args), recorded=True)
    except Exception:
        staged.unlink(missing_ok=True)
        raise


def get(store: Store, run_id: str) -> IngestRun:
    run = store.runs.get(run_id)
    if run is None:
        raise NotFound(f"run_id {run_id!r} is not a recorded run (list_runs lists them)", argument="run_id")
    return run


def cancel(store: Store, settings: Settings, run_id: str) -> IngestRun:
    """Ask a run to stop after its current batch (what it wrote stays; nothing is half-written): the flag on
    its record, set here or, where the server only reads the index, by an execution of the job."""
    run = get(store, run_id)
    if state_of(run) in (*ENDED, "lost"):
        return run
    if records_here(settings):
        flag_cancel(store, run_id)
    else:
        launch(settings, ["cancel", "--run-id", run_id, "--db", settings.db_uri])
    return replace(run, cancel=True)


def flag_cancel(store: Store, run_id: str) -> None:
    """The cancel flag on a run's record (`thoth ingest cancel --run-id ID`; the run reads it with its beat)."""
    store.runs.update(run_id, {"cancel": True})


def wait(store: Store, run_id: str, report: Callable[[IngestRun], None], timeout: float) -> IngestRun:
    """Follow a run until it ends (or `timeout` seconds), calling `report` with each new state of it."""
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        run = get(store, run_id)
        now = (state_of(run), run.done_files, run.total_files)
        if now != seen:
            report(run)
            seen = now
        if now[0] in (*ENDED, "lost") or time.monotonic() > deadline:
            return run
        time.sleep(WAIT_POLL_SECONDS)


@dataclass(frozen=True)
class Removed:
    source_id: str
    documents: int
    chunks: int


def remove(store: Store, settings: Settings, source_id: str) -> Removed:
    """Delete a collection (here, or where the server only reads the index, by an execution of the job); what
    it held."""
    source = _source(store, source_id)
    if source is None:
        raise NotFound(f"source {source_id!r} is not indexed (list_collections lists the sources)", argument="source")
    running = _running(store, source_id)
    if running is not None:
        raise ClientError(
            f"source: a run of {source_id!r} is {state_of(running)} (run_id {running.run_id}); cancel it first",
            argument="source",
        )
    scope = {"source_id": source_id}
    held = Removed(source_id, store.count_of(Document, {**scope, "status": "ok"}), store.count_of(Chunk, scope))
    if records_here(settings):
        remove_collection(store, source_id)
    else:
        launch(settings, ["remove", "--name", source_id, "--db", settings.db_uri])
    return held


def remove_collection(store: Store, source_id: str) -> None:
    """Delete a collection: its tree, documents, chunks, partitions, its row and what its runs remembered
    (`thoth ingest remove --name ID`). Documents go first: searches serve only what a documents row points at."""
    scope = {"source_id": source_id}
    store.metadata.drop_tree(source_id)
    for record in (Document, Chunk, Partition, Source):
        if store.has(record):
            store.remove(record, scope)
    store.delete_settings([WEB_STATE_KEY.format(source_id=source_id), GIT_STATE_KEY.format(source_id=source_id)])
