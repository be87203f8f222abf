"""Runs: what one has to do (`Plan`), what it did (`RunSummary`), and planning a whole run over a listing.

A run can be split among parallel tasks (Cloud Run Jobs): every task plans the whole source, then does
the share of the work whose content fingerprint hashes to its index, so identical bytes, and the content
a changed file leaves behind, are always handled by one task: N tasks write exactly the rows one would.
Parallel tasks leave the RAPTOR tree to a run with one task.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from thoth.gcs import split_gs_uri
from thoth.records import Document, Source
from thoth.source_ref import content_hash
from thoth.source_spec import SourceSpec, is_git_url
from thoth.writes import git_source, web
from thoth.writes.objects import SourceError, SourceObject, in_shard, is_sidecar
from thoth.writes.tree import TreeResult

if TYPE_CHECKING:  # the writer imports this module: the names are for signatures only
    from thoth.writes.writer import Writer

log = logging.getLogger("thoth.ingest")


@dataclass
class RunSummary:
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


def row_fingerprint(row: Document) -> str:
    return row.fingerprint or row.doc_id  # rows written before fingerprints: local sha256


@dataclass
class Plan:
    """What one run (or one task of it, or one object event) has to do."""

    source_id: str
    todo: list[SourceObject]  # new or changed files, in key order
    fingerprints: dict[str, str]  # key -> content fingerprint, for todo objects
    removed: list[str] = field(default_factory=list)  # keys whose documents rows go
    stale: set[str] = field(default_factory=set)  # doc ids whose content is listed nowhere any more
    replaced: dict[str, str] = field(default_factory=dict)  # changed key -> its stale doc id, dropped once written
    stored: set[str] = field(default_factory=set)  # doc ids whose chunks are in the table (status ok)
    referenced: set[str] = field(default_factory=set)  # doc ids whose chunks may now name a gone key/version
    sidecars: dict[str, SourceObject] = field(default_factory=dict)
    unchanged: int = 0
    tags: list[str] = field(default_factory=list)  # stored on every chunk written (ingest_document)
    known: set[str] = field(default_factory=set)  # keys the source had before: ingesting one updates it

    @property
    def empty(self) -> bool:
        return not (self.todo or self.removed or self.stale)


def slug(name: str) -> str:
    value = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not value:
        raise ValueError(f"source name {name!r} has no letters or digits")
    return value


def collection_name(source: str, name: str | None = None) -> str:
    """The collection a source goes into: `name` if given, else the bucket (one per bucket) or folder name."""
    if name:
        return name
    if source.startswith("gs://"):
        return split_gs_uri(source)[0]
    if is_git_url(source):  # a repository: its name
        return git_source.collection_name(source)
    if source.startswith(("http://", "https://")):  # a website: its host and path
        return web.collection_name(source)
    return source.rstrip("/").rsplit("/", 1)[-1]


def plan_run(
    writer: Writer, source_id: str, listing: list[SourceObject], *, only_missing: bool = False, by_key: bool = False
) -> Plan:
    """What one run (or this task's share of it) has to do to bring `source_id` in line with `listing`.

    `by_key`: the listing is already this task's share, split by key (a crawl split between parallel tasks,
    thoth/writes/web.py): it is planned against the stored documents of those keys only, and not split again."""
    sidecars = {o.key: o for o in listing if is_sidecar(o.key)}
    objects = [o for o in listing if not is_sidecar(o.key)]
    existing = writer.existing_documents(source_id)
    index, count = writer.settings.task_index, writer.settings.task_count
    others: dict[str, Document] = {}
    if by_key:  # other tasks' keys are theirs to keep, change or remove; their content stays listed
        others = {k: r for k, r in existing.items() if not in_shard(k, index, count)}
        existing = {k: r for k, r in existing.items() if k not in others}
        index, count = 0, 1
    fingerprints = {o.key: o.fingerprint or content_hash(o.read()) for o in objects}
    changed = {o.key for o in objects if writer.changed(o, existing.get(o.key), fingerprints[o.key], sidecars)}
    if only_missing:
        changed = {key for key in changed if key not in existing}
    removed = [] if only_missing else sorted(set(existing) - set(fingerprints))
    # content that leaves with a removed or changed file, unless some listed file still has it
    listed = set(fingerprints.values()) | {row_fingerprint(r) for r in others.values()}
    kept = {existing[k].doc_id for k in set(existing) & set(fingerprints) if k not in changed}
    kept |= {r.doc_id for r in others.values()}
    outdated = [o for o in objects if o.key in changed and writer.outdated(o, existing.get(o.key))]
    reparse = {existing[o.key].doc_id for o in outdated}
    leaving = [existing[k] for k in removed] + [existing[k] for k in sorted(changed) if k in existing]
    stale_rows = {r.doc_id: r for r in leaving if row_fingerprint(r) not in listed and r.doc_id not in kept}

    mine = [o for o in objects if in_shard(fingerprints[o.key], index, count)]
    stale = {d for d, r in stale_rows.items() if in_shard(row_fingerprint(r), index, count)}
    return Plan(
        source_id=source_id,
        todo=[o for o in mine if o.key in changed],
        fingerprints=fingerprints,
        removed=[k for k in removed if in_shard(row_fingerprint(existing[k]), index, count)],
        stale=stale,
        replaced={o.key: existing[o.key].doc_id for o in mine if o.key in existing and existing[o.key].doc_id in stale},
        stored={r.doc_id for r in existing.values() if r.status == "ok"} - set(stale_rows) - reparse,
        referenced={
            existing[k].doc_id
            for k in removed
            if existing[k].doc_id not in stale_rows and in_shard(row_fingerprint(existing[k]), index, count)
        },
        sidecars=sidecars,
        known=set(existing),
        unchanged=len(mine) - len([o for o in mine if o.key in changed]),
    )


@dataclass(frozen=True)
class Reingested:
    """One source ingested again: what its run did, or why it could not run."""

    source_id: str
    summary: RunSummary | None = None
    error: str = ""

    def to_dict(self) -> dict:
        return self.summary.to_dict() if self.summary else {"source_id": self.source_id, "error": self.error}


def reingest(writer: Writer, kind: str, started_by: str = "reindex") -> list[Reingested]:
    """Ingest again every source of `kind` from the URI it was ingested from; each run is recorded."""
    from thoth.writes.run_records import record_run, summarise  # it imports this module

    results = []
    for source in sorted(writer.store.find(Source, {"kind": kind}), key=lambda s: s.source_id):
        started_at = datetime.now(UTC)
        try:
            summary = writer.run(SourceSpec.of(source), name=source.name, source_id=source.source_id)
            results.append(Reingested(source.source_id, summary))
        except (SourceError, ValueError) as exc:  # that source is gone or unreadable; the others go on
            log.warning("reingest %s: %s", source.source_id, exc)
            results.append(Reingested(source.source_id, error=str(exc)))
        done = results[-1]
        summaries = [done.summary] if done.summary else []
        run = summarise(summaries, trigger="reindex", started_by=started_by, started_at=started_at, error=done.error)
        record_run(writer.store, dataclasses.replace(run, source_id=source.source_id))
    return results
