"""The sources surface (docs/security.md, "Managing sources over MCP"): a writer adds, refreshes and removes
sources and follows their runs, which thoth/writes/source_runs.py records and starts outside the server."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from thoth.app import Thoth
from thoth.errors import NotFound
from thoth.mcp.outputs.sources import Run, RunList, SourceRemoved
from thoth.mcp.progress import Report, silent
from thoth.mcp.roles import current_caller, require_writer_of
from thoth.mcp.tools import READ_ONLY, expose
from thoth.mcp.toolsets import Toolset
from thoth.records import IngestRun

WAIT_SECONDS = 3600.0  # a client that asked for progress is answered when the run ends, or after this

STARTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
REMOVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
CANCELS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

SourceId = Annotated[str, Field(description="the collection's id (list_collections)", min_length=1, max_length=200)]
RunId = Annotated[
    str, Field(description="a run's id (add_source, refresh_source, list_runs)", min_length=1, max_length=64)
]
Include = Annotated[
    list[str] | None,
    Field(
        description="only paths matching one of these globs (URL paths for websites), e.g. 'docs/en/**'",
        max_length=50,
    ),
]
Exclude = Annotated[
    list[str] | None,
    Field(description="leave out paths matching one of these globs, e.g. '**/changelog/**'", max_length=50),
]


def _readable(run: IngestRun, run_id: str) -> IngestRun:
    """The run, if the caller may read its collection; else as unknown as a run that never was."""
    if run.source_id not in current_caller().access.read:
        raise NotFound(f"run_id {run_id!r} is not a recorded run (list_runs lists them)", argument="run_id")
    return run


def _followed(app: Thoth, run_id: str, progress: Report) -> Run:
    """A client that asked for progress (a progressToken) gets it until the run ends; others the run at once."""
    from thoth.writes import source_runs

    if not getattr(progress, "enabled", False):
        return Run.of(source_runs.get(app.store, run_id))

    def report(run: object) -> None:
        shown = Run.of(run)  # type: ignore[arg-type]
        progress(shown.files_done, shown.files_total or None, shown.render().splitlines()[0])

    return Run.of(source_runs.wait(app.store, run_id, report, WAIT_SECONDS))


def add_source(
    app: Thoth,
    uri: Annotated[
        str,
        Field(
            description="a website (https://host/prefix/), a git URL (optionally url#ref:path) or gs://bucket/prefix",
            min_length=1,
            max_length=2000,
        ),
    ],
    name: Annotated[
        str | None, Field(description="the collection's name (default: from the URI)", max_length=200)
    ] = None,
    include: Include = None,
    exclude: Exclude = None,
    ref: Annotated[
        str | None, Field(description="git: the branch, tag or commit (default: HEAD)", max_length=200)
    ] = None,
    *,
    progress: Report = silent,
    caller: str = "",
) -> Run:
    """Add a source (a website, git repository or bucket prefix) and start its first ingest run.

    Answers at once with the run's id (get_run follows it); a client that sent a progressToken gets progress
    and the finished run. The scope (include, exclude, a git path) is recorded: refresh_source applies it.
    """
    from thoth.writes import source_runs

    spec = source_runs.spec_from(uri, ref=ref, include=include, exclude=exclude)
    require_writer_of(source_runs.collection_of(spec, name)[0], "name")
    run = source_runs.add(app.store, app.settings, spec, name, caller=caller)
    return _followed(app, run.run_id, progress)


def refresh_source(app: Thoth, source: SourceId, *, progress: Report = silent, caller: str = "") -> Run:
    """Start a run that reads a source again as it was added (its scope and ref): changed files only.

    Answers at once with the run's id (get_run follows it); a client that sent a progressToken gets progress
    and the finished run.
    """
    from thoth.writes import source_runs

    require_writer_of(source, "source")
    run = source_runs.refresh(app.store, app.settings, source, caller=caller)
    return _followed(app, run.run_id, progress)


def remove_source(app: Thoth, source: SourceId) -> SourceRemoved:
    """Delete a source's collection: its documents, chunks, RAPTOR tree and what its runs remembered."""
    from thoth.writes import source_runs

    require_writer_of(source, "source")
    removed = source_runs.remove(app.store, app.settings, source)
    return SourceRemoved(source=removed.source_id, documents=removed.documents, chunks=removed.chunks)


def list_runs(
    app: Thoth,
    source: Annotated[str | None, Field(description="only this collection's runs", max_length=200)] = None,
    limit: Annotated[int, Field(description="runs to list, newest first", ge=1, le=200)] = 20,
) -> RunList:
    """List ingest runs, newest first: state, counts, failures and duration (every run of the job, bucket
    events, ingest_document writes and the runs started here)."""
    readable = current_caller().access.read
    runs = [r for r in app.store.recent_runs(source) if r.source_id in readable]
    return RunList(runs=[Run.of(r) for r in runs[:limit]])


def get_run(app: Thoth, run_id: RunId) -> Run:
    """One ingest run: its state (queued, running, done, failed, cancelled, interrupted, lost), files done of
    its plan, counts, failures with reasons, error and duration."""
    from thoth.writes import source_runs

    return Run.of(_readable(source_runs.get(app.store, run_id), run_id))


def cancel_run(app: Thoth, run_id: RunId) -> Run:
    """Stop a run after the batch it is writing: what it wrote stays whole, what it had not started is not
    written (as after a kill); a refresh_source later finishes the work."""
    from thoth.writes import source_runs

    require_writer_of(_readable(source_runs.get(app.store, run_id), run_id).source_id, "source")
    return Run.of(source_runs.cancel(app.store, app.settings, run_id))


def register(mcp: MCPServer, app: Thoth) -> None:
    who = {"caller": lambda: current_caller().who}
    expose(mcp, app, add_source, title="Add a source", annotations=STARTS, writer=True, bind=who)
    expose(mcp, app, refresh_source, title="Refresh a source", annotations=STARTS, writer=True, bind=who)
    expose(mcp, app, remove_source, title="Remove a source", annotations=REMOVES, writer=True)
    expose(mcp, app, list_runs, title="List ingest runs", annotations=READ_ONLY, writer=True)
    expose(mcp, app, get_run, title="Get an ingest run", annotations=READ_ONLY, writer=True)
    expose(mcp, app, cancel_run, title="Cancel an ingest run", annotations=CANCELS, writer=True)


TOOLSET = Toolset(
    "sources",
    register,
    instructions=(
        " A writer can add websites, git repositories and bucket prefixes with add_source (optionally scoped "
        "by include/exclude globs), follow the run with get_run, and refresh or remove sources."
    ),
)
