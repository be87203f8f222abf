"""The handbook surface's tool bodies, called directly (no HTTP) on the conftest corpus index."""

from __future__ import annotations

from thoth.app import Thoth
from thoth.config import Settings
from thoth.mcp.outputs.handbook import HandbookResults, TopicList
from thoth.mcp.toolsets import handbook
from thoth.retrieval.topics import Topics, list_topics


def test_search_handbook_returns_ranked_hits_with_the_handbook_words(indexed: Settings) -> None:
    data = handbook.search_handbook(Thoth(indexed), "how do I deploy the service", 3)
    assert isinstance(data, HandbookResults) and data.query == "how do I deploy the service"
    assert [hit.rank for hit in data.results] == list(range(1, len(data.results) + 1)) and data.results
    first = data.results[0]
    assert first.source.endswith((".md", ".pdf", ".txt")) and first.content and first.source_ref
    assert data.render().startswith(f"Found {len(data.results)} results for 'how do I deploy the service':")


def test_list_topics_counts_match_the_retrieval_record(indexed: Settings) -> None:
    app = Thoth(indexed)
    found = list_topics(app.store)
    assert isinstance(found, Topics) and found.chunk_count == sum(t.chunk_count for t in found.topics)
    data = handbook.list_topics(app)
    assert isinstance(data, TopicList)
    assert (data.total_documents, data.unique_files) == (found.chunk_count, found.file_count)
    assert [(t.topic, t.chunks, t.files) for t in data.topics] == [
        (t.topic, t.chunk_count, t.file_count) for t in found.topics
    ]
    assert data.render().splitlines()[:4] == [
        f"Total documents: {found.chunk_count}",
        f"Unique files: {found.file_count}",
        "",
        "Topics:",
    ]
