"""thoth.retrieval.readable without HTTP: what the doc:// and chunk:// resources and completions read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_settings
from thoth.config import Settings
from thoth.errors import NotFound
from thoth.mcp.resources import DOCUMENTS_CURSOR
from thoth.records import Chunk
from thoth.retrieval import readable
from thoth.retrieval.sources import source_ids
from thoth.source_ref import SourceRef
from thoth.store import Store

QUARTERLY = SourceRef("handbook", "reports/quarterly.pdf")


def test_a_document_and_one_of_its_pages(indexed: Settings) -> None:
    store = Store(indexed)
    whole = readable.read_document(store, QUARTERLY)
    assert whole.uri == "doc://handbook/reports/quarterly.pdf" and whole.title == "Quarterly Report"
    assert "[page 1]" in whole.text and "harbour contract" in whole.text and "Flooding" in whole.text
    page = readable.read_page(store, QUARTERLY, 2)
    assert page.uri == "doc://handbook/reports/quarterly.pdf#page=2" and page.title == "Quarterly Report, page 2"
    assert "forklift operators" in page.text and "harbour contract" not in page.text
    with pytest.raises(NotFound, match="it has pages 1 to 3"):
        readable.read_page(store, QUARTERLY, 9)


def test_a_chunk_under_its_section(indexed: Settings) -> None:
    store = Store(indexed)
    chunk = store.first(Chunk, {"source_id": "handbook", "key": "engineering/deploy.md"})
    assert chunk is not None
    read = readable.read_chunk(store, "handbook", chunk.chunk_id)
    assert read.uri == f"chunk://handbook/{chunk.chunk_id}"
    assert read.text == f"{read.title}\n\n{chunk.text}" and read.title.startswith("Deploying")
    with pytest.raises(NotFound):
        readable.read_chunk(store, "elsewhere", chunk.chunk_id)


def test_documents_listed_a_page_at_a_time_and_what_completions_offer(indexed: Settings) -> None:
    store = Store(indexed)
    seen, cursor = [], None
    while True:
        infos, cursor = readable.list_documents(store, 2, cursor, DOCUMENTS_CURSOR)
        assert len(infos) <= 2
        seen += infos
        if cursor is None:
            break
    assert [(i.source_id, i.key) for i in seen] == sorted((i.source_id, i.key) for i in seen)
    quarterly = next(i for i in seen if i.key == "reports/quarterly.pdf")
    assert (quarterly.uri, quarterly.title, quarterly.page_count) == (QUARTERLY.base, "Quarterly Report", 3)
    assert source_ids(store) == ["handbook"] and readable.containers(store) == ["handbook"]
    assert "reports/quarterly.pdf" in readable.keys(store, "handbook") and readable.keys(store, "nope") == []
    assert readable.page_count(store, "handbook", "reports/quarterly.pdf") == 3


def test_an_index_not_built_yet_offers_nothing(tmp_path: Path) -> None:
    store = Store(make_settings(tmp_path / "empty"))
    assert readable.list_documents(store, 10, None, DOCUMENTS_CURSOR) == ([], None)
    assert source_ids(store) == [] and readable.containers(store) == []
    assert readable.top_summaries(store, "handbook") == []
