"""Collections (rows of `sources`): listing, the persisted default, and the files in one.

A collection is what one ingest source became: by default one per bucket (or
folder). Each caller has its own default collection (`owner`: the key of the verified
caller, thoth.mcp.roles), kept in the `settings` table so every server instance (and
every restart) sees the same one; one caller's choice never changes another's.
"""

from __future__ import annotations

from thoth.retrieval import citation_urls
from thoth.retrieval.errors import NotFound, RetrievalError
from thoth.retrieval.source_ref import SourceRef
from thoth.store import Store, filters
from thoth.store.schema import CHUNKS, DEFAULT_COLLECTION, DOCUMENTS, SETTINGS, SOURCES

FILE_COLUMNS = [
    "doc_id",
    "source_id",
    "key",
    "uri",
    "bucket",
    "version",
    "object_id",
    "title",
    "authors",
    "year",
    "page_count",
    "byte_size",
    "status",
    "error",
]


def _sources(store: Store) -> list[dict]:
    if SOURCES not in store.table_names():
        return []
    return sorted(store.list_sources(), key=lambda row: row["source_id"])


def collection_ids(store: Store) -> list[str]:
    return [row["source_id"] for row in _sources(store)]


def _default_key(owner: str) -> str:
    return f"{DEFAULT_COLLECTION}/{owner}"


def default_collection(store: Store, owner: str) -> str | None:
    """`owner`'s persisted default, if it still names a collection."""
    if SETTINGS not in store.table_names():
        return None
    value = store.get_setting(_default_key(owner))
    return value if value in collection_ids(store) else None


def find_collection(store: Store, name: str) -> str:
    """The collection id for `name` (an id or a display name), or NotFound listing the ones there are."""
    rows = _sources(store)
    for row in rows:
        if name in (row["source_id"], row["name"]):
            return row["source_id"]
    available = ", ".join(row["source_id"] for row in rows) or "(none: run `python -m ingest` first)"
    raise NotFound(f"collection {name!r} does not exist; available: {available}")


def resolve(store: Store, name: str | None, *, owner: str, required: bool = False) -> str | None:
    """`name`, else `owner`'s default collection, else (when `required`) the only one; None means all."""
    if name:
        return find_collection(store, name)
    default = default_collection(store, owner)
    if default or not required:
        return default
    ids = collection_ids(store)
    if len(ids) == 1:
        return ids[0]
    raise RetrievalError(
        "collection is required: pass one of "
        f"{', '.join(ids) or '(none: run `python -m ingest` first)'} or set one with set_default_collection"
    )


def list_collections(store: Store, owner: str | None = None) -> list[dict]:
    """Every collection with its counts; `is_default` marks `owner`'s default (none without an owner)."""
    default = default_collection(store, owner) if owner else None
    result = []
    for row in _sources(store):
        scope = filters.eq("source_id", row["source_id"])
        result.append(
            {
                "collection": row["source_id"],
                "name": row["name"],
                "kind": row["kind"],
                "uri": row["uri"],
                "documents": store.count(DOCUMENTS, f"{scope} AND status = 'ok'"),
                "failed": store.count(DOCUMENTS, f"{scope} AND status = 'failed'"),
                "chunks": store.count(CHUNKS, scope),
                "embed_model": row["embed_model"],
                "updated_at": row["updated_at"].isoformat() if row["updated_at"] else None,
                "is_default": row["source_id"] == default,
            }
        )
    return result


def set_default_collection(store: Store, name: str, owner: str) -> str:
    collection = find_collection(store, name)
    store.set_setting(_default_key(owner), collection)
    return collection


def _files(store: Store, columns: list[str], where: str, batch_size: int = 8192) -> list[dict]:
    """`documents` rows, each `uri` as a tool may show it (thoth.retrieval.citation_urls)."""
    rows = [row for batch in store.scan(DOCUMENTS, columns, where, batch_size=batch_size) for row in batch.to_pylist()]
    for row in rows:
        row["uri"] = citation_urls.shown(row.get("uri"), store.settings)
    return rows


def file_entry(row: dict) -> dict:
    """One stored file as the research tools show it (seed names: document_id, source_id, version_id)."""
    return {
        "document_id": row["doc_id"],
        "collection": row["source_id"],
        "source_id": row.get("object_id"),
        "bucket": row.get("bucket"),
        "key": row["key"],
        "version_id": row.get("version"),
        "source": row.get("uri"),
        "source_ref": SourceRef(row.get("bucket") or row["source_id"], row["key"], row.get("version")).base,
        "title": row.get("title"),
        "authors": row.get("authors") or [],
        "year": row.get("year"),
        "page_count": row.get("page_count"),
        "status": row["status"],
        "error": row.get("error"),
    }


def list_collection_files(store: Store, collection: str, limit: int, offset: int = 0, batch_size: int = 256) -> dict:
    """The files of a collection in key order, `limit` from `offset`; `next_offset` is None at the end."""
    columns = [c for c in FILE_COLUMNS if c in store.table(DOCUMENTS).schema.names]
    rows = _files(store, columns, filters.eq("source_id", collection), batch_size)
    rows.sort(key=lambda row: row["key"])
    page = rows[offset : offset + limit]
    return {
        "collection": collection,
        "total": len(rows),
        "offset": offset,
        "next_offset": offset + len(page) if offset + len(page) < len(rows) else None,
        "files": [file_entry(row) for row in page],
    }


DOCUMENT_SORTS = ("name", "date")
DOCUMENT_STATUSES = ("ok", "failed")


def collection_documents(
    store: Store,
    collection: str,
    *,
    status: str | None = None,
    sort: str = "name",
    descending: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> dict:
    """One page of a collection's files: filtered by status, sorted by key (`name`) or ingest time (`date`).

    Like list_collection_files, plus `ingested_at` on each file and the counts per status, so a page
    can say how many failed without listing them.
    """
    if sort not in DOCUMENT_SORTS:
        raise RetrievalError(f"sort must be one of {', '.join(DOCUMENT_SORTS)}, got {sort!r}")
    if status is not None and status not in DOCUMENT_STATUSES:
        raise RetrievalError(f"status must be one of {', '.join(DOCUMENT_STATUSES)} (or left out), got {status!r}")
    names = store.table(DOCUMENTS).schema.names
    columns = [c for c in [*FILE_COLUMNS, "ingested_at"] if c in names]
    rows = _files(store, columns, filters.eq("source_id", collection))
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in DOCUMENT_STATUSES}
    if status:
        rows = [r for r in rows if r["status"] == status]
    if sort == "date":  # ties (one run writes many files) in key order
        rows.sort(key=lambda r: r["key"])
        rows.sort(key=lambda r: (r.get("ingested_at") is not None, r.get("ingested_at") or 0), reverse=descending)
    else:
        rows.sort(key=lambda r: r["key"], reverse=descending)
    page = rows[offset : offset + limit]
    files = []
    for row in page:
        entry = file_entry(row)
        entry["ingested_at"] = row["ingested_at"].isoformat() if row.get("ingested_at") else None
        files.append(entry)
    return {
        "collection": collection,
        "total": len(rows),
        "counts": counts,
        "offset": offset,
        "next_offset": offset + len(page) if offset + len(page) < len(rows) else None,
        "files": files,
    }
