"""Citations as readable text: a document, one page of it, or one chunk, and the documents to browse.

What MCP resources (`doc://…`, `chunk://…`) and completions read. A document's text comes from
the partitions table (each page or section once, headings restored: `pages.render_page`); a page
is the partitions that overlap it; a chunk is its own text under its section.
"""

from __future__ import annotations

from dataclasses import dataclass

from thoth.errors import NotFound
from thoth.records import Document, Partition, TreeNode
from thoth.retrieval.documents import document_at, get_chunk
from thoth.retrieval.pages import render_page
from thoth.retrieval.paging import OffsetCursor
from thoth.source_ref import SourceRef
from thoth.store import IndexMissing, Store

_PARTITION_FIELDS = ["ordinal", "kind", "heading_path", "page_start", "page_end", "text"]
_DOCUMENT_FIELDS = ["source_id", "bucket", "key", "version", "title", "page_count"]
TOP_SUMMARIES = 3  # the broadest summaries a dataset overview quotes


@dataclass(frozen=True)
class Readable:
    uri: str
    title: str
    text: str


@dataclass(frozen=True)
class DocumentInfo:
    uri: str  # doc://{bucket-or-source}/{key}[?version_id=…]
    source_id: str
    key: str
    title: str | None
    page_count: int | None


def _partitions(store: Store, document: Document) -> list[Partition]:
    match = {"source_id": document.source_id, "doc_id": document.doc_id}
    return store.find(Partition, match, fields=_PARTITION_FIELDS)


def read_document(store: Store, ref: SourceRef) -> Readable:
    """The whole document a citation names (its page, when the citation names one: `read_page`)."""
    document = document_at(store, ref.container, ref.key)
    text = render_page(_partitions(store, document))
    return Readable(str(SourceRef(ref.container, ref.key, ref.version)), document.title or ref.key, text)


def read_page(store: Store, ref: SourceRef, page: int) -> Readable:
    """One page of a paged document (a PDF), or NotFound naming the pages it has."""
    document = document_at(store, ref.container, ref.key)
    partitions = [
        p
        for p in _partitions(store, document)
        if p.page_start is not None and p.page_start <= page <= (p.page_end or p.page_start)
    ]
    if not partitions:
        count = document.page_count
        has = f"it has pages 1 to {count}" if count else "it has no pages (cite the document without #page=)"
        raise NotFound(f"{ref.key!r} has no page {page}: {has}")
    uri = str(SourceRef(ref.container, ref.key, ref.version, page))
    return Readable(uri, f"{document.title or ref.key}, page {page}", render_page(partitions))


def read_chunk(store: Store, source_id: str, chunk_id: str) -> Readable:
    """One chunk: its section (or page) as a heading line, then its text."""
    chunk = get_chunk(store, chunk_id, source_id)
    where = chunk.section or (f"page {chunk.page_start}" if chunk.page_start else "")
    title = " · ".join(filter(None, [chunk.title or chunk.key, where]))
    return Readable(chunk_uri(source_id, chunk_id), title, f"{title}\n\n{chunk.text}")


def chunk_uri(source_id: str, chunk_id: str) -> str:
    return f"chunk://{source_id}/{chunk_id}"


def _document_infos(store: Store) -> list[DocumentInfo]:
    try:
        documents = store.find(Document, {"status": "ok"}, fields=_DOCUMENT_FIELDS)
    except IndexMissing:  # nothing ingested yet: nothing to browse
        return []
    infos = {
        (d.source_id, d.key): DocumentInfo(
            uri=SourceRef(d.bucket or d.source_id, d.key, d.version).base,
            source_id=d.source_id,
            key=d.key,
            title=d.title,
            page_count=d.page_count,
        )
        for d in documents
    }
    return [infos[k] for k in sorted(infos)]


def list_documents(
    store: Store, limit: int, cursor: str | None, cursors: OffsetCursor
) -> tuple[list[DocumentInfo], str | None]:
    """Every ok document of every source (source, key order), `limit` at a time, and the next cursor."""
    offset = cursors.offset(cursor, {})
    infos = _document_infos(store)
    page = infos[offset : offset + limit]
    more = offset + limit < len(infos)
    return page, cursors.next(offset + limit, {}) if more else None


def containers(store: Store) -> list[str]:
    """What a doc:// citation names first: a bucket, or a local source's id."""
    return sorted({info.uri.removeprefix("doc://").split("/", 1)[0] for info in _document_infos(store)})


def keys(store: Store, container: str) -> list[str]:
    return sorted({i.key for i in _document_infos(store) if i.uri.startswith(f"doc://{container}/")})


def page_count(store: Store, container: str, key: str) -> int:
    info = next((i for i in _document_infos(store) if i.key == key and i.uri.startswith(f"doc://{container}/")), None)
    return (info.page_count or 0) if info else 0


def top_summaries(store: Store, source_id: str) -> list[tuple[str, str]]:
    """(node id, text) of the top layer of a source's RAPTOR tree (the broadest summaries); [] without a tree."""
    pointer = store.tree_pointer(source_id)
    if not pointer or not pointer.nodes or not pointer.levels:
        return []
    match = {"source_id": source_id, "tree_version": pointer.version, "level": pointer.levels}
    nodes = store.find(TreeNode, match, fields=["text"], limit=TOP_SUMMARIES)
    return sorted((n.node_id, n.text) for n in nodes)
