"""The ingest job's command line, `thoth ingest` (also `python -m ingest`); `--help` says what each command
does, README's "Exit codes" what it returns. A recorded run (`--run-id`) that cancel_run stopped exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime

from tqdm import tqdm

from thoth.config import ConfigError, Settings
from thoth.embed import EmbedderUnavailable
from thoth.embedders import loaded_embedders
from thoth.embedders.remote import RemoteEmbedder
from thoth.gcs import StorageUnavailable
from thoth.logs import setup_logging
from thoth.records import IngestRun, Source
from thoth.source_spec import ScopeError, SourceSpec, slug
from thoth.store import Store, StoreError
from thoth.store.maintenance import maintain
from thoth.writes.objects import SourceError
from thoth.writes.progress import ProgressMeter
from thoth.writes.run_records import RunSummary, finish, record_run, summarise
from thoth.writes.run_watch import RunWatch
from thoth.writes.writer import Writer

log = logging.getLogger("thoth.ingest")
PROGRESS_SECONDS = 5.0  # a JSON progress line this often when stderr is not a terminal (a Cloud Run log)


def stop_on_signals(stop: threading.Event) -> dict[int, int]:
    """SIGTERM/SIGINT set `stop` (the run ends after its current batch), a second one stops at once; returns
    {signal number: exit code} filled in as signals arrive."""
    received: dict[int, int] = {}

    def handle(signum: int, _frame: object) -> None:
        if stop.is_set():  # asked twice: do not wait for the batch
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
        received[signum] = 128 + signum
        log.warning("%s received: stopping after the current batch", signal.Signals(signum).name)
        stop.set()

    if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, handle)
    return received


def main(argv: list[str] | None = None, prog: str = "python -m ingest", **tuning: object) -> int:
    """The job; `tuning` passes the per-index Settings fields no variable sets (a test's small trees)."""
    parser = argparse.ArgumentParser(prog=prog, description="Ingest a folder or a bucket prefix into Thoth's index.")
    parser.add_argument(
        "command",
        nargs="?",
        choices=["run", "missing", "maintain", "cancel", "remove", "document"],
        default="run",
        help="run: sync the collection with the source (default); missing: ingest only files it lacks; "
        "maintain: compact the index and clean its old versions; cancel: ask the recorded run --run-id to stop "
        "after its current batch; remove: delete the collection --name (documents, chunks, tree); document: "
        "ingest_document's long text staged in --document (a recorded run the server started)",
    )
    parser.add_argument(
        "--source",
        help="a folder or gs://bucket/prefix of documents, a website (https://host/prefix/: crawled within the "
        "prefix) or a git repository (a git URL, or a local clone with --ref); see docs/sources.md",
    )
    parser.add_argument("--ref", help="git sources: the branch, tag or commit to read (default: HEAD)")
    parser.add_argument(
        "--path", help="git sources: only this folder of the repository (as `url#ref:path`); keys keep the full path"
    )
    parser.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="only files (or the web's URL paths) matching this glob, e.g. 'docs/en/**' (repeatable)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="leave out files matching this glob, e.g. '**/changelog/**' (repeatable); the scope given is "
        "recorded with the collection, and a run given none applies the recorded one (docs/sources.md)",
    )
    parser.add_argument("--db", help="database URI (folder or gs://bucket/prefix); default THOTH_DB_URI")
    parser.add_argument(
        "--name", help="collection name (default: the bucket's or folder's name); its slug is the collection id"
    )
    parser.add_argument(
        "--rebuild-trees",
        action="store_true",
        help="rebuild RAPTOR trees from scratch (the source's; without --source, every collection's)",
    )
    parser.add_argument(
        "--reembed",
        action="store_true",
        help="re-embed the index's stored chunk and tree-node text with the configured model (no source is "
        "read), then switch the index to it in one step; stopped, the same command continues (docs/models.md)",
    )
    parser.add_argument(
        "--run-id",
        help="the recorded run this is (add_source, refresh_source): its progress and end are written to it, "
        "and cancel_run stops it",
    )
    parser.add_argument("--document", help=argparse.SUPPRESS)  # a staged ingest_document (JSON), with `document`
    parser.add_argument("--trigger", default="job", help=argparse.SUPPRESS)  # what started a recorded run
    parser.add_argument("--started-by", default="", help=argparse.SUPPRESS)  # and who
    args = parser.parse_args(argv)
    if args.reembed and (args.source or args.rebuild_trees or args.command != "run"):
        parser.error("--reembed takes no --source, --rebuild-trees or command: it re-embeds the whole index")
    if args.command == "cancel" and not args.run_id:
        parser.error("cancel needs --run-id")
    if args.command == "document" and not (args.document and args.run_id):
        parser.error("document needs --document and --run-id")
    if args.command == "remove" and not args.name:
        parser.error("remove needs --name (the collection's id)")
    if not args.source and not args.rebuild_trees and not args.reembed and args.command in ("run", "missing"):
        parser.error("--source is required (or --rebuild-trees alone, to rebuild every collection's tree)")

    try:
        # a job writes beside other tasks: it reads each table's latest version, never one up to
        # READ_CONSISTENCY_SECONDS old (a source row's counts recounted from a stale documents table)
        fresh = {"read_consistency_seconds": 0.0, **tuning}
        settings = Settings.from_env(**fresh, **({"db_uri": args.db} if args.db else {}))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings)
    if args.command == "document":
        return ingest_staged(settings, args.document, args.run_id, args.started_by)
    stop = threading.Event()
    try:
        if args.command == "maintain":
            return run_maintenance(settings)
        if args.command in ("cancel", "remove"):
            return manage(settings, args.command, args.run_id, args.name)
        received = stop_on_signals(stop)
        if args.reembed:
            return reembed_index(settings, stop, received)
        if not args.source:
            return rebuild_trees(settings)
    except (StoreError, EmbedderUnavailable, ValueError) as exc:  # the index or the model failed the command
        return _print_error(exc)
    try:
        spec = SourceSpec.parse(args.source, ref=args.ref, path=args.path, include=args.include, exclude=args.exclude)
    except ScopeError as exc:
        _print_error(exc)
        return 1 if exc.argument == "source" else 2  # a source that is not there, or a bad scope argument
    writer = Writer(settings)
    source_id = _source_id(spec, args.name)
    started_at = datetime.now(UTC)
    started_by = f"{prog} {args.command} (task {settings.task_index + 1}/{settings.task_count})"
    recorded = IngestRun(
        args.run_id or "", source_id, args.trigger, args.started_by or started_by, started_at, uri=spec.uri
    )
    watch = RunWatch(writer.store, recorded, stop) if args.run_id else None
    bar = tqdm(unit="file", disable=None) if sys.stderr.isatty() else None
    # no terminal (a Cloud Run Job's log): a JSON line every PROGRESS_SECONDS instead of the bar
    writer.meter = meter = ProgressMeter(PROGRESS_SECONDS, printing=bar is None)

    def progress(done: int, total: int, key: str) -> None:
        meter(done, total, key)
        if watch is not None:
            watch.progress(done, total)
        if bar is not None:
            bar.total = total
            bar.set_postfix_str(key[-40:], refresh=False)
            bar.update(done - bar.n)

    try:
        with watch or nullcontext(), meter:
            if stop.is_set():  # cancelled before it started: nothing listed, nothing written
                summary = RunSummary(source_id, interrupted=True)
            else:
                summary = writer.run(
                    spec, name=args.name, progress=progress, stop=stop, only_missing=args.command == "missing"
                )
            if args.rebuild_trees and not summary.interrupted and settings.task_count <= 1:
                meter.stage("tree")
                summary.tree = writer.update_tree(summary.source_id, force=True)
    except (SourceError, StoreError, StorageUnavailable, EmbedderUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        failed = summarise([], trigger="job", started_by=started_by, started_at=started_at, error=str(exc))
        if watch is not None:
            finish(writer.store, watch.run_id, failed)
        elif isinstance(exc, (SourceError, ValueError)):  # the index is there to record it (never created for it)
            record_run(writer.store, replace(failed, source_id=source_id), existing=True)
        return 1
    finally:
        if bar is not None:
            bar.close()
    run = summarise([summary], trigger="job", started_by=started_by, started_at=started_at)
    if watch is not None:
        finish(writer.store, watch.run_id, run, cancelled=watch.cancelled)
    else:
        record_run(writer.store, run)
    print(summary.render())
    _print_sent()
    if summary.interrupted:
        code = 0 if watch is not None and watch.cancelled else next(iter(received.values()), 143)
        log.warning(
            "ingest stopped early (%s); exit code %d; run again to finish",
            "cancelled" if code == 0 else "a signal",
            code,
        )
        return code
    return 0


def _print_error(exc: Exception) -> int:
    """The one `error:` line a failed command ends with; its exit code."""
    print(f"error: {exc}", file=sys.stderr)
    return 1


def _print_sent() -> None:
    """What each remote embedding endpoint (paid, or rate-limited) was sent."""
    for embedder in loaded_embedders():
        if isinstance(embedder, RemoteEmbedder):
            print(embedder.sent.render(f"{embedder.provider} ({embedder.model})"))


def _source_id(spec: SourceSpec, name: str | None) -> str:
    """The collection a run that failed before planning was for (as Writer.run names it)."""
    try:
        return slug(name or spec.collection_name)
    except ValueError:  # a name without letters or digits: the run failed on that
        return ""


def rebuild_trees(settings: Settings) -> int:
    """Rebuild every collection's tree from scratch (`--rebuild-trees` without `--source`)."""
    writer = Writer(settings)
    if not writer.store.has(Source):
        raise StoreError("the index has no collections yet: run `python -m ingest --source ...` first")
    for source in sorted(writer.store.find(Source, fields=[]), key=lambda s: s.source_id):
        result = writer.update_tree(source.source_id, force=True)
        print(result.render() if result else f"tree {source.source_id}: trees are off (THOTH_TREES=off)")
    return 0


def reembed_index(settings: Settings, stop: threading.Event, received: dict[int, int]) -> int:
    """`--reembed` (thoth/writes/reembed.py); stopped before the switch, it exits as a signal says."""
    from thoth.writes.reembed import reembed

    result = reembed(settings, stop=stop)
    print(result.render())
    _print_sent()
    return next(iter(received.values()), 143) if result.interrupted else 0


def manage(settings: Settings, command: str, run_id: str | None, source_id: str | None) -> int:
    """`cancel` and `remove`: what a Cloud Run service, which only reads the index, has the job do for
    cancel_run and remove_source."""
    from thoth.writes import source_runs

    store = Store(settings)
    if command == "cancel":
        source_runs.flag_cancel(store, run_id or "")
        print(f"run {run_id}: asked to stop after its current batch")
    else:
        source_runs.remove_collection(store, source_id or "")
        print(f"collection {source_id}: removed")
    return 0


def ingest_staged(settings: Settings, staged: str, run_id: str, started_by: str) -> int:
    """`document`: the long text an `ingest_document` call staged, ingested as its recorded run."""
    from pathlib import Path

    from thoth.writes.documents import TEXT_URI, ingest_text

    path = Path(staged)
    document = json.loads(path.read_text())  # ingest_text's arguments: dataset_id, content, source, tags
    writer = Writer(settings)
    started_at = datetime.now(UTC)
    recorded = IngestRun(run_id, document["dataset_id"], "document", started_by, started_at, uri=TEXT_URI)
    try:
        with RunWatch(writer.store, recorded, threading.Event()):
            _, summary = ingest_text(writer, writer.store, **document, started_by=started_by, record=False)
    except (StoreError, EmbedderUnavailable, ValueError) as exc:
        _print_error(exc)
        failed = summarise([], trigger="document", started_by=started_by, started_at=started_at, error=str(exc))
        finish(writer.store, run_id, failed)
        return 1
    finally:
        path.unlink(missing_ok=True)
    finish(writer.store, run_id, summarise([summary], trigger="document", started_by=started_by, started_at=started_at))
    print(summary.render())
    return 0


def run_maintenance(settings: Settings) -> int:
    """`maintain`: compact, clean and re-index the whole index; print what it removed."""
    store = Store(settings)
    if not store.tables.names():
        raise StoreError(f"there is no index at {settings.db_uri} yet")
    print(maintain(store).render())
    return 0
