"""Citations as readable text: a document, one page of it, or one chunk, and the documents to browse.

What MCP resources (`doc://…`, `chunk://…`) and completions read. A document's text comes from
the partitions table (each page or section once, headings restored: `pages.render_page`); a page
is the partitions that overlap it; a chunk is its own text under its section.
"""

from __future__ import annotations

from dataclasses import dataclass

from thoth.records import to_row
from thoth.retrieval.documents import find_document, get_chunk
from thoth.retrieval.errors import NotFound
from thoth.retrieval.pages import render_page
from thoth.retrieval.paging import CursorError, decode_cursor, encode_cursor
from thoth.retrieval.source_ref import SourceRef
from thoth.store import Store, filters
from thoth.store.schema import DOCUMENTS, SOURCES

_PARTITION_COLUMNS = ["ordinal", "kind", "heading_path", "page_start", "page_end", "text"]
_DOC_COLUMNS = ["doc_id", "source_id", "bucket", "key", "version", "title", "page_count", "status"]


@dataclass(frozen=True)
class Readable:
    uri: str
    title: str
    text: str


@dataclass(frozen=True)
class DocumentInfo:
    uri: str  # doc://{bucket-or-collection}/{key}[?version_id=…]
    collection: str
    key: str
    title: str | None
    page_count: int | None


def _document(store: Store, container: str, key: str) -> dict:
    copies = find_document(store, bucket=container, key=key)
    return to_row(next((d for d in copies if d.key == key), copies[0]))


def _partitions(store: Store, doc: dict) -> list[dict]:
    scope = filters.where({"source_id": doc["source_id"], "doc_id": doc["doc_id"]})
    return store.partitions(scope, _PARTITION_COLUMNS)


def read_document(store: Store, ref: SourceRef) -> Readable:
    """The whole document a citation names (its page, when the citation names one: `read_page`)."""
    doc = _document(store, ref.container, ref.key)
    text = render_page(_partitions(store, doc))
    return Readable(str(SourceRef(ref.container, ref.key, ref.version)), doc.get("title") or ref.key, text)


def read_page(store: Store, ref: SourceRef, page: int) -> Readable:
    """One page of a paged document (a PDF), or NotFound naming the pages it has."""
    doc = _document(store, ref.container, ref.key)
    parts = [
        p
        for p in _partitions(store, doc)
        if p.get("page_start") is not None and p["page_start"] <= page <= (p.get("page_end") or p["page_start"])
    ]
    if not parts:
        count = doc.get("page_count")
        has = f"it has pages 1 to {count}" if count else "it has no pages (cite the document without #page=)"
        raise NotFound(f"{ref.key!r} has no page {page}: {has}")
    uri = str(SourceRef(ref.container, ref.key, ref.version, page))
    return Readable(uri, f"{doc.get('title') or ref.key}, page {page}", render_page(parts))


def read_chunk(store: Store, collection: str, chunk_id: str) -> Readable:
    """One chunk: its section (or page) as a heading line, then its text."""
    row = to_row(get_chunk(store, chunk_id, collection))
    where = row.get("section") or (f"page {row['page_start']}" if row.get("page_start") else "")
    title = " · ".join(filter(None, [row.get("title") or row["key"], where]))
    return Readable(chunk_uri(collection, chunk_id), title, f"{title}\n\n{row['text']}")


def chunk_uri(collection: str, chunk_id: str) -> str:
    return f"chunk://{collection}/{chunk_id}"


def _document_infos(store: Store) -> list[DocumentInfo]:
    if DOCUMENTS not in store.table_names():
        return []
    names = set(store.table(DOCUMENTS).schema.names)
    rows = store.find_documents("status = 'ok'", [c for c in _DOC_COLUMNS if c in names])
    infos = {
        (r["source_id"], r["key"]): DocumentInfo(
            uri=SourceRef(r.get("bucket") or r["source_id"], r["key"], r.get("version")).base,
            collection=r["source_id"],
            key=r["key"],
            title=r.get("title"),
            page_count=r.get("page_count"),
        )
        for r in rows
    }
    return [infos[k] for k in sorted(infos)]


def list_documents(store: Store, limit: int, cursor: str | None) -> tuple[list[DocumentInfo], str | None]:
    """Every ok document of every collection (collection, key order), `limit` at a time, and the next cursor."""
    offset = 0
    if cursor:
        state = decode_cursor(cursor, "resources/list")
        if not isinstance(state.get("o"), int) or state["o"] < 0:
            raise CursorError("cursor is not valid: pass the nextCursor of a previous resources/list unchanged")
        offset = state["o"]
    infos = _document_infos(store)
    page = infos[offset : offset + limit]
    more = offset + limit < len(infos)
    return page, encode_cursor("resources/list", {"o": offset + limit}) if more else None


def containers(store: Store) -> list[str]:
    """What a doc:// citation names first: a bucket, or a local collection's id."""
    return sorted({info.uri.removeprefix("doc://").split("/", 1)[0] for info in _document_infos(store)})


def keys(store: Store, container: str) -> list[str]:
    return sorted({i.key for i in _document_infos(store) if i.uri.startswith(f"doc://{container}/")})


def page_count(store: Store, container: str, key: str) -> int:
    info = next((i for i in _document_infos(store) if i.key == key and i.uri.startswith(f"doc://{container}/")), None)
    return (info.page_count or 0) if info else 0


def collections(store: Store) -> list[str]:
    if SOURCES not in store.table_names():
        return []
    return sorted(r["source_id"] for r in store.list_sources())


def top_summaries(store: Store, dataset_id: str, limit: int = 3) -> list[tuple[str, str]]:
    """(node id, text) of the top layer of a dataset's RAPTOR tree (the broadest summaries); [] without a tree."""
    pointer = store.tree_pointer(dataset_id) if SOURCES in store.table_names() else None
    if not pointer or not pointer.get("nodes") or not pointer.get("levels"):
        return []
    where = filters.where({"source_id": dataset_id, "tree_version": pointer["version"], "level": pointer["levels"]})
    rows = store.tree_nodes(where, ["node_id", "text"], limit=limit)
    return sorted((r["node_id"], r["text"]) for r in rows)
