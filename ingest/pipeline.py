"""The ingest job's runs: list a source, plan what changed, and hand the work to the core's writer.

`thoth.writes.writer.Writer` parses, chunks, embeds and writes (the server's `ingest_document`
uses it too); this module adds what only the job does: list a folder or bucket (ingest/sources.py),
read PDFs and workshop repositories (ingest/parsers), plan a whole run, and split it among parallel
tasks (Cloud Run Jobs): every task plans the whole source, then does the share of the work whose
content fingerprint hashes to its index, so files with identical bytes, and the content a changed
file leaves behind, are always handled by one task; N tasks write exactly the rows one task would.

After a run has written its documents, the source's RAPTOR tree is rebuilt if its chunks changed
(thoth/writes/tree.py); a run that changed nothing writes nothing, the tree included. Parallel tasks leave
the tree to a run with one task, which builds it after every document is written.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ingest.parsers import PARSERS, workshop
from ingest.sources import SourceError, list_all
from thoth.gcs import split_gs_uri
from thoth.records import Chunk, Source
from thoth.retrieval.source_ref import content_hash
from thoth.writes.objects import SourceObject, is_sidecar
from thoth.writes.parsers import MARKDOWN_SUFFIXES, PDF_SUFFIXES
from thoth.writes.tree import mark_stale
from thoth.writes.writer import Plan, RunSummary, Writer, chunk_identity, row_fingerprint

log = logging.getLogger("thoth.ingest")


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
    return source.rstrip("/").rsplit("/", 1)[-1]


def in_shard(fingerprint: str, index: int, count: int) -> bool:
    return count <= 1 or int(hashlib.sha256(fingerprint.encode()).hexdigest()[:12], 16) % count == index


def _source_kind(keys: list[str]) -> str:
    suffixes = {k.rsplit(".", 1)[-1].lower() for k in keys}
    if suffixes & {s.lstrip(".") for s in MARKDOWN_SUFFIXES}:
        return "handbook"
    if suffixes & {s.lstrip(".") for s in PDF_SUFFIXES}:
        return "pdf"
    return "text"


class Ingestor(Writer):
    """Ingests one source (or single objects of it) into one store, with every parser the job has."""

    parsers = PARSERS

    # -- whole runs -------------------------------------------------------------------------

    def run(
        self,
        source: str,
        name: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        stop: threading.Event | None = None,
        source_id: str | None = None,
        *,
        only_missing: bool = False,
    ) -> RunSummary:
        """Bring the collection in line with `source`; `only_missing` ingests only keys it does not know yet.

        The collection is `source_id` if given, else the slug of `name`, else of the bucket's or folder's name.
        """
        started = time.perf_counter()
        listing = list_all(source, self.settings)
        if name is None and source.startswith("gs://"):
            name = collection_name(source)  # one collection per bucket, named after it
        plan = self.plan(source_id or slug(collection_name(source, name)), listing, only_missing=only_missing)
        log.info(
            "source %s: %d files, %d to ingest, %d removed",
            plan.source_id,
            len(listing) - len(plan.sidecars),
            len(plan.todo),
            len(plan.removed),
        )
        kind = _source_kind([o.key for o in listing]) if listing else None
        summary = self.execute(plan, name=name, uri=source, kind=kind, progress=progress, stop=stop)
        if plan.empty and self.settings.task_index == 0 and self.store.has(Chunk):
            self.store.ensure_fts_index(fold_in=False)  # migrates an index built before word positions
        if self.settings.task_count > 1:
            summary.task = f"{self.settings.task_index + 1}/{self.settings.task_count}"
            if plan.removed or plan.stale:  # the tree still quotes the text that went: keep readers off it
                mark_stale(self.store, plan.source_id, "documents removed by a parallel run; the next run rebuilds it")
        elif not summary.interrupted:  # the tree once every document is written (one task: this one)
            self.meter.stage("tree")
            summary.tree = self.update_tree(plan.source_id)
        summary.seconds = time.perf_counter() - started
        return summary

    def plan(self, source_id: str, listing: list[SourceObject], *, only_missing: bool = False) -> Plan:
        sidecars = {o.key: o for o in listing if is_sidecar(o.key)}
        objects = [o for o in listing if not is_sidecar(o.key)]
        existing = self._existing_documents(source_id)
        fingerprints = {o.key: o.fingerprint or content_hash(o.read()) for o in objects}
        changed = {o.key for o in objects if self._changed(o, existing.get(o.key), fingerprints[o.key], sidecars)}
        if only_missing:
            changed = {key for key in changed if key not in existing}
        removed = [] if only_missing else sorted(set(existing) - set(fingerprints))
        # content that leaves with a removed or changed file, unless some listed file still has it
        listed = set(fingerprints.values())
        kept = {existing[k].doc_id for k in set(existing) & set(fingerprints) if k not in changed}
        outdated = [o for o in objects if o.key in changed and self._outdated(o, existing.get(o.key))]
        reparse = {existing[o.key].doc_id for o in outdated}
        leaving = [existing[k] for k in removed] + [existing[k] for k in sorted(changed) if k in existing]
        stale_rows = {r.doc_id: r for r in leaving if row_fingerprint(r) not in listed and r.doc_id not in kept}

        index, count = self.settings.task_index, self.settings.task_count
        mine = [o for o in objects if in_shard(fingerprints[o.key], index, count)]
        return Plan(
            source_id=source_id,
            todo=[o for o in mine if o.key in changed],
            fingerprints=fingerprints,
            removed=[k for k in removed if in_shard(row_fingerprint(existing[k]), index, count)],
            stale={d for d, r in stale_rows.items() if in_shard(row_fingerprint(r), index, count)},
            stored={r.doc_id for r in existing.values() if r.status == "ok"} - set(stale_rows) - reparse,
            referenced={
                existing[k].doc_id
                for k in removed
                if existing[k].doc_id not in stale_rows and in_shard(row_fingerprint(existing[k]), index, count)
            },
            sidecars=sidecars,
            unchanged=len(mine) - len([o for o in mine if o.key in changed]),
        )

    def _describe_folder(self, local: Path) -> tuple[str, str | None, str] | None:
        if not workshop.is_workshop(local):
            return None
        about = workshop.info(local)
        return "workshop", about.product, about.title  # --name sets the id, never the title


def reingest(ingestor: Ingestor, kind: str) -> list[dict]:
    """Ingest again every source of `kind` from the URI it was ingested from; one summary (or error) each."""
    results = []
    for source in sorted(ingestor.store.find(Source, {"kind": kind}), key=lambda s: s.source_id):
        try:
            summary = ingestor.run(source.uri, name=source.name, source_id=source.source_id)
            results.append(summary.to_dict())
        except (SourceError, ValueError) as exc:  # that source is gone or unreadable; the others go on
            log.warning("reingest %s: %s", source.source_id, exc)
            results.append({"source_id": source.source_id, "error": str(exc)})
    return results


__all__ = ["Ingestor", "RunSummary", "Plan", "slug", "collection_name", "chunk_identity", "reingest"]
