"""The ingest run: plan (what changed) -> parse -> chunk -> embed -> write.

Identity is content-derived, so a run is idempotent: a file whose bytes did not
change is not read again, a changed file's rows are replaced, a file gone from
the source has its rows removed. A document's `documents` row is written after
its chunks and partitions, and a document's old rows are deleted before new
ones are added, so a run killed halfway and started again ends with the same
tables as one clean run.

A `stop` event (set by the SIGTERM handler of `python -m ingest`) ends the run after the
batch being written: files prepared but not yet written are left for the next run (they have
no `documents` row yet, so it sees them as to do), and so are the steps after the loop
(removals, index, source row).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ingest.chunking import Chunk, Chunker
from ingest.parsers import MARKDOWN_SUFFIXES, PDF_SUFFIXES, ParsedDocument, ParseError, parse, workshop
from ingest.sources import SourceError, SourceObject, content_hash, list_objects
from thoth.config import Settings
from thoth.embed import Embedder, get_embedder, get_tokenizer
from thoth.store import Store, filters
from thoth.store.schema import CHUNKS, DOCUMENTS, PARTITIONS

log = logging.getLogger("thoth.ingest")

WRITE_BATCH_CHUNKS = 512  # chunks embedded and written together


@dataclass
class RunSummary:
    source_id: str
    ingested: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    seconds: float = 0.0
    interrupted: bool = False  # stopped early (SIGTERM); a rerun finishes the work

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
        lines = [
            f"source {self.source_id}: {self.changed} changed — {len(self.ingested)} ingested, "
            f"{self.unchanged} unchanged, {len(self.removed)} removed, {len(self.failed)} failed; "
            f"{self.chunks_written} chunks written in {self.seconds:.1f}s"
        ]
        lines += [f"  failed: {key}: {reason}" for key, reason in self.failed]
        if self.interrupted:
            lines.append("  interrupted: stopped after the last written batch; run again to finish")
        return "\n".join(lines)


def slug(name: str) -> str:
    value = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not value:
        raise ValueError(f"source name {name!r} has no letters or digits")
    return value


def _hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _source_kind(keys: list[str]) -> str:
    suffixes = {k.rsplit(".", 1)[-1].lower() for k in keys}
    if suffixes & {s.lstrip(".") for s in MARKDOWN_SUFFIXES}:
        return "handbook"
    if suffixes & {s.lstrip(".") for s in PDF_SUFFIXES}:
        return "pdf"
    return "text"


@dataclass
class _Prepared:
    obj: SourceObject
    doc_id: str
    document: dict
    partitions: list[dict]
    chunks: list[Chunk]


class Ingestor:
    """Ingests one source into one store."""

    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings)
        return self._embedder

    def run(
        self,
        source: str,
        name: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        stop: threading.Event | None = None,
        source_id: str | None = None,
    ) -> RunSummary:
        """Ingest `source` as the source `source_id` (default: the slug of `name`, else of the folder's name)."""
        started = time.perf_counter()
        objects = list_objects(source)
        source_id = source_id or slug(name or source.rstrip("/").rsplit("/", 1)[-1])
        summary = RunSummary(source_id)

        existing = self._existing_documents(source_id)
        hashes = {obj.key: content_hash(obj.read()) for obj in objects}
        todo = [obj for obj in objects if existing.get(obj.key, {}).get("doc_id") != hashes[obj.key]]
        removed = sorted(set(existing) - set(hashes))
        summary.unchanged = len(objects) - len(todo)
        log.info("source %s: %d files, %d to ingest, %d removed", source_id, len(objects), len(todo), len(removed))
        if not todo and not removed:
            summary.seconds = time.perf_counter() - started
            return summary  # nothing changed: nothing is written

        self.store.ensure_tables(self.embedder.dim)
        self.store.record_model(self.embedder.model_name, self.embedder.dim)
        chunker = Chunker(get_tokenizer(self.settings), self.settings.chunk_tokens, self.settings.chunk_overlap_tokens)
        # doc ids whose chunks are already stored under another key in this source (same bytes)
        stored = {row["doc_id"] for row in existing.values() if row["status"] == "ok"}
        stale = {existing[key]["doc_id"] for key in removed} | {
            existing[o.key]["doc_id"] for o in todo if o.key in existing
        }

        batch: list[_Prepared] = []
        for done, obj in enumerate(todo, start=1):
            if stop is not None and stop.is_set():
                summary.interrupted = True
                break
            prepared = self._prepare(source_id, obj, hashes[obj.key], chunker, stored)
            if prepared.document["status"] == "failed":
                summary.failed.append((obj.key, prepared.document["error"]))
            else:
                summary.ingested.append(obj.key)
                stored.add(prepared.doc_id)
            batch.append(prepared)
            if sum(len(p.chunks) for p in batch) >= WRITE_BATCH_CHUNKS:
                summary.chunks_written += self._write(source_id, batch)
                batch = []
            if progress:
                progress(done, len(todo), obj.key)
        if summary.interrupted:  # prepared files not written are not counted: the next run does them
            unwritten = {p.obj.key for p in batch}
            summary.ingested = [k for k in summary.ingested if k not in unwritten]
            summary.failed = [(k, r) for k, r in summary.failed if k not in unwritten]
            summary.seconds = time.perf_counter() - started
            written = done - 1 - len(batch)
            log.warning("ingest interrupted: %d of %d changed files written; run again to finish", written, len(todo))
            return summary
        summary.chunks_written += self._write(source_id, batch)

        if removed:
            self.store.delete(DOCUMENTS, f"{filters.eq('source_id', source_id)} AND {filters.is_in('key', removed)}")
            summary.removed = removed
        self._drop_unreferenced(source_id, stale)
        self.store.ensure_fts_index()
        self._update_source(source_id, name, source, [o.key for o in objects])
        summary.seconds = time.perf_counter() - started
        return summary

    # -- steps -------------------------------------------------------------------

    def _existing_documents(self, source_id: str) -> dict[str, dict]:
        if DOCUMENTS not in self.store.table_names():
            return {}
        rows = self.store.documents(source_id, ["key", "doc_id", "status"])
        return {row["key"]: row for row in rows}

    def _prepare(self, source_id: str, obj: SourceObject, doc_id: str, chunker: Chunker, stored: set[str]) -> _Prepared:
        document = {
            "doc_id": doc_id,
            "source_id": source_id,
            "key": obj.key,
            "uri": obj.uri,
            "version": obj.version,
            "byte_size": obj.size,
            "status": "ok",
            "ingested_at": datetime.now(UTC),
        }
        try:
            parsed: ParsedDocument = parse(
                obj.key, obj.read(), pdf_password=self.settings.env.get("THOTH_PDF_PASSWORD"), fmt=obj.format
            )
        except ParseError as exc:
            log.warning("skipped %s: %s", obj.key, exc)
            document.update(status="failed", error=str(exc))
            return _Prepared(obj, doc_id, document, [], [])
        except Exception as exc:  # a parser bug must not stop the run; record it and go on
            log.exception("parser failed on %s", obj.key)
            document.update(status="failed", error=f"parser error: {type(exc).__name__}: {exc}")
            return _Prepared(obj, doc_id, document, [], [])
        document.update(
            title=parsed.title,
            authors=parsed.authors,
            year=parsed.year,
            page_count=parsed.page_count,
            url=parsed.url,
        )
        if doc_id in stored:  # identical bytes already stored under another key: only the key is new
            return _Prepared(obj, doc_id, document, [], [])
        partitions = [
            {
                "partition_id": _hash(source_id, doc_id, i, _normalise(p.text)),
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
        return _Prepared(obj, doc_id, document, partitions, chunker.chunk(parsed.title, parsed.partitions))

    def _write(self, source_id: str, batch: list[_Prepared]) -> int:
        if not batch:
            return 0
        chunks = [(p, i, c) for p in batch for i, c in enumerate(p.chunks)]
        vectors = self.embedder.embed([c.embed_text for _, _, c in chunks])
        rows = []
        for (prepared, index, chunk), vector in zip(chunks, vectors, strict=True):
            doc, partition = prepared.document, prepared.partitions[chunk.partition_index]
            ref = f"doc://{source_id}/{doc['key']}" + (f"#page={chunk.page_start}" if chunk.page_start else "")
            rows.append(
                {
                    "chunk_id": _hash(source_id, prepared.doc_id, index, _normalise(chunk.text)),
                    "doc_id": prepared.doc_id,
                    "source_id": source_id,
                    "partition_id": partition["partition_id"],
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
                    "tags": [],
                    "source_ref": ref,
                }
            )
        written = [p.doc_id for p in batch if p.partitions]
        if written:  # rows a killed earlier run may have left for these documents
            scope = f"{filters.eq('source_id', source_id)} AND {filters.is_in('doc_id', written)}"
            self.store.delete(CHUNKS, scope)
            self.store.delete(PARTITIONS, scope)
        self.store.add(PARTITIONS, [row for p in batch for row in p.partitions])
        self.store.add(CHUNKS, rows)
        keys = [p.obj.key for p in batch]
        self.store.delete(DOCUMENTS, f"{filters.eq('source_id', source_id)} AND {filters.is_in('key', keys)}")
        self.store.add(DOCUMENTS, [p.document for p in batch])
        return len(rows)

    def _drop_unreferenced(self, source_id: str, doc_ids: set[str]) -> None:
        """Delete chunks and partitions of old versions no document row points to any more."""
        if not doc_ids:
            return
        referenced = {
            row["doc_id"]
            for row in self.store.documents(source_id, ["doc_id", "status", "key"])
            if row["status"] == "ok"
        }
        for doc_id in sorted(doc_ids - referenced):
            scope = f"{filters.eq('source_id', source_id)} AND {filters.eq('doc_id', doc_id)}"
            self.store.delete(CHUNKS, scope)
            self.store.delete(PARTITIONS, scope)
        # chunks carry a key for display; point those of a still-referenced doc at a key that exists
        for doc_id in sorted(doc_ids & referenced):
            keys = sorted(r["key"] for r in self.store.documents(source_id, ["doc_id", "key"]) if r["doc_id"] == doc_id)
            scope = f"{filters.eq('source_id', source_id)} AND {filters.eq('doc_id', doc_id)}"
            self.store.update(CHUNKS, f"{scope} AND NOT {filters.is_in('key', keys)}", {"key": keys[0]})

    def _has_diffs(self, source_id: str) -> bool:
        return self.store.count(PARTITIONS, filters.where({"source_id": source_id, "is_diff": True})) > 0

    def _update_source(self, source_id: str, name: str | None, source: str, keys: list[str]) -> None:
        previous = self.store.get_source(source_id) or {}
        scope = filters.eq("source_id", source_id)
        kind = _source_kind(keys) if keys else previous.get("kind", "text")
        product = previous.get("product")
        local = None if "://" in source else Path(source).expanduser().resolve()
        if local is not None and workshop.is_workshop(local):
            about = workshop.info(local)
            kind, product, name = "workshop", about.product, name or about.title
        self.store.upsert_source(
            {
                "source_id": source_id,
                "name": name or source_id,
                "kind": kind,
                "uri": str(local) if local is not None else source,  # absolute, so a reindex finds it again
                "product": product,
                "has_diffs": self._has_diffs(source_id) if kind == "workshop" else bool(previous.get("has_diffs")),
                "has_tree": bool(previous.get("has_tree")),
                "document_count": self.store.count(DOCUMENTS, f"{scope} AND status = 'ok'"),
                "chunk_count": self.store.count(CHUNKS, scope),
                "embed_model": self.embedder.model_name,
                "updated_at": datetime.now(UTC),
            }
        )


def reingest(ingestor: Ingestor, kind: str) -> list[dict]:
    """Ingest again every source of `kind` from the URI it was ingested from; one summary (or error) each."""
    results = []
    for row in sorted(ingestor.store.list_sources(), key=lambda r: r["source_id"]):
        if row["kind"] != kind:
            continue
        try:
            summary = ingestor.run(row["uri"], name=row["name"], source_id=row["source_id"])
            results.append(summary.to_dict())
        except (SourceError, ValueError) as exc:  # that source is gone or unreadable; the others go on
            log.warning("reingest %s: %s", row["source_id"], exc)
            results.append({"source_id": row["source_id"], "error": str(exc)})
    return results


def log_progress(done: int, total: int, key: str) -> None:
    """Progress as plain lines (used when stderr is not a terminal)."""
    if done == total or done % 25 == 0:
        print(f'{{"event": "progress", "done": {done}, "total": {total}}}', file=sys.stderr, flush=True)


__all__ = ["Ingestor", "RunSummary", "slug", "log_progress", "reingest"]
