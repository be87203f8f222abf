"""Chunks with their documents and partitions: what the research tools fetch by id.

A chunk id is the deterministic point id (UUIDv5 of collection, document and
chunk hash), so it names one chunk in one collection. A document's content is
stored once per collection even when several keys hold the same bytes; every
key it is known under comes with it.
"""

from __future__ import annotations

from collections import defaultdict

from thoth.retrieval import citation_urls
from thoth.retrieval.collections import FILE_COLUMNS, file_entry
from thoth.retrieval.errors import NotFound, RetrievalError
from thoth.store import Store, filters
from thoth.store.schema import DOCUMENTS, PARTITIONS

PARTITION_COLUMNS = ["partition_id", "partition_hash", "doc_id", "source_id", "ordinal", "kind", "heading_path",
                     "page_start", "page_end", "text"]  # fmt: skip


def _present(store: Store, table: str, columns: list[str]) -> list[str]:
    names = set(store.table(table).schema.names)
    return [c for c in columns if c in names]


def _pages(row: dict) -> list[int]:
    start, end = row.get("page_start"), row.get("page_end")
    return list(range(start, (end or start) + 1)) if start else []


def partition_entry(row: dict) -> dict:
    return {
        "partition_id": row["partition_id"],
        "partition_hash": row.get("partition_hash"),
        "document_id": row["doc_id"],
        "kind": row["kind"],
        "heading_path": row.get("heading_path") or "",
        "pages": _pages(row),
        "page_start": row.get("page_start"),
        "page_end": row.get("page_end"),
        "text": row["text"],
    }


def chunk_entry(row: dict, document: dict | None = None) -> dict:
    """One chunk as the research tools show it: the seed's payload fields (v1 and v2 names)."""
    doc = document or {}
    return {
        "id": row["chunk_id"],
        "collection": row["source_id"],
        "document_id": row["doc_id"],
        "doc_hash": row["doc_id"],
        "partition_id": row.get("partition_id"),
        "partition_hash": row.get("partition_hash"),
        "chunk_hash": row.get("chunk_hash"),
        "chunk_index": row["chunk_index"],
        "source_id": doc.get("object_id"),
        "source": doc.get("uri"),
        "bucket": doc.get("bucket"),
        "key": row["key"],
        "version_id": doc.get("version"),
        "source_ref": row["source_ref"],
        "title": row.get("title"),
        "section": row.get("section"),
        "pages": _pages(row),
        "page_start": row.get("page_start"),
        "page_end": row.get("page_end"),
        "content_type": row.get("content_type"),
        "text": row["text"],
    }


def document_rows(store: Store, pairs: set[tuple[str, str]]) -> dict[tuple[str, str], list[dict]]:
    """(collection, document id) -> its ok `documents` rows (one per key it is known under), key order."""
    found: dict[tuple[str, str], list[dict]] = defaultdict(list)
    if not pairs:
        return found
    where = (
        f"{filters.is_in('source_id', sorted({s for s, _ in pairs}))} AND "
        f"{filters.is_in('doc_id', sorted({d for _, d in pairs}))} AND status = 'ok'"
    )
    columns = _present(store, DOCUMENTS, [*FILE_COLUMNS, "bibtex", "bibtex_source"])
    for row in store.find_documents(where, columns):
        if (row["source_id"], row["doc_id"]) in pairs:
            row["uri"] = citation_urls.shown(row.get("uri"), store.settings)  # the `source` every entry shows
            found[(row["source_id"], row["doc_id"])].append(row)
    for rows in found.values():
        rows.sort(key=lambda r: r["key"])
    return found


def _row_for(chunk: dict, rows: list[dict]) -> dict | None:
    return next((r for r in rows if r["key"] == chunk["key"]), rows[0] if rows else None)


def document_entry(rows: list[dict]) -> dict:
    """A document: its metadata and every key (object) it is known under."""
    first = rows[0]
    return {
        "document_id": first["doc_id"],
        "collection": first["source_id"],
        "title": first.get("title"),
        "authors": first.get("authors") or [],
        "year": first.get("year"),
        "page_count": first.get("page_count"),
        "objects": [file_entry(r) for r in rows],
    }


def describe_chunks(store: Store, rows: list[dict]) -> list[dict]:
    """Chunk rows (search hits, fetches) with their object's bucket, key, version and object id."""
    documents = document_rows(store, {(r["source_id"], r["doc_id"]) for r in rows})
    return [chunk_entry(r, _row_for(r, documents.get((r["source_id"], r["doc_id"]), []))) for r in rows]


def get_chunk(store: Store, chunk_id: str, collection: str | None = None) -> dict:
    """The chunk row with this id (in `collection`, when given), or NotFound."""
    if not chunk_id or not chunk_id.strip():
        raise RetrievalError("id must be a non-empty chunk id (the `id` of a search hit)")
    rows = store.chunks(filters.eq("chunk_id", chunk_id.strip()), store.hit_columns(), limit=1)
    if not rows:
        raise NotFound(f"no chunk with id {chunk_id!r}; ids come from search hits (`id`)")
    if collection and rows[0]["source_id"] != collection:
        raise NotFound(f"chunk {chunk_id!r} is not in collection {collection!r} (it is in {rows[0]['source_id']!r})")
    return rows[0]


def _chunks_where(store: Store, where: str) -> list[dict]:
    return sorted(store.chunks(where, store.hit_columns()), key=lambda r: r["chunk_index"])


def find_document(
    store: Store,
    document_id: str | None = None,
    bucket: str | None = None,
    key: str | None = None,
    collection: str | None = None,
) -> list[dict]:
    """The ok `documents` rows of one document, by id or by bucket (or local collection) and key."""
    scope = f" AND {filters.eq('source_id', collection)}" if collection else ""
    ids = ["doc_id", "source_id", "key"]
    if document_id:
        rows = store.find_documents(f"{filters.eq('doc_id', document_id)} AND status = 'ok'{scope}", ids)
        what = f"document_id {document_id!r}"
    elif bucket and key:
        in_bucket = f"{filters.eq('bucket', bucket)} AND {filters.eq('key', key)} AND status = 'ok'"
        rows = store.find_documents(in_bucket, ids)
        if not rows:  # a local folder's documents are cited as doc://{collection}/{key}
            in_folder = f"{filters.eq('source_id', bucket)} AND {filters.eq('key', key)} AND status = 'ok'"
            rows = store.find_documents(in_folder, ids)
        rows = [r for r in rows if not collection or r["source_id"] == collection]
        what = f"bucket {bucket!r} key {key!r}"
    else:
        raise RetrievalError("give document_id, or bucket and key")
    if not rows:
        raise NotFound(f"no ingested document with {what}" + (f" in collection {collection!r}" if collection else ""))
    # one collection's copy (the same bytes may be in several collections)
    chosen = collection or min(r["source_id"] for r in rows)
    doc_id = next(r["doc_id"] for r in rows if r["source_id"] == chosen)
    return document_rows(store, {(chosen, doc_id)})[(chosen, doc_id)]


def document_chunks(store: Store, documents: list[dict], limit: int, offset: int = 0) -> dict:
    first = documents[0]
    chunks = _chunks_where(
        store, f"{filters.eq('source_id', first['source_id'])} AND {filters.eq('doc_id', first['doc_id'])}"
    )
    page = chunks[offset : offset + limit]
    return {
        "document": document_entry(documents),
        "total_chunks": len(chunks),
        "offset": offset,
        "next_offset": offset + len(page) if offset + len(page) < len(chunks) else None,
        "chunks": [chunk_entry(c, _row_for(c, documents)) for c in page],
    }


def chunk_document(store: Store, chunk_id: str, collection: str | None, limit: int) -> dict:
    """A chunk and its whole document (metadata, objects, chunks in order)."""
    chunk = get_chunk(store, chunk_id, collection)
    documents = document_rows(store, {(chunk["source_id"], chunk["doc_id"])}).get((chunk["source_id"], chunk["doc_id"]))
    if not documents:
        raise NotFound(f"chunk {chunk_id!r} belongs to no ingested document (it is being re-ingested or removed)")
    return {"chunk": chunk_entry(chunk, _row_for(chunk, documents)), **document_chunks(store, documents, limit)}


def chunk_partition(store: Store, chunk_id: str, collection: str | None) -> dict:
    """A chunk, its partition (a page of a PDF, a section of a page), and every chunk in that page range."""
    chunk = get_chunk(store, chunk_id, collection)
    found = store.partitions(
        filters.eq("partition_id", chunk["partition_id"]), _present(store, PARTITIONS, PARTITION_COLUMNS), limit=1
    )
    if not found:
        raise NotFound(f"the partition of chunk {chunk_id!r} is not stored (it is being re-ingested or removed)")
    partition = found[0]
    scope = f"{filters.eq('source_id', chunk['source_id'])} AND {filters.eq('doc_id', chunk['doc_id'])}"
    if partition.get("page_start") is not None:  # chunks overlapping the partition's pages
        end = partition.get("page_end") or partition["page_start"]
        where = (
            f"{scope} AND {filters.compare('page_start', '<=', end)} AND "
            f"{filters.compare('page_end', '>=', partition['page_start'])}"
        )
    else:
        where = f"{scope} AND {filters.eq('partition_id', partition['partition_id'])}"
    chunks = describe_chunks(store, _chunks_where(store, where))
    return {
        "chunk": next((c for c in chunks if c["id"] == chunk["chunk_id"]), describe_chunks(store, [chunk])[0]),
        "partition": partition_entry(partition),
        "chunks": chunks,
    }


def chunk_bibtex(store: Store, chunk_id: str, collection: str | None) -> dict:
    chunk = get_chunk(store, chunk_id, collection)
    documents = document_rows(store, {(chunk["source_id"], chunk["doc_id"])}).get((chunk["source_id"], chunk["doc_id"]))
    row = _row_for(chunk, documents or [])
    if row is None or not row.get("bibtex"):
        raise NotFound(f"no BibTeX stored for the document of chunk {chunk_id!r}; re-run `python -m ingest`")
    return {
        "id": chunk["chunk_id"],
        "document_id": chunk["doc_id"],
        "source_ref": chunk["source_ref"],
        "bibtex": row["bibtex"],
        "bibtex_source": row.get("bibtex_source") or "generated",
    }


def document_outline(store: Store, collection: str, document_id: str, limit: int = 200) -> dict:
    """A document's pages (PDF) or sections (Markdown, workshop) in order, without their text."""
    columns = _present(store, PARTITIONS, ["partition_id", "ordinal", "kind", "heading_path", "page_start", "page_end"])
    where = f"{filters.eq('source_id', collection)} AND {filters.eq('doc_id', document_id)}"
    rows = sorted(store.partitions(where, columns), key=lambda r: (r["ordinal"], r["partition_id"]))
    return {
        "total": len(rows),
        "parts": [
            {
                "partition_id": r["partition_id"],
                "kind": r["kind"],
                "heading_path": r.get("heading_path") or "",
                "pages": _pages(r),
            }
            for r in rows[:limit]
        ],
    }
