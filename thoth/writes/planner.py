"""Planning a write: one pure function, `plan`, from a source's stored documents and a listing to a `Plan`,
for a whole run, a parallel task's share of one, and an object event (the writer does the plan).

Parallel tasks (Cloud Run Jobs) each plan the whole source, then do the work whose content fingerprint
hashes to their index: identical bytes, and the content a changed file leaves behind, are always one task's,
so N tasks write exactly the rows one would.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from thoth.records import Document
from thoth.source_ref import content_hash
from thoth.writes.objects import SourceObject, in_shard, is_sidecar
from thoth.writes.parsers import parser_version
from thoth.writes.prepare import sidecar_fingerprint


@dataclass(frozen=True)
class Plan:
    """What one run (or one task of it, or one object event) has to do."""

    source_id: str
    todo: list[SourceObject] = field(default_factory=list)  # new or changed files, in key order
    fingerprints: dict[str, str] = field(default_factory=dict)  # key -> content fingerprint, for todo objects
    removed: list[str] = field(default_factory=list)  # keys whose documents rows go
    stale: set[str] = field(default_factory=set)  # doc ids whose content is listed nowhere any more
    replaced: dict[str, str] = field(default_factory=dict)  # changed key -> its stale doc id, dropped once written
    stored: set[str] = field(default_factory=set)  # doc ids whose chunks are in the table (status ok)
    referenced: set[str] = field(default_factory=set)  # doc ids whose chunks may now name a gone key/version
    sidecars: dict[str, SourceObject] = field(default_factory=dict)
    unchanged: int = 0
    tags: tuple[str, ...] = ()  # stored on every chunk written (ingest_document)
    known: set[str] = field(default_factory=set)  # keys the source had before: ingesting one updates it

    @property
    def empty(self) -> bool:
        return not (self.todo or self.removed or self.stale)


def row_fingerprint(row: Document) -> str:
    return row.fingerprint or row.doc_id  # rows written before fingerprints: local sha256


def outdated(obj: SourceObject, row: Document | None) -> bool:
    """An older parser read this file: a run re-parses it once, whatever its bytes."""
    return row is not None and (row.parser or "") != parser_version(obj.key, obj.format)


def changed(obj: SourceObject, row: Document | None, fingerprint: str, sidecars: dict[str, SourceObject]) -> bool:
    if row is None or outdated(obj, row):
        return True
    if (row.sidecar or "") != sidecar_fingerprint(obj.key, sidecars):
        return True  # only the BibTeX changed: the document row is rewritten, its chunks are kept
    if obj.version is not None:
        return row.version != obj.version
    return row.doc_id != fingerprint


def plan(
    source_id: str,
    documents: dict[str, Document],
    listing: list[SourceObject],
    *,
    keys: Collection[str] | None = None,
    task: tuple[int, int] = (0, 1),
    by_key: bool = False,
    only_missing: bool = False,
    tags: Collection[str] = (),
) -> Plan:
    """What it takes to bring the source's stored `documents` (by key) in line with `listing`.

    The listing speaks for every stored key, or only for `keys` (an object event: its object, or nothing for
    a delete), or, `by_key`, for parallel task `task`'s keys (a crawl split by key, thoth/writes/web.py). A
    key it does not speak for keeps its document and its content. Otherwise `task` splits the work by
    content fingerprint. `only_missing` plans only keys the source does not have yet."""
    index, count = task
    if by_key:
        keys, index, count = {k for k in documents if in_shard(k, index, count)}, 0, 1
    others = {k: r for k, r in documents.items() if keys is not None and k not in keys}
    existing = {k: r for k, r in documents.items() if k not in others}
    sidecars = {o.key: o for o in listing if is_sidecar(o.key)}
    objects = [o for o in listing if not is_sidecar(o.key)]
    fingerprints = {o.key: o.fingerprint or content_hash(o.read()) for o in objects}
    todo_keys = {o.key for o in objects if changed(o, existing.get(o.key), fingerprints[o.key], sidecars)}
    if only_missing:
        todo_keys = {key for key in todo_keys if key not in existing}
    removed = [] if only_missing else sorted(set(existing) - set(fingerprints))
    # content that leaves with a removed or changed file, unless some listed file still has it
    listed = set(fingerprints.values()) | {row_fingerprint(r) for r in others.values()}
    kept = {existing[k].doc_id for k in set(existing) & set(fingerprints) if k not in todo_keys}
    kept |= {r.doc_id for r in others.values()}
    reparse = {existing[o.key].doc_id for o in objects if o.key in todo_keys and outdated(o, existing.get(o.key))}
    leaving = [existing[k] for k in removed] + [existing[k] for k in sorted(todo_keys) if k in existing]
    stale_rows = {r.doc_id: r for r in leaving if row_fingerprint(r) not in listed and r.doc_id not in kept}
    # content other tasks of a split crawl may be changing is not reused; an event's source is all there
    reusable = existing.values() if by_key else documents.values()

    mine = [o for o in objects if in_shard(fingerprints[o.key], index, count)]
    stale = {d for d, r in stale_rows.items() if in_shard(row_fingerprint(r), index, count)}
    todo = [o for o in mine if o.key in todo_keys]
    return Plan(
        source_id=source_id,
        todo=todo,
        fingerprints=fingerprints,
        removed=[k for k in removed if in_shard(row_fingerprint(existing[k]), index, count)],
        stale=stale,
        replaced={o.key: existing[o.key].doc_id for o in mine if o.key in existing and existing[o.key].doc_id in stale},
        stored={r.doc_id for r in reusable if r.status == "ok"} - set(stale_rows) - reparse,
        referenced={
            existing[k].doc_id
            for k in removed
            if existing[k].doc_id not in stale_rows and in_shard(row_fingerprint(existing[k]), index, count)
        },
        sidecars=sidecars,
        unchanged=len(mine) - len(todo),
        tags=tuple(tags),
        known=set(existing),
    )
