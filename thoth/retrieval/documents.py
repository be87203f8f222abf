"""Documents, and chunks with their documents and partitions: the one listing of a source's documents,
and what the research tools fetch by id. A document's content is stored once per source even when
several keys hold the same bytes: each key is a `Document` record of its own, and every key a document
is known under comes with it (`copies`, in key order).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from thoth import citation_urls
from thoth.bibtex import make_entry, parse_reference
from thoth.errors import ClientError, NotFound, check_choice
from thoth.records import AtLeast, AtMost, Chunk, Document, Partition
from thoth.store import Store


@dataclass(frozen=True)
class CitedChunk:
    """A chunk with the stored object (the document record of its key) it is cited from."""

    chunk: Chunk
    document: Document | None = None


@dataclass(frozen=True)
class ChunkPage:
    """A page of a document's chunks in reading order, with every key the document is known under."""

    copies: tuple[Document, ...]  # one record per key, key order
    total: int
    offset: int
    next_offset: int | None
    chunks: tuple[CitedChunk, ...]
    chunk: CitedChunk | None = None  # the chunk asked for (fetch_chunk_document)


@dataclass(frozen=True)
class PartitionChunks:
    """A chunk, its partition, and every chunk of the document in the partition's page range."""

    chunk: CitedChunk
    partition: Partition
    chunks: tuple[CitedChunk, ...]


@dataclass(frozen=True)
class Bibtex:
    chunk: Chunk
    bibtex: str
    bibtex_source: str


@dataclass(frozen=True)
class Outline:
    total: int
    partitions: tuple[Partition, ...]  # the first `limit`, in order, without their text


@dataclass(frozen=True)
class DocumentPage:
    """One page of a source's documents (one record per key), and where the next page starts."""

    source_id: str
    total: int
    offset: int
    next_offset: int | None
    documents: tuple[Document, ...]
    counts: Mapping[str, int]  # per status, over the whole source


DOCUMENT_SORTS = ("name", "date")
DOCUMENT_STATUSES = ("ok", "failed")
OUTLINE_PARTITIONS = 200  # the partitions an outline lists: a long PDF's pages without flooding the answer
# what a listing shows of a document (not its BibTeX or sidecar)
_LISTED = ["source_id", "key", "uri", "url", "bucket", "version", "object_id", "title", "authors", "year",
           "page_count", "byte_size", "status", "error", "ingested_at", "hidden_dropped"]  # fmt: skip


def list_documents(
    store: Store,
    source_id: str,
    *,
    status: str | None = None,
    sort: str = "name",
    descending: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> DocumentPage:
    """One page of a source's documents, `limit` from `offset`: filtered by status, sorted by key (`name`)
    or ingest time (`date`), with the counts per status over the whole source. Each `uri` is as a tool
    may show it, else "" (thoth.citation_urls)."""
    check_choice("sort", sort, DOCUMENT_SORTS)
    if status is not None and status not in DOCUMENT_STATUSES:
        raise ClientError(f"status must be one of {', '.join(DOCUMENT_STATUSES)} (or left out), got {status!r}")
    found = store.find(Document, {"source_id": source_id}, fields=_LISTED)
    documents = [with_shown_uri(d, store) for d in found]
    counts = {s: sum(1 for d in documents if d.status == s) for s in DOCUMENT_STATUSES}
    if status:
        documents = [d for d in documents if d.status == status]
    if sort == "date":  # ties (one run writes many files) in key order
        documents.sort(key=lambda d: d.key)
        documents.sort(key=lambda d: (d.ingested_at is not None, d.ingested_at or 0), reverse=descending)
    else:
        documents.sort(key=lambda d: d.key, reverse=descending)
    page = documents[offset : offset + limit]
    return DocumentPage(
        source_id=source_id,
        total=len(documents),
        offset=offset,
        next_offset=offset + len(page) if offset + len(page) < len(documents) else None,
        documents=tuple(page),
        counts=counts,
    )


def pages(start: int | None, end: int | None) -> list[int]:
    return list(range(start, (end or start) + 1)) if start else []


def with_shown_uri(document: Document, store: Store) -> Document:
    """`document` with its `uri` as a tool may show it, else "" (thoth.citation_urls)."""
    return dataclasses.replace(document, uri=citation_urls.shown(document.uri, store.settings) or "")


def documents_by_id(store: Store, pairs: set[tuple[str, str]]) -> dict[tuple[str, str], list[Document]]:
    """(source id, document id) -> its ok document records (one per key it is known under), key order."""
    found: dict[tuple[str, str], list[Document]] = defaultdict(list)
    if not pairs:
        return found
    match = {"source_id": sorted({s for s, _ in pairs}), "doc_id": sorted({d for _, d in pairs}), "status": "ok"}
    for document in store.find(Document, match):
        if (document.source_id, document.doc_id) in pairs:
            found[(document.source_id, document.doc_id)].append(with_shown_uri(document, store))
    for copies in found.values():
        copies.sort(key=lambda d: d.key)
    return found


def _copy_for(chunk: Chunk, copies: list[Document]) -> Document | None:
    return next((d for d in copies if d.key == chunk.key), copies[0] if copies else None)


def cite_chunks(store: Store, chunks: list[Chunk]) -> list[CitedChunk]:
    """Chunks (search hits, fetches) with their object's bucket, key, version and object id."""
    copies = documents_by_id(store, {(c.source_id, c.doc_id) for c in chunks})
    return [CitedChunk(c, _copy_for(c, copies.get((c.source_id, c.doc_id), []))) for c in chunks]


def get_chunk(store: Store, chunk_id: str, source_id: str | None = None) -> Chunk:
    """The chunk with this id (in source `source_id`, when given), or NotFound."""
    if not chunk_id or not chunk_id.strip():
        raise ClientError("id must be a non-empty chunk id (the `id` of a search hit)")
    chunk = store.first(Chunk, {"chunk_id": chunk_id.strip()})
    if chunk is None:
        raise NotFound(f"no chunk with id {chunk_id!r}; ids come from search hits (`id`)")
    if source_id and chunk.source_id != source_id:
        raise NotFound(f"chunk {chunk_id!r} is not in collection {source_id!r} (it is in {chunk.source_id!r})")
    return chunk


def _chunks(store: Store, match: dict) -> list[Chunk]:
    return sorted(store.find(Chunk, match), key=lambda c: c.chunk_index)


def find_document(
    store: Store,
    document_id: str | None = None,
    bucket: str | None = None,
    key: str | None = None,
    source_id: str | None = None,
) -> list[Document]:
    """The ok records of one document (one per key, key order), by id or by bucket (or local source) and key."""
    if document_id:
        found = store.find(Document, {"doc_id": document_id, "status": "ok", "source_id": source_id})
        what = f"document_id {document_id!r}"
    elif bucket and key:
        found = store.find(Document, {"bucket": bucket, "key": key, "status": "ok"})
        if not found:  # a local folder's documents are cited as doc://{source}/{key}
            found = store.find(Document, {"source_id": bucket, "key": key, "status": "ok"})
        found = [d for d in found if not source_id or d.source_id == source_id]
        what = f"bucket {bucket!r} key {key!r}"
    else:
        raise ClientError("give document_id, or bucket and key")
    if not found:
        raise NotFound(f"no ingested document with {what}" + (f" in collection {source_id!r}" if source_id else ""))
    # one source's copy (the same bytes may be in several sources)
    chosen = source_id or min(d.source_id for d in found)
    doc_id = next(d.doc_id for d in found if d.source_id == chosen)
    return documents_by_id(store, {(chosen, doc_id)})[(chosen, doc_id)]


def document_at(store: Store, container: str, key: str) -> Document:
    """The record of the document a citation names: its bucket (or local source) and key."""
    copies = find_document(store, bucket=container, key=key)
    return next((d for d in copies if d.key == key), copies[0])


def document_chunks(store: Store, copies: list[Document], limit: int, offset: int = 0) -> ChunkPage:
    first = copies[0]
    chunks = _chunks(store, {"source_id": first.source_id, "doc_id": first.doc_id})
    page = chunks[offset : offset + limit]
    return ChunkPage(
        copies=tuple(copies),
        total=len(chunks),
        offset=offset,
        next_offset=offset + len(page) if offset + len(page) < len(chunks) else None,
        chunks=tuple(CitedChunk(c, _copy_for(c, copies)) for c in page),
    )


def _copies_of(store: Store, chunk: Chunk) -> list[Document]:
    return documents_by_id(store, {(chunk.source_id, chunk.doc_id)}).get((chunk.source_id, chunk.doc_id), [])


def chunk_document(store: Store, chunk_id: str, source_id: str | None, limit: int) -> ChunkPage:
    """A chunk and its whole document (metadata, objects, chunks in order)."""
    chunk = get_chunk(store, chunk_id, source_id)
    copies = _copies_of(store, chunk)
    if not copies:
        raise NotFound(f"chunk {chunk_id!r} belongs to no ingested document (it is being re-ingested or removed)")
    page = document_chunks(store, copies, limit)
    return dataclasses.replace(page, chunk=CitedChunk(chunk, _copy_for(chunk, copies)))


_PARTITION_FIELDS = ["partition_hash", "doc_id", "source_id", "ordinal", "kind", "heading_path", "page_start",
                     "page_end", "text", "ocr_confidence"]  # fmt: skip


def chunk_partition(store: Store, chunk_id: str, source_id: str | None) -> PartitionChunks:
    """A chunk, its partition (a page of a PDF, a section of a page), and every chunk in that page range."""
    chunk = get_chunk(store, chunk_id, source_id)
    partition = (
        store.first(Partition, {"partition_id": chunk.partition_id}, fields=_PARTITION_FIELDS)
        if chunk.partition_id
        else None
    )
    if partition is None:
        raise NotFound(f"the partition of chunk {chunk_id!r} is not stored (it is being re-ingested or removed)")
    match: dict[str, object] = {"source_id": chunk.source_id, "doc_id": chunk.doc_id}
    if partition.page_start is not None:  # chunks overlapping the partition's pages
        end = partition.page_end or partition.page_start
        match.update(page_start=AtMost(end), page_end=AtLeast(partition.page_start))
    else:
        match["partition_id"] = partition.partition_id
    chunks = cite_chunks(store, _chunks(store, match))
    cited = next((c for c in chunks if c.chunk.chunk_id == chunk.chunk_id), None) or cite_chunks(store, [chunk])[0]
    return PartitionChunks(chunk=cited, partition=partition, chunks=tuple(chunks))


def chunk_bibtex(store: Store, chunk_id: str, source_id: str | None) -> Bibtex:
    """The entry of the chunk's document; for a chunk of a paper's reference list, the entries of the
    works it cites, where each entry gives authors, title and year (`bibtex_source` "cited")."""
    chunk = get_chunk(store, chunk_id, source_id)
    if chunk.content_type == "references":
        cited = [c for c in (parse_reference(line) for line in chunk.text.splitlines()) if c is not None]
        if cited:
            note = f"cited in {chunk.source_ref}"
            entries = "\n".join(make_entry(c, f"{i:02d}{chunk.chunk_id}", note) for i, c in enumerate(cited))
            return Bibtex(chunk=chunk, bibtex=entries, bibtex_source="cited")
    document = _copy_for(chunk, _copies_of(store, chunk))
    if document is None or not document.bibtex:
        raise NotFound(f"no BibTeX stored for the document of chunk {chunk_id!r}; re-run `python -m ingest`")
    return Bibtex(chunk=chunk, bibtex=document.bibtex, bibtex_source=document.bibtex_source or "generated")


def document_outline(store: Store, source_id: str, document_id: str) -> Outline:
    """A document's pages (PDF) or sections (Markdown, workshop) in order, without their text."""
    fields = ["ordinal", "kind", "heading_path", "page_start", "page_end"]
    found = store.find(Partition, {"source_id": source_id, "doc_id": document_id}, fields=fields)
    found.sort(key=lambda p: (p.ordinal, p.partition_id))
    return Outline(total=len(found), partitions=tuple(found[:OUTLINE_PARTITIONS]))
