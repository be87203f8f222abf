"""Writing documents into the index: parse -> chunk -> embed -> write, then the source row and its tree.

The ingest job (whole runs), bucket events, workshop reindex and
`ingest_document` all write through this, so there is one way rows are made. Identity is content-derived,
so a run is idempotent: an unchanged file is not read again, a changed one has its rows replaced, a gone
one its rows removed, identical bytes under two keys are stored once.

Replace, never remove-then-add: a changed document's new rows are written first, then its `documents`
row is switched to them in one commit, then the old rows go, so a reader finds the old version or the
new one, never neither nor both (searches serve only what a `documents` row points at). A killed write's
new rows are deleted before they are written again, its old ones swept by maintenance: a run killed at
any point and started again ends with the tables one clean run leaves. A `stop` event (SIGTERM) ends the
run after the batch being written; what is left has no `documents` row, so the next run sees it as to do.
A long PDF is read and written a window of pages at a time (`_write_windows`), its `documents` row last,
so its memory is a window's and a `stop` ends it within a window, leaving it as it was.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from itertools import chain

from thoth.config import Settings
from thoth.embed import Embedder, get_tokenizer, model_name, texts_per_call
from thoth.embedders import get_embedder
from thoth.freed import give_back_memory
from thoth.records import Chunk as StoredChunk  # a chunk as the index holds it (chunking's is one being cut)
from thoth.records import Document, Partition, Source, to_row
from thoth.source_ref import SourceRef
from thoth.source_spec import SourceSpec, slug
from thoth.store import Store
from thoth.summarise import tree_summariser
from thoth.writes import parsers, planner
from thoth.writes.calibrate import calibrate
from thoth.writes.chunking import Chunker
from thoth.writes.clustering import TreeParams
from thoth.writes.gate import ShuttingDown
from thoth.writes.listing import list_source
from thoth.writes.objects import SourceObject
from thoth.writes.overlap import OrderedWorker
from thoth.writes.parsers import Stopped
from thoth.writes.prepare import Prepared, chunk_rows, pictures, prepare
from thoth.writes.progress import ProgressMeter
from thoth.writes.run_records import RunSummary
from thoth.writes.tree import TreeResult, build_tree, mark_stale

log = logging.getLogger("thoth.ingest")
BATCH_CHUNKS = 512  # chunks embedded and written together: one commit per table, a write's memory bounded
REPARSED = "+reparse"  # a served document re-parsed: its new rows are staged under its doc_id + this


class Writer:
    """Writes documents of one source (a whole listed source, or single objects of it) into one store."""

    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self._embedder = embedder
        # Set (the server's WriteGate at shutdown): the write stops before its next embedding batch and deletes
        # the rows it staged (ShuttingDown); once it switches documents rows it finishes.
        self.abandon: threading.Event | None = None
        self.meter = ProgressMeter(printing=False)  # `python -m ingest` sets a printing one

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings)
        return self._embedder

    # -- whole runs -------------------------------------------------------------------------

    def run(
        self,
        source: str | SourceSpec,
        name: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        stop: threading.Event | None = None,
        source_id: str | None = None,
        *,
        only_missing: bool = False,
    ) -> RunSummary:
        """Bring the collection in line with `source`; `only_missing` ingests only keys it does not know yet.

        The collection is `source_id` if given, else the slug of `name`, else of the bucket's or folder's name.
        A source given without a scope (path, include, exclude) gets the one the collection was ingested with.
        """
        started = time.perf_counter()
        spec = source if isinstance(source, SourceSpec) else SourceSpec.parse(source)
        if name is None and spec.kind == "bucket":
            name = spec.collection_name  # one collection per bucket, named after it
        source_id = source_id or slug(name or spec.collection_name)
        known = self.store.exists() and self.store.has(Source)
        recorded = self.store.first(Source, {"source_id": source_id}) if known else None
        if recorded is not None:
            spec = spec.with_scope_of(SourceSpec.of(recorded))
        listed = list_source(self.store, self.settings, spec, source_id)  # a folder, bucket, site or repository
        listing = listed.objects
        task, by_key = (self.settings.task_index, self.settings.task_count), listed.by_key is not None
        documents = self.documents(source_id)
        plan = planner.plan(source_id, documents, listing, task=task, by_key=by_key, only_missing=only_missing)
        files, todo, removed = len(listing) - len(plan.sidecars), len(plan.todo), len(plan.removed)
        log.info("source %s: %d files, %d to ingest, %d removed", source_id, files, todo, removed)
        kind = listed.kind or parsers.content_kind([o.key for o in listing])
        name = listed.name or name  # a workshop names itself (--name sets the id, never the title)
        summary = self.execute(
            plan, name=name, uri=spec, kind=kind, product=listed.product, progress=progress, stop=stop
        )
        if plan.empty and recorded is not None and SourceSpec.of(recorded) != spec:  # a new scope, no file changed
            scoped = replace(recorded, uri=spec.uri, include=spec.include, exclude=spec.exclude)
            self.store.upsert_source(to_row(scoped))
        summary.failed += listed.failures  # pages a crawl could not use, with their reasons
        if not summary.interrupted:
            listed.save(self.store)
        if plan.empty and self.settings.task_index == 0 and self.store.has(StoredChunk):
            self.store.migrate()  # a run that writes nothing still brings an older index to this format
            self.store.indexes.ensure_fts(fold_in=False)  # builds it when missing
        if self.settings.task_count > 1:
            summary.task = f"{self.settings.task_index + 1}/{self.settings.task_count}"
            if plan.removed or plan.stale:  # the tree still quotes the text that went: keep readers off it
                mark_stale(self.store, plan.source_id, "documents removed by a parallel run; the next run rebuilds it")
        elif not summary.interrupted:  # the tree once every document is written (one task: this one)
            self.meter.stage("tree")
            summary.tree = self.update_tree(plan.source_id)
        summary.seconds = time.perf_counter() - started
        return summary

    # -- single objects (bucket events, ingest_document) ----------------------------------------------

    def write_keys(
        self,
        source_id: str,
        listing: list[SourceObject],
        keys: set[str],
        *,
        name: str,
        uri: str,
        kind: str | None = None,
        tags: list[str] | None = None,
    ) -> RunSummary:
        """Bring only `keys` of the source in line with `listing`: an object with its sidecars (new, overwritten
        or unchanged: a redelivered event writes nothing), or nothing (the object was deleted)."""
        plan = planner.plan(source_id, self.documents(source_id), listing, keys=keys, tags=tags or ())
        return self.execute(plan, name=name, uri=uri, kind=kind)

    def add_document(
        self, source_id: str, obj: SourceObject, *, name: str, uri: str, tags: list[str] | None = None
    ) -> RunSummary:
        """Add (or replace, by key) one document of a `text` source (ingest_document), then update its tree."""
        started = time.perf_counter()
        summary = self.write_keys(source_id, [obj], {obj.key}, name=name, uri=uri, kind="text", tags=tags)
        summary.tree = self.update_tree(source_id, policy="document")
        summary.seconds = time.perf_counter() - started
        return summary

    def update_tree(self, source_id: str, force: bool = False, policy: str = "run") -> TreeResult | None:
        """Bring the source's RAPTOR tree in line with its chunks: in place, or rebuilt (thoth/writes/tree.py
        says when); THOTH_TREES=off turns trees off, and a change then marks an existing one stale."""
        if not self.settings.tree_build:
            if mark_stale(self.store, source_id, "trees are switched off (THOTH_TREES=off)"):
                return TreeResult(source_id, built=False, mode="stale", reason="THOTH_TREES=off")
            return None
        tokenizer = get_tokenizer(self.settings)
        return build_tree(
            self.store,
            lambda: self.embedder,
            tokenizer,
            tree_summariser(self.settings, tokenizer),
            source_id,
            TreeParams.from_settings(self.settings),
            self._embedder.model_name if self._embedder else model_name(self.settings),
            force=force,
            policy=policy,
        )

    # -- doing the plan -------------------------------------------------------------------------

    def execute(
        self,
        plan: planner.Plan,
        *,
        name: str | None,
        uri: str | SourceSpec,
        kind: str | None = None,
        product: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> RunSummary:
        summary = RunSummary(plan.source_id, unchanged=plan.unchanged)
        if plan.empty:
            return summary  # nothing changed: nothing is written
        source_id = plan.source_id
        self.store.ensure_tables(self.embedder.dim)
        self.store.metadata.record_model(self.embedder.model_name, self.embedder.dim, self.embedder.prompts.pair)

        # 1. new and changed files: each batch's old versions go once its new rows are in (`_write`)
        chunker = Chunker(get_tokenizer(self.settings), self.settings.chunk_tokens)
        stored = set(plan.stored)
        referenced = set(plan.referenced)
        batch: list[Prepared] = []
        done = 0
        # Batches are embedded and written on one background thread, in order, while this one
        # parses and chunks the next files (thoth/writes/overlap.py).
        writer: OrderedWorker[Callable[[], int]] = OrderedWorker(lambda job: job())
        for done, obj in enumerate(plan.todo, start=1):
            if stop is not None and stop.is_set():
                summary.interrupted = True
                break
            fingerprint = plan.fingerprints.get(obj.key)
            try:
                prepared = prepare(self.settings, source_id, obj, fingerprint, plan.sidecars, chunker, stored, stop)
            except Stopped:
                summary.interrupted = True
                break
            if prepared is not None and prepared.rest is not None:
                writer.submit(partial(self._write, source_id, batch, plan.replaced))  # the files before it first
                batch, prepared.tags = [], list(plan.tags)
                if not self._write_windows(source_id, prepared, writer, stop, plan.replaced):
                    summary.interrupted = True
                    break
            if prepared is None:
                summary.failed.append((obj.key, "could not be read; the next run retries it"))
            elif prepared.document.status == "failed":
                summary.failed.append((obj.key, prepared.document.error or ""))
            else:
                summary.ingested.append(obj.key)
                if obj.key in plan.known:
                    summary.updated.append(obj.key)
                summary.pages += prepared.document.page_count or 0
                if prepared.doc_id in stored:
                    referenced.add(prepared.doc_id)  # known content under a new key or generation
                stored.add(prepared.doc_id)
            if prepared is not None and prepared.rest is None:
                prepared.tags = list(plan.tags)
                batch.append(prepared)
            if sum(len(p.chunks) for p in batch) >= BATCH_CHUNKS:
                writer.submit(partial(self._write, source_id, batch, plan.replaced))
                batch = []
            if progress:
                progress(done, len(plan.todo), obj.key)
        if summary.interrupted:  # prepared files not written are not counted: the next run does them
            summary.chunks_written += writer.close()  # batches already handed over are written in full
            unwritten = {p.obj.key for p in batch}
            summary.ingested = [k for k in summary.ingested if k not in unwritten]
            summary.updated = [k for k in summary.updated if k not in unwritten]
            summary.failed = [(k, r) for k, r in summary.failed if k not in unwritten]
            written = done - 1 - len(batch)
            log.warning(
                "ingest interrupted: %d of %d changed files written; run again to finish", written, len(plan.todo)
            )
            return summary
        writer.submit(partial(self._write, source_id, batch, plan.replaced))
        summary.chunks_written += writer.close()
        self.meter.stage("index")
        # What the parsing and the batches freed goes back before the indexes are built, the largest step in
        # memory (an ANN index trained over 24,000 chunks: about 150 MB): 50 MB lower at its peak after a
        # 3,000-page PDF (docs/benchmarks.md, "A long PDF in windows of pages").
        give_back_memory(collect_cycles=False)  # no cycles to collect: the trim is what hands memory back

        # 2. files gone from the source: their content first, so a killed run finds them gone again
        self._drop_content(source_id, plan.stale - set(plan.replaced.values()))
        if plan.removed:
            self.store.remove(Document, {"source_id": source_id, "key": list(plan.removed)})
            summary.removed = list(plan.removed)
        # 3. chunks of content still known name a key and generation that exist
        for doc_id in sorted(referenced):
            self._repoint(source_id, doc_id)
        # a few new chunks stay in the indexes' unindexed tail (a cheap write)
        fold_in = self.store.indexes.fold_in_due()
        if self.settings.task_index == 0:  # one task of a parallel job trains the ANN index, not every task
            self.store.indexes.ensure_vector(fold_in=fold_in)  # once the table passes VECTOR_INDEX_MIN_ROWS
        self.store.indexes.ensure_fts(fold_in=fold_in)
        self._update_source(source_id, name, uri, kind, product)
        calibrate(self.store)  # the model's cosine floor, measured on this index (thoth/writes/calibrate.py)
        return summary

    # -- steps -------------------------------------------------------------------

    def documents(self, source_id: str) -> dict[str, Document]:
        """The source's documents by key (only what planning reads; a table without a column leaves its default)."""
        if not self.store.has(Document):
            return {}
        fields = ["key", "status", "version", "fingerprint", "sidecar", "parser"]
        return {doc.key: doc for doc in self.store.find(Document, {"source_id": source_id}, fields=fields)}

    def _write(self, source_id: str, batch: list[Prepared], replaced: dict[str, str]) -> int:
        """Stage a batch's new rows, switch its documents rows to them, then drop the versions they replace."""
        if not batch:
            return 0
        written = [p.doc_id for p in batch if p.partitions]
        reparsed = self._live(source_id, written)
        staged = {doc_id + REPARSED if doc_id in reparsed else doc_id for doc_id in written}
        # rows a killed write left (none, as a rule: counted first, so no empty commit)
        self._drop_content(source_id, staged)
        try:
            count = self._stage(source_id, batch, reparsed)
        except Exception:  # stopped at shutdown (ShuttingDown) or failed: nothing half-written stays, the old
            self._drop_content(source_id, staged)  # version stays what readers find
            raise
        return count + self._switch(source_id, batch, replaced, reparsed)

    def _switch(self, source_id: str, batch: list[Prepared], replaced: dict[str, str], reparsed: set[str]) -> int:
        """Swap re-parsed documents' staged rows in, point the batch's documents rows at their rows, then drop
        the versions they replace (and the re-parsed ones' old rows, swapped out under their staged ids)."""
        self.store.swap_staged(source_id, reparsed, REPARSED)
        self.store.replace_documents([to_row(p.document) for p in batch])
        keys = {p.obj.key for p in batch}
        written = {p.doc_id for p in batch if p.partitions}
        gone = {doc_id for key, doc_id in replaced.items() if key in keys} - written
        self._drop_content(source_id, gone | {doc_id + REPARSED for doc_id in reparsed})
        return 0

    def _write_windows(
        self,
        source_id: str,
        head: Prepared,
        worker: OrderedWorker,
        stop: threading.Event | None,
        replaced: dict[str, str],
    ) -> bool:
        """Write a long PDF a window of pages at a time (`head` and `head.rest`), on `worker` while the next
        window is read: each window's rows are staged, which no `documents` row points at, and the document's
        row is written once the last window is in, so readers find the document whole or not at all (or its
        old version, re-parsed ones included: `_stage`). `stop` set ends it at the next window, or inside one
        at its next embedding batch; what was staged is then deleted and False returned: the next run writes
        the document again."""
        reparsed = self._live(source_id, [head.doc_id])
        staged = head.doc_id + REPARSED if reparsed else head.doc_id
        worker.submit(lambda: self._drop_content(source_id, {staged}) or 0)  # what a stopped run left
        try:
            for window in chain([head], head.rest or ()):
                window.tags = list(head.tags)
                worker.submit(partial(self._stage, source_id, [window], reparsed, stop))
                if stop is not None and stop.is_set():
                    raise Stopped
            if head.document.status == "failed":  # a later window failed to parse: its failed row, no rows staged
                head, reparsed = Prepared(head.obj, head.document, [], []), set()
                worker.submit(lambda: self._drop_content(source_id, {staged}) or 0)
            worker.submit(partial(self._switch, source_id, [head], replaced, reparsed))
        except (Stopped, ShuttingDown):
            worker.close(raise_errors=False)
            self._drop_content(source_id, {staged})
            if self.abandon is not None and self.abandon.is_set():
                raise ShuttingDown from None  # the server's write: a retryable answer, as for any document
            log.warning("stopped while writing %s; the next run writes it", head.obj.key)
            return False
        return True

    def _stage(
        self, source_id: str, batch: list[Prepared], reparsed: set[str], halt: threading.Event | None = None
    ) -> int:
        """Embed the batch's chunks one embedding batch at a time and add their rows BATCH_CHUNKS
        at a time, so a write's memory follows those batches, not the document. No `documents` row points at
        the staged rows yet: searches leave them out, and readers go on finding the old version. The rows of
        the same bytes re-parsed (a newer parser), `reparsed`, whose doc_id is served, are staged under doc_id +
        REPARSED until `_switch` swaps them in."""

        def staged(row: dict) -> dict:
            return {**row, "doc_id": row["doc_id"] + REPARSED} if row["doc_id"] in reparsed else row

        partitions = [staged(to_row(pt)) for p in batch for pt in p.partitions]
        for prepared in batch:  # pictures first: a figure chunk a search finds has its picture
            for name, data in pictures(prepared).items():
                self.store.figures.put(name, data)
        pending: list[dict] = []
        count = 0
        for rows in self._embedded_rows(source_id, batch, halt):
            count += len(rows)
            pending += [staged(row) for row in rows]
            if len(pending) >= BATCH_CHUNKS:
                self._add(partitions, pending)
                partitions, pending = [], []
        self._add(partitions, pending)
        return count

    def _add(self, partitions: list[dict], chunks: list[dict]) -> None:
        """Add staged rows: a document's partitions before its chunks (chunks are what searches find)."""
        if partitions:
            self.store.insert(Partition, partitions)
        if chunks:
            self.store.insert(StoredChunk, chunks)
            self.meter.add_chunks(len(chunks))

    def _embedded_rows(
        self, source_id: str, batch: list[Prepared], halt: threading.Event | None = None
    ) -> Iterator[list[dict]]:
        """The batch's chunk rows, one embedder call (`texts_per_call`: a local model's batch) at a time; at
        shutdown (`abandon`, or `halt`: a long PDF's run stopped) it stops before the next one (ShuttingDown)."""
        chunks = [(p, p.first_chunk + i, c) for p in batch for i, c in enumerate(p.chunks)]
        expect = getattr(self.embedder, "expect", None)  # an embedder that reports progress counts the batches
        if expect is not None:
            expect(len(chunks))
        step = texts_per_call(self.settings)
        for start in range(0, len(chunks), step):
            if any(e is not None and e.is_set() for e in (self.abandon, halt)):
                raise ShuttingDown
            part = chunks[start : start + step]
            yield chunk_rows(source_id, part, self.embedder.embed_documents([c.embed_text for _, _, c in part]))

    def _live(self, source_id: str, doc_ids: list[str]) -> set[str]:
        """Which of `doc_ids` a `documents` row of the source already points at (their content is served)."""
        if not doc_ids:
            return set()
        match = {"source_id": source_id, "doc_id": sorted(set(doc_ids)), "status": "ok"}
        return {d.doc_id for d in self.store.find(Document, match, fields=["doc_id"])}

    def _drop_content(self, source_id: str, doc_ids: set[str]) -> None:
        """Delete the chunks and partitions of `doc_ids` (chunks first: they are what searches find)."""
        if doc_ids:
            scope = {"source_id": source_id, "doc_id": sorted(doc_ids)}
            self.store.remove(StoredChunk, scope)
            self.store.remove(Partition, scope)

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

    def _has_diffs(self, source_id: str) -> bool:
        return self.store.count_of(Partition, {"source_id": source_id, "is_diff": True}) > 0

    def _update_source(
        self, source_id: str, name: str | None, uri: str | SourceSpec, kind: str | None, product: str | None
    ) -> None:
        """Write the source's row: counts, kind, and the spec a run read it with (a single object's write
        keeps the row's scope)."""
        previous = self.store.first(Source, {"source_id": source_id}) or Source(source_id)
        scope = (uri.include, uri.exclude) if isinstance(uri, SourceSpec) else (previous.include, previous.exclude)
        uri = uri.uri if isinstance(uri, SourceSpec) else uri
        kind = kind or previous.kind or "pdf"
        product = product or previous.product
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
            source = Source(
                source_id=source_id,
                name=name or source_id,
                kind=kind,
                uri=uri,
                product=product,
                has_diffs=self._has_diffs(source_id) if kind == "workshop" else previous.has_diffs,
                has_tree=previous.has_tree,
                document_count=counts[0],
                chunk_count=counts[1],
                embed_model=self.embedder.model_name,
                updated_at=datetime.now(UTC),
                include=scope[0],
                exclude=scope[1],
            )
            if _unchanged(source, previous):
                return  # nothing in the row changed: no new version of `sources`
            self.store.upsert_source(to_row(source))
            written, previous = counts, source


def _unchanged(source: Source, previous: Source) -> bool:
    """Whether `source` says what `previous` (its stored row) says, the time of writing aside."""
    return {**to_row(source), "updated_at": None} == {**to_row(previous), "updated_at": None}
