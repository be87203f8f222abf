"""Collections (the research surface's word for a `Source`): listing, finding one, and the persisted default.

A collection is what one ingest source became: by default one per bucket (or
folder). Each caller has its own default collection (`owner`: the key of the verified
caller, thoth.mcp.roles), kept in the `settings` table so every server instance (and
every restart) sees the same one; one caller's choice never changes another's.
"""

from __future__ import annotations

import dataclasses

from thoth import citation_urls
from thoth.errors import ClientError, NotFound
from thoth.records import Source
from thoth.retrieval.sources import SourceListing, all_sources, listing, source_ids
from thoth.store import IndexMissing, Store
from thoth.store.schema import DEFAULT_COLLECTION


def _default_key(owner: str) -> str:
    return f"{DEFAULT_COLLECTION}/{owner}"


def default_collection(store: Store, owner: str) -> str | None:
    """`owner`'s persisted default, if it still names a source."""
    try:
        value = store.metadata.get(_default_key(owner))
    except IndexMissing:  # no setting written yet
        return None
    return value if value in source_ids(store) else None


def find_collection(store: Store, name: str) -> str:
    """The source id for `name` (an id or a display name), or NotFound listing the ones there are."""
    try:
        sources = all_sources(store)
    except IndexMissing:  # nothing ingested yet
        sources = []
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
    ids = source_ids(store)
    if len(ids) == 1:
        return ids[0]
    raise ClientError(
        f"collection is required: pass one of {', '.join(ids) or '(none: run `python -m ingest` first)'}",
        argument="collection",
    )


def shown_source(source: Source, store: Store) -> Source:
    """`source` as a tool may show it: a folder's path only on a local laptop index (citation_urls' rule);
    elsewhere it is a path on the server's disk, and the collection's name stands for it."""
    on_disk = "://" not in source.uri or source.uri.startswith("file:")
    if not on_disk or citation_urls.file_urls_allowed(store.settings):
        return source
    return dataclasses.replace(source, uri=source.source_id)


def list_collections(store: Store, owner: str | None = None) -> list[SourceListing]:
    """Every source with its counts; `is_default` marks `owner`'s default (none without an owner)."""
    default = default_collection(store, owner) if owner else None
    try:
        found = listing(store, default)
    except IndexMissing:  # nothing ingested yet
        return []
    return [dataclasses.replace(s, source=shown_source(s.source, store)) for s in found]


def set_default_collection(store: Store, name: str, owner: str) -> str:
    source_id = find_collection(store, name)
    store.metadata.set({_default_key(owner): source_id})
    return source_id
