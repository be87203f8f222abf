"""Sources: what one ingest source became (by default one per bucket or folder), listed one way.

`all_sources` is the list every surface starts from (sorted by id; IndexMissing before the first
ingest, which `source_ids` answers with none). `listing` adds what is indexed in each (documents,
failures, chunks) and the shape of its summary tree. Each surface names a source in its own words
(collection, dataset, workshop) in its outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from thoth.records import Chunk, Document, Source
from thoth.store import IndexMissing, Store


@dataclass(frozen=True)
class SourceListing:
    """A source with its counts (what is indexed now) and the shape of its current tree."""

    source: Source
    documents: int  # ok
    failed: int
    chunks: int
    has_tree: bool
    levels: int  # summary levels above the chunks
    nodes: int  # summary nodes
    summariser: str | None
    is_default: bool = False  # the caller's default source (thoth.retrieval.collections)

    @property
    def source_id(self) -> str:
        return self.source.source_id

    @property
    def updated_at(self) -> datetime | None:
        return self.source.updated_at


def all_sources(store: Store, kind: str | None = None) -> list[Source]:
    """Every source (of `kind`, when given), sorted by id."""
    return sorted(store.find(Source, {"kind": kind} if kind else None), key=lambda s: s.source_id)


def source_ids(store: Store, kind: str | None = None) -> list[str]:
    """The ids of `all_sources`; none before the first ingest."""
    try:
        return [source.source_id for source in all_sources(store, kind)]
    except IndexMissing:
        return []


def listing(store: Store, default: str | None = None) -> list[SourceListing]:
    """Every source with its counts and its tree's shape; `default` (a source id) is marked as such."""
    out = []
    for source in all_sources(store):
        source_id = source.source_id
        pointer = store.tree_pointer(source_id)
        out.append(
            SourceListing(
                source=source,
                documents=store.count_of(Document, {"source_id": source_id, "status": "ok"}),
                failed=store.count_of(Document, {"source_id": source_id, "status": "failed"}),
                chunks=store.count_of(Chunk, {"source_id": source_id}),
                has_tree=source.has_tree and not (pointer and pointer.stale),
                levels=pointer.levels if pointer else 0,
                nodes=pointer.nodes if pointer else 0,
                summariser=pointer.summariser if pointer else None,
                is_default=source_id == default,
            )
        )
    return out
