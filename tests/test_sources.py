"""thoth.retrieval.sources and the document listing (thoth.retrieval.documents.list_documents): the one
listing of sources (counts and tree shape) and of a source's documents that every surface starts from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_settings
from thoth.config import Settings
from thoth.errors import ClientError
from thoth.retrieval.documents import list_documents
from thoth.retrieval.sources import all_sources, listing, source_ids
from thoth.store import IndexMissing, Store


def test_sources_with_counts_and_tree_shape(console_index: Settings) -> None:
    store = Store(console_index)
    listed = {s.source_id: s for s in listing(store, default="topics")}
    assert list(listed) == ["caching-fundamentals", "handbook", "topics"] == source_ids(store)
    handbook = listed["handbook"]
    assert handbook.failed == 2 and handbook.documents > 0 and handbook.chunks >= handbook.documents
    assert handbook.has_tree and handbook.levels >= 1 and handbook.nodes >= 1
    assert not listed["caching-fundamentals"].has_tree and listed["caching-fundamentals"].levels == 0
    assert listed["topics"].is_default and not handbook.is_default
    assert [s.source_id for s in all_sources(store, "workshop")] == ["caching-fundamentals"]


def test_before_the_first_ingest_there_are_no_source_ids_and_no_listing(tmp_path: Path) -> None:
    store = Store(make_settings(tmp_path / "lancedb"))
    assert source_ids(store) == []
    with pytest.raises(IndexMissing):
        listing(store)


def test_a_sources_documents_filtered_sorted_and_counted(console_index: Settings) -> None:
    store = Store(console_index)
    whole = list_documents(store, "handbook", limit=1000)
    assert [d.key for d in whole.documents] == sorted(d.key for d in whole.documents)
    assert whole.counts["failed"] == 2 and whole.counts["ok"] + 2 == whole.total
    failed = list_documents(store, "handbook", status="failed", sort="name", descending=True)
    assert [d.key for d in failed.documents] == ["reports/empty.pdf", "reports/broken.pdf"]
    first = list_documents(store, "handbook", limit=2)
    second = list_documents(store, "handbook", limit=2, offset=first.next_offset or 0)
    assert first.next_offset == 2 and [*first.documents, *second.documents] == list(whole.documents[:4])
    with pytest.raises(ClientError, match="sort must be one of"):
        list_documents(store, "handbook", sort="size")
