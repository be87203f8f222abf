"""The Qurio surface's tool bodies and pages.py's records, called directly (no HTTP) on the library index."""

from __future__ import annotations

import pytest

from tests.conftest import HANDBOOK_BASE_URL
from thoth.app import Thoth
from thoth.config import Settings
from thoth.errors import NotFound
from thoth.mcp.outputs.qurio import PAGE_TEXT_CURSOR, PAGES_CURSOR, READ_HINT, QurioPages, QurioResults
from thoth.mcp.toolsets import qurio
from thoth.records import Document, Source
from thoth.retrieval import pages
from thoth.retrieval.sources import all_sources


@pytest.fixture(scope="module")
def app(library: Settings) -> Thoth:
    return Thoth(library)


def test_search_pairs_each_hit_with_its_page_and_url(app: Thoth) -> None:
    found = pages.search(
        app.store, app.settings, app.embedder, "time off", alpha=0.5, limit=5, source_id="handbook"
    ).hits
    assert found and all(isinstance(h.document, Document) for h in found)
    for page_hit in found:
        assert page_hit.document.doc_id == page_hit.hit.chunk.doc_id
        assert page_hit.url.startswith(HANDBOOK_BASE_URL)
        assert pages.find_page(app.store, app.settings, page_hit.url) == page_hit.document
    data = qurio.qurio_search(app, "time off", limit=5, source_id="handbook", correlation_id="direct")
    assert isinstance(data, QurioResults) and data.correlationId == "direct"
    assert [r.url for r in data.results] == [h.url for h in found]
    assert data.render().endswith(READ_HINT)


def test_list_sources_and_pages_are_records_until_the_output_model(app: Thoth) -> None:
    sources = all_sources(app.store)
    assert all(isinstance(s, Source) for s in sources)
    assert [s.source_id for s in sources] == sorted(s.source_id for s in sources)
    listed = qurio.qurio_list_sources(app)
    assert [(s.id, s.type) for s in listed.sources] == [(s.source_id, s.kind) for s in sources]

    first = pages.list_pages(app.store, app.settings, "handbook", 2, None, PAGES_CURSOR)
    assert first.total > 2 and len(first.pages) == 2 and first.next_cursor
    assert [p.document.key for p in first.pages] == sorted(p.document.key for p in first.pages)
    data = qurio.qurio_list_pages(app, "handbook", 2)
    assert isinstance(data, QurioPages) and data.nextCursor == first.next_cursor
    expected = [(p.document.doc_id, p.url, p.document.key) for p in first.pages]
    assert [(p.id, p.url, p.path) for p in data.pages] == expected
    assert data.render().startswith(f"{first.total} pages in handbook (showing 2)")
    with pytest.raises(NotFound, match="known sources"):
        qurio.qurio_list_pages(app, "nope")


def test_read_page_windows_cover_the_page_once(app: Thoth) -> None:
    url = f"{HANDBOOK_BASE_URL}/people/time-off"
    whole = pages.read_page(app.store, app.settings, url, 100_000, None, PAGE_TEXT_CURSOR)
    assert whole.page.document.key == "people/time-off.md" and not whole.truncated
    assert whole.total_chars == len(whole.content)
    parts, cursor = [], None
    while True:
        part = qurio.qurio_read_page(app, url, 100, cursor)
        parts.append(part.content)
        cursor = part.nextCursor
        if cursor is None:
            break
        assert part.truncated and "Read on with qurio_read_page" in part.render()
    assert "".join(parts) == whole.content
