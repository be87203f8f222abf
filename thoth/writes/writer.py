"""Writing documents into the index: parse -> chunk -> embed -> write, then the source row and its tree.

The ingest job (`python -m ingest`: ingest/pipeline.py plans whole runs over a folder or bucket) and the
server's `ingest_document` (thoth/writes/documents.py) both write through this, so there is one way rows
are made.

Identity is content-derived, so a run is idempotent: a file that did not change
(same bytes locally, same generation in a bucket) is not read again, a changed
file's rows are replaced, a file gone from the source has its rows removed, and
identical bytes under two keys are stored once and known under both.

Crash safety: content listed nowhere any more is dropped first; a document's
`documents` row is written after its partitions and chunks, whose leftovers
from a killed run are deleted before they are written again. A run killed at
any point and started again ends with the same tables as one clean run.

A `stop` event (set by the SIGTERM handler of `python -m ingest`) ends the run after the
batch being written: files prepared but not yet written are left for the next run (they have
no `documents` row yet, so it sees them as to do), and so are the steps after the loop
(removals, index, source row).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from thoth.config import Settings
from thoth.embed import Embedder, get_embedder, get_tokenizer, resolve_model
from thoth.records import (
    Chunk as StoredChunk,  # a chunk as the index holds it (thoth.writes.chunking's is one being cut)
)
from thoth.records import Document, Partition, Source
from thoth.retrieval import citation_urls
from thoth.retrieval.source_ref import SourceRef, content_hash
from thoth.retrieval.summarise import tree_summariser
from thoth.store import Store
from thoth.writes import bibtex
from thoth.writes.chunking import Chunk, Chunker
from thoth.writes.objects import SourceError, SourceObject, sidecar_keys
from thoth.writes.overlap import OrderedWorker
from thoth.writes.parsers import TEXT_PARSERS, ParsedDocument, ParseError, Parsers
from thoth.writes.progress import Meter
from thoth.writes.tree import TreeParams, TreeResult, build_tree, mark_stale

log = logging.getLogger("thoth.ingest")

# Deterministic chunk ids: UUIDv5 of {collection}|{doc_hash}|{chunk_hash} in this namespace.
CHUNK_ID_NAMESPACE = uuid.UUID("5d1f3c9e-7a0b-5c7e-9f43-2b8d6e1a4c70")


@dataclass
class RunSummary:
    source_id: str
    ingested: list[str] = field(default_factory=list)
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


def _hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _sha256(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def _normalise(text: str) -> str:
    return " ".join(text.split())


def chunk_identity(collection: str, doc_id: str, index: int, text: str) -> tuple[str, str]:
    """(chunk_id, chunk_hash): the hash of the normalised chunk, the id a UUIDv5 that includes the collection."""
    chunk_hash = _sha256("chunk", doc_id, index, _normalise(text))
    return str(uuid.uuid5(CHUNK_ID_NAMESPACE, f"{collection}|{doc_id}|{chunk_hash}")), chunk_hash


def object_id(obj: SourceObject) -> str:
    """The research seed's per-object id: SHA-1 of gs://{bucket}/{key}?version_id={generation}."""
    return hashlib.sha1(f"{obj.uri}?version_id={obj.version or ''}".encode()).hexdigest()


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
    stored: set[str] = field(default_factory=set)  # doc ids whose chunks are in the table (status ok)
    referenced: set[str] = field(default_factory=set)  # doc ids whose chunks may now name a gone key/version
    sidecars: dict[str, SourceObject] = field(default_factory=dict)
    unchanged: int = 0
    tags: list[str] = field(default_factory=list)  # stored on every chunk written (ingest_document)

    @property
    def empty(self) -> bool:
        return not (self.todo or self.removed or self.stale)


@dataclass
class _Prepared:
    obj: SourceObject
    doc_id: str
    document: dict
    partitions: list[dict]
    chunks: list[Chunk]
    tags: list[str] = field(default_factory=list)


class Writer:
    """Writes documents of one source (or single objects of it) into one store.

    `parsers` reads the files: Markdown and plain text here; the ingest job's `Ingestor` adds PDFs and
    workshop repositories, and whole runs over a listed source.
    """

    parsers: Parsers = TEXT_PARSERS

    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self._embedder = embedder
        self.meter = Meter()  # progress reporting (thoth/writes/progress.py); `python -m ingest` sets a printing one

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings)
        return self._embedder

    # -- single objects (bucket events) ----------------------------------------------------------

    def ingest_object(
        self,
        source_id: str,
        obj: SourceObject,
        sidecars: dict[str, SourceObject],
        *,
        name: str,
        uri: str,
        kind: str | None = None,
        tags: list[str] | None = None,
    ) -> RunSummary:
        """Ingest one new or overwritten object; an unchanged one (a redelivered event) writes nothing."""
        existing = self._existing_documents(source_id)
        fingerprint = obj.fingerprint or content_hash(obj.read())
        row = existing.get(obj.key)
        plan = Plan(source_id, todo=[], fingerprints={obj.key: fingerprint}, sidecars=sidecars, tags=list(tags or []))
        if not self._changed(obj, row, fingerprint, sidecars):
            plan.unchanged = 1
            return self.execute(plan, name=name, uri=uri, kind=kind)
        others = {r.doc_id for k, r in existing.items() if k != obj.key}
        if row is not None and row_fingerprint(row) != fingerprint and row.doc_id not in others:
            plan.stale = {row.doc_id}
        plan.todo = [obj]
        plan.stored = {r.doc_id for r in existing.values() if r.status == "ok"} - plan.stale
        if self._outdated(obj, row):
            plan.stored.discard(row.doc_id)
        return self.execute(plan, name=name, uri=uri, kind=kind)

    def add_document(
        self, source_id: str, obj: SourceObject, *, name: str, uri: str, tags: list[str] | None = None
    ) -> RunSummary:
        """Add (or replace, by key) one document of a `text` source (ingest_document), then update its tree."""
        started = time.perf_counter()
        summary = self.ingest_object(source_id, obj, {}, name=name, uri=uri, kind="text", tags=tags)
        summary.tree = self.update_tree(source_id, policy="document")
        summary.seconds = time.perf_counter() - started
        return summary

    def update_tree(self, source_id: str, force: bool = False, policy: str = "run") -> TreeResult | None:
        """Bring the source's RAPTOR tree in line with its chunks: in place, or rebuilt (thoth/writes/tree.py
        says when); THOTH_TREE_BUILD=0 turns trees off, and a change then marks an existing one stale."""
        if not self.settings.tree_build:
            if mark_stale(self.store, source_id, "trees are switched off (THOTH_TREE_BUILD=0)"):
                return TreeResult(source_id, built=False, mode="stale", reason="THOTH_TREE_BUILD=0")
            return None
        tokenizer = get_tokenizer(self.settings)
        return build_tree(
            self.store,
            lambda: self.embedder,
            tokenizer,
            tree_summariser(self.settings, tokenizer),
            source_id,
            TreeParams.from_settings(self.settings),
            self._embedder.model_name if self._embedder else resolve_model(self.settings.embed_model).name,
            force=force,
            policy=policy,
            drift_max=self.settings.tree_drift_max,
        )

    def delete_object(self, source_id: str, key: str, version: str | None, *, name: str, uri: str) -> RunSummary:
        """Remove one object's rows; a stale event (another generation than the one stored) changes nothing."""
        existing = self._existing_documents(source_id)
        row = existing.get(key)
        plan = Plan(source_id, todo=[], fingerprints={})
        if row is None or (version and row.version and row.version != version):
            return self.execute(plan, name=name, uri=uri)
        others = {r.doc_id for k, r in existing.items() if k != key}
        plan.removed = [key]
        if row.doc_id in others:
            plan.referenced = {row.doc_id}
        else:
            plan.stale = {row.doc_id}
        return self.execute(plan, name=name, uri=uri)

    # -- doing the plan -------------------------------------------------------------------------

    def execute(
        self,
        plan: Plan,
        *,
        name: str | None,
        uri: str,
        kind: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> RunSummary:
        summary = RunSummary(plan.source_id, unchanged=plan.unchanged)
        if plan.empty:
            return summary  # nothing changed: nothing is written
        source_id = plan.source_id
        self.store.ensure_tables(self.embedder.dim)
        self.store.record_model(self.embedder.model_name, self.embedder.dim)

        # 1. content no listed file has any more goes first, so a killed run finds it stale again
        for doc_id in sorted(plan.stale):
            self.store.remove(StoredChunk, {"source_id": source_id, "doc_id": doc_id})
            self.store.remove(Partition, {"source_id": source_id, "doc_id": doc_id})

        # 2. new and changed files
        chunker = Chunker(get_tokenizer(self.settings), self.settings.chunk_tokens)
        stored = set(plan.stored)
        referenced = set(plan.referenced)
        batch: list[_Prepared] = []
        done = 0
        # Batches are embedded and written on one background thread, in order, while this one
        # parses and chunks the next files (thoth/writes/overlap.py).
        writer = OrderedWorker(lambda b: self._write(source_id, b))
        for done, obj in enumerate(plan.todo, start=1):
            if stop is not None and stop.is_set():
                summary.interrupted = True
                break
            prepared = self._prepare(plan, obj, chunker, stored)
            if prepared is not None:
                prepared.tags = list(plan.tags)
            if prepared is None:
                summary.failed.append((obj.key, "could not be read; the next run retries it"))
            elif prepared.document["status"] == "failed":
                summary.failed.append((obj.key, prepared.document["error"]))
            else:
                summary.ingested.append(obj.key)
                summary.pages += prepared.document.get("page_count") or 0
                if prepared.doc_id in stored:
                    referenced.add(prepared.doc_id)  # known content under a new key or generation
                stored.add(prepared.doc_id)
            if prepared is not None:
                batch.append(prepared)
            if sum(len(p.chunks) for p in batch) >= self.settings.ingest_batch_chunks:
                writer.submit(batch)
                batch = []
            if progress:
                progress(done, len(plan.todo), obj.key)
        if summary.interrupted:  # prepared files not written are not counted: the next run does them
            summary.chunks_written += writer.close()  # batches already handed over are written in full
            unwritten = {p.obj.key for p in batch}
            summary.ingested = [k for k in summary.ingested if k not in unwritten]
            summary.failed = [(k, r) for k, r in summary.failed if k not in unwritten]
            written = done - 1 - len(batch)
            log.warning(
                "ingest interrupted: %d of %d changed files written; run again to finish", written, len(plan.todo)
            )
            return summary
        writer.submit(batch)
        summary.chunks_written += writer.close()
        self.meter.stage("index")

        # 3. files gone from the source
        if plan.removed:
            self.store.remove(Document, {"source_id": source_id, "key": list(plan.removed)})
            summary.removed = list(plan.removed)
        # 4. chunks of content still known name a key and generation that exist
        for doc_id in sorted(referenced):
            self._repoint(source_id, doc_id)
        fold_in = self.store.fold_in_due()  # a few new chunks stay in the indexes' unindexed tail (a cheap write)
        if self.settings.task_index == 0:  # one task of a parallel job trains the ANN index, not every task
            self.store.ensure_vector_index(fold_in=fold_in)  # once the table passes THOTH_VECTOR_INDEX_MIN_ROWS
        self.store.ensure_fts_index(fold_in=fold_in)
        self._update_source(source_id, name, uri, kind)
        return summary

    # -- steps -------------------------------------------------------------------

    def _existing_documents(self, source_id: str) -> dict[str, Document]:
        """The source's documents by key (only what planning reads; a table without a column leaves its default)."""
        if not self.store.has(Document):
            return {}
        fields = ["key", "status", "version", "fingerprint", "sidecar", "parser"]
        return {doc.key: doc for doc in self.store.find(Document, {"source_id": source_id}, fields=fields)}

    @staticmethod
    def _sidecar(key: str, sidecars: dict[str, SourceObject]) -> SourceObject | None:
        return next((sidecars[k] for k in sidecar_keys(key) if k in sidecars), None)

    def _sidecar_fingerprint(self, key: str, sidecars: dict[str, SourceObject]) -> str:
        sidecar = self._sidecar(key, sidecars)
        if sidecar is None:
            return ""
        return sidecar.fingerprint or content_hash(sidecar.read())

    def _outdated(self, obj: SourceObject, row: Document | None) -> bool:
        """An older parser read this file: a run re-parses it once, whatever its bytes."""
        return row is not None and (row.parser or "") != self.parsers.version(obj.key, obj.format)

    def _changed(self, obj: SourceObject, row: Document | None, fingerprint: str, sidecars: dict) -> bool:
        if row is None or self._outdated(obj, row):
            return True
        if (row.sidecar or "") != self._sidecar_fingerprint(obj.key, sidecars):
            return True  # only the BibTeX changed: the document row is rewritten, its chunks are kept
        if obj.version is not None:
            return row.version != obj.version
        return row.doc_id != fingerprint

    def _prepare(self, plan: Plan, obj: SourceObject, chunker: Chunker, stored: set[str]) -> _Prepared | None:
        source_id = plan.source_id
        try:
            data = obj.read()
        except SourceError as exc:  # not the file's fault (gone, no access): no row, the next run retries
            log.warning("cannot read %s: %s", obj.key, exc)
            return None
        doc_id = content_hash(data)
        document = {
            "doc_id": doc_id,
            "source_id": source_id,
            "key": obj.key,
            "uri": obj.uri,
            "bucket": obj.bucket,
            "version": obj.version,
            "byte_size": len(data),
            "status": "ok",
            "ingested_at": datetime.now(UTC),
            "object_id": object_id(obj),
            "fingerprint": plan.fingerprints.get(obj.key) or obj.fingerprint or doc_id,
            "sidecar": self._sidecar_fingerprint(obj.key, plan.sidecars),
            "parser": self.parsers.version(obj.key, obj.format),
        }
        try:
            parsed: ParsedDocument = self.parsers.parse(
                obj.key, data, pdf_password=self.settings.pdf_password or None, fmt=obj.format
            )
        except ParseError as exc:
            log.warning("skipped %s: %s", obj.key, exc)
            document.update(status="failed", error=str(exc))
            return _Prepared(obj, doc_id, document, [], [])
        except Exception as exc:  # a parser bug must not stop the run; record it and go on
            log.exception("parser failed on %s", obj.key)
            document.update(status="failed", error=f"parser error: {type(exc).__name__}: {exc}")
            return _Prepared(obj, doc_id, document, [], [])
        if parsed.url:  # a URL the file claims for itself (front matter): citations show it, so the rule applies
            try:
                citation_urls.check(parsed.url, "the front matter url", self.settings)
            except citation_urls.CitationUrlError as exc:
                log.warning("skipped %s: %s", obj.key, exc)
                document.update(status="failed", error=str(exc))
                return _Prepared(obj, doc_id, document, [], [])
        fields = bibtex.describe(parsed, fallback_title=parsed.title)
        document.update(
            title=fields["title"],
            authors=fields["authors"],
            year=fields["year"],
            page_count=parsed.page_count,
            url=parsed.url,
            **self._bibtex(plan, obj, fields, doc_id),
        )
        if doc_id in stored:  # identical bytes already stored: only the key (or generation) is new
            return _Prepared(obj, doc_id, document, [], [])
        partitions = [
            {
                "partition_id": _hash(source_id, doc_id, i, _normalise(p.text)),
                "partition_hash": _sha256("partition", doc_id, i, _normalise(p.text)),
                "doc_id": doc_id,
                "source_id": source_id,
                "ordinal": i,
                "kind": p.kind,
                "heading_path": " > ".join(p.heading_path),
                "page_start": p.page_start,
                "page_end": p.page_end,
                "text": p.text,
                "exercise_number": p.exercise_number,
                "step_number": p.step_number,
                "path": p.path,
                "is_diff": p.is_diff,
            }
            for i, p in enumerate(parsed.partitions)
        ]
        return _Prepared(obj, doc_id, document, partitions, chunker.chunk(fields["title"], parsed.partitions))

    def _bibtex(self, plan: Plan, obj: SourceObject, fields: dict, doc_id: str) -> dict:
        sidecar = self._sidecar(obj.key, plan.sidecars)
        if sidecar is not None:
            try:
                text = bibtex.read_sidecar(sidecar.read())
            except SourceError as exc:
                text = None
                log.warning("cannot read %s: %s", sidecar.key, exc)
            if text:
                return {"bibtex": text, "bibtex_source": "sidecar"}
            log.warning("%s holds no BibTeX entry; generating one for %s", sidecar.key, obj.key)
        entry = bibtex.make_entry(fields, doc_id, note=self._ref(plan.source_id, obj).base)
        return {"bibtex": entry, "bibtex_source": "generated"}

    @staticmethod
    def _ref(source_id: str, obj: SourceObject, page: int | None = None) -> SourceRef:
        return SourceRef(obj.bucket or source_id, obj.key, obj.version, page)

    def _write(self, source_id: str, batch: list[_Prepared]) -> int:
        if not batch:
            return 0
        chunks = [(p, i, c) for p in batch for i, c in enumerate(p.chunks)]
        vectors = self.embedder.embed([c.embed_text for _, _, c in chunks])
        rows = []
        for (prepared, index, chunk), vector in zip(chunks, vectors, strict=True):
            doc, partition = prepared.document, prepared.partitions[chunk.partition_index]
            chunk_id, chunk_hash = chunk_identity(source_id, prepared.doc_id, index, chunk.text)
            rows.append(
                {
                    "chunk_id": chunk_id,
                    "chunk_hash": chunk_hash,
                    "doc_id": prepared.doc_id,
                    "source_id": source_id,
                    "partition_id": partition["partition_id"],
                    "partition_hash": partition["partition_hash"],
                    "chunk_index": index,
                    "key": doc["key"],
                    "title": doc["title"],
                    "section": chunk.context,
                    "text": chunk.text,
                    "search_text": f"{chunk.context}\n{chunk.text}",
                    "vector": vector,
                    "page_start": chunk.page_start,
                    "page_end": chunk.page_end,
                    "content_type": chunk.content_type,
                    "language": chunk.language,
                    "exercise_number": partition["exercise_number"],
                    "step_number": partition["step_number"],
                    "tags": prepared.tags,
                    "source_ref": str(self._ref(source_id, prepared.obj, chunk.page_start)),
                }
            )
        written = [p.doc_id for p in batch if p.partitions]
        if written:  # rows a killed earlier run may have left for these documents
            scope = {"source_id": source_id, "doc_id": list(written)}
            self.store.remove(StoredChunk, scope)
            self.store.remove(Partition, scope)
        self.store.insert(Partition, [row for p in batch for row in p.partitions])
        self.store.insert(StoredChunk, rows)
        self.meter.add_chunks(len(rows))
        keys = [p.obj.key for p in batch]
        self.store.remove(Document, {"source_id": source_id, "key": list(keys)})
        self.store.insert(Document, [p.document for p in batch])
        return len(rows)

    def _repoint(self, source_id: str, doc_id: str) -> None:
        """Chunks carry one key and generation of their content: keep them pointing at one that exists."""
        scope = {"source_id": source_id, "doc_id": doc_id}
        documents = self.store.find(Document, {**scope, "status": "ok"}, fields=["key", "bucket", "version"])
        current = self.store.first(StoredChunk, scope, fields=["key", "source_ref"])
        if not documents or current is None:
            return
        by_key = {d.key: d for d in documents}
        document = by_key.get(current.key) or by_key[min(by_key)]
        base = SourceRef(document.bucket or source_id, document.key, document.version).base
        if current.key != document.key or current.source_ref.split("#")[0] != base:
            self.store.repoint_chunks(source_id, doc_id, document.key, base)

    def _describe_folder(self, local: Path) -> tuple[str, str | None, str] | None:
        """(kind, product, title) a folder's own description gives its source (workshops), or None."""
        return None

    def _has_diffs(self, source_id: str) -> bool:
        return self.store.count_of(Partition, {"source_id": source_id, "is_diff": True}) > 0

    def _update_source(self, source_id: str, name: str | None, uri: str, kind: str | None) -> None:
        previous = self.store.first(Source, {"source_id": source_id}) or Source(source_id)
        kind = kind or previous.kind or "pdf"
        product = previous.product
        local = None if "://" in uri else Path(uri).expanduser().resolve()
        about = self._describe_folder(local) if local is not None else None
        if about is not None:
            kind, product, name = about
        written: tuple[int, int] | None = None
        # Parallel tasks each write the counts they see; the one that writes last recounts after writing
        # and writes again if another task added rows meanwhile, so the final row holds the final counts.
        for _ in range(5):
            counts = (
                self.store.count_of(Document, {"source_id": source_id, "status": "ok"}),
                self.store.count_of(StoredChunk, {"source_id": source_id}),
            )
            if counts == written:
                return
            self.store.upsert_source(
                {
                    "source_id": source_id,
                    "name": name or source_id,
                    "kind": kind,
                    "uri": str(local) if local is not None else uri,  # absolute, so a reindex finds it again
                    "product": product,
                    "has_diffs": self._has_diffs(source_id) if kind == "workshop" else previous.has_diffs,
                    "has_tree": previous.has_tree,
                    "document_count": counts[0],
                    "chunk_count": counts[1],
                    "embed_model": self.embedder.model_name,
                    "updated_at": datetime.now(UTC),
                }
            )
            written = counts


__all__ = ["Writer", "RunSummary", "Plan", "chunk_identity", "row_fingerprint"]
