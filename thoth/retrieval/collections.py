"""Collections (the research surface's word for a `Source`): listing, the persisted default, and the files in one.

A collection is what one ingest source became: by default one per bucket (or
folder). Each caller has its own default collection (`owner`: the key of the verified
caller, thoth.mcp.roles), kept in the `settings` table so every server instance (and
every restart) sees the same one; one caller's choice never changes another's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from thoth.records import Chunk, Document, Source
from thoth.retrieval import citation_urls
from thoth.retrieval.documents import with_shown_uri
from thoth.retrieval.errors import NotFound, RetrievalError
from thoth.store import IndexMissing, Store
from thoth.store.schema import DEFAULT_COLLECTION


@dataclass(frozen=True)
class SourceCounts:
    """A source with what is indexed in it, as list_collections shows it."""

    source: Source
    documents: int  # ok
    failed: int
    chunks: int
    is_default: bool


@dataclass(frozen=True)
class DocumentPage:
    """One page of a source's documents (one record per key), and where the next page starts."""

    source_id: str
    total: int
    offset: int
    next_offset: int | None
    documents: tuple[Document, ...]
    counts: Mapping[str, int] | None = None  # per status, over the whole source (collection_documents)


def _sources(store: Store) -> list[Source]:
    try:
        return sorted(store.find(Source), key=lambda source: source.source_id)
    except IndexMissing:  # nothing ingested yet
        return []


def collection_ids(store: Store) -> list[str]:
    return [source.source_id for source in _sources(store)]


def _default_key(owner: str) -> str:
    return f"{DEFAULT_COLLECTION}/{owner}"


def default_collection(store: Store, owner: str) -> str | None:
    """`owner`'s persisted default, if it still names a source."""
    try:
        value = store.get_setting(_default_key(owner))
    except IndexMissing:  # no setting written yet
        return None
    return value if value in collection_ids(store) else None


def find_collection(store: Store, name: str) -> str:
    """The source id for `name` (an id or a display name), or NotFound listing the ones there are."""
    sources = _sources(store)
    for source in sources:
        if name in (source.source_id, source.name):
            return source.source_id
    available = ", ".join(source.source_id for source in sources) or "(none: run `python -m ingest` first)"
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


def _shown(source: Source, store: Store) -> Source:
    """`source` as a tool may show it: a folder's path only on a local laptop index (citation_urls' rule);
    elsewhere it is a path on the server's disk, and the collection's name stands for it."""
    on_disk = "://" not in source.uri or source.uri.startswith("file:")
    if not on_disk or citation_urls.file_urls_allowed(store.settings):
        return source
    return dataclasses.replace(source, uri=source.source_id)


def list_collections(store: Store, owner: str | None = None) -> list[SourceCounts]:
    """Every source with its counts; `is_default` marks `owner`'s default (none without an owner)."""
    default = default_collection(store, owner) if owner else None
    return [
        SourceCounts(
            source=_shown(source, store),
            documents=store.count_of(Document, {"source_id": source.source_id, "status": "ok"}),
            failed=store.count_of(Document, {"source_id": source.source_id, "status": "failed"}),
            chunks=store.count_of(Chunk, {"source_id": source.source_id}),
            is_default=source.source_id == default,
        )
        for source in _sources(store)
    ]


def set_default_collection(store: Store, name: str, owner: str) -> str:
    source_id = find_collection(store, name)
    store.set_setting(_default_key(owner), source_id)
    return source_id


def _documents(store: Store, source_id: str) -> list[Document]:
    """A source's document records, each `uri` as a tool may show it, else "" (thoth.retrieval.citation_urls)."""
    return [with_shown_uri(d, store) for d in store.find(Document, {"source_id": source_id}, fields=_LISTED)]


# what a listing shows of a document (not its BibTeX or sidecar)
_LISTED = ["source_id", "key", "uri", "bucket", "version", "object_id", "title", "authors", "year", "page_count",
           "byte_size", "status", "error", "ingested_at"]  # fmt: skip


def _page(source_id: str, documents: list[Document], limit: int, offset: int, **counts: int) -> DocumentPage:
    page = documents[offset : offset + limit]
    return DocumentPage(
        source_id=source_id,
        total=len(documents),
        offset=offset,
        next_offset=offset + len(page) if offset + len(page) < len(documents) else None,
        documents=tuple(page),
        counts=counts or None,
    )


def list_collection_files(store: Store, source_id: str, limit: int, offset: int = 0) -> DocumentPage:
    """The documents of a source in key order, `limit` from `offset`; `next_offset` is None at the end."""
    documents = sorted(_documents(store, source_id), key=lambda d: d.key)
    return _page(source_id, documents, limit, offset)


DOCUMENT_SORTS = ("name", "date")
DOCUMENT_STATUSES = ("ok", "failed")


def collection_documents(
    store: Store,
    source_id: str,
    *,
    status: str | None = None,
    sort: str = "name",
    descending: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> DocumentPage:
    """One page of a source's documents: filtered by status, sorted by key (`name`) or ingest time (`date`).

    Like list_collection_files, plus the counts per status, so a page can say how many failed
    without listing them.
    """
    if sort not in DOCUMENT_SORTS:
        raise RetrievalError(f"sort must be one of {', '.join(DOCUMENT_SORTS)}, got {sort!r}")
    if status is not None and status not in DOCUMENT_STATUSES:
        raise RetrievalError(f"status must be one of {', '.join(DOCUMENT_STATUSES)} (or left out), got {status!r}")
    documents = _documents(store, source_id)
    counts = {s: sum(1 for d in documents if d.status == s) for s in DOCUMENT_STATUSES}
    if status:
        documents = [d for d in documents if d.status == status]
    if sort == "date":  # ties (one run writes many files) in key order
        documents.sort(key=lambda d: d.key)
        documents.sort(key=lambda d: (d.ingested_at is not None, d.ingested_at or 0), reverse=descending)
    else:
        documents.sort(key=lambda d: d.key, reverse=descending)
    return _page(source_id, documents, limit, offset, **counts)
