"""The research tools' bodies called directly (no MCP, no HTTP) on the shared test index: the records the
retrieval layer returns become the seed's output models, with the seed's names, in from_record only."""

from __future__ import annotations

import pytest

from thoth.app import Thoth
from thoth.config import Settings
from thoth.errors import ClientError, NotFound
from thoth.mcp.toolsets import research as tools
from thoth.records import Chunk, Document
from thoth.retrieval import documents


@pytest.fixture(scope="module")
def app(indexed: Settings) -> Thoth:
    return Thoth(indexed)


def test_search_hits_carry_their_document_partition_and_citation(app: Thoth) -> None:
    found = tools.search(app, "forklift operators hired in March", top_k=3, include_partition=True,
                         include_document=True)  # fmt: skip
    assert found.collection is None and found.retrieval_mode == "hybrid" and found.hits
    hit = found.hits[0]
    assert hit.source_ref == "doc://handbook/reports/quarterly.pdf#page=2" and hit.pages == [2]
    assert hit.document_id == hit.doc_hash and hit.collection == "handbook"
    assert hit.partition is not None and hit.partition.kind == "page" and hit.partition.pages == [2]
    assert hit.document is not None and [o.key for o in hit.document.objects] == ["reports/quarterly.pdf"]
    assert 0 < hit.score <= 1 and found.render().startswith(f"{len(found.hits)} hits for ")
    # every value the schema accepts is served: a prefetch_k below top_k is raised to it (issue 40)
    assert len(tools.search(app, "forklift", top_k=8, prefetch_k=5).hits) == len(
        tools.search(app, "forklift", top_k=8).hits
    )


def test_fetch_and_partition_of_a_chunk_take_records(app: Thoth) -> None:
    first = tools.search(app, "forklift operators hired in March", collection="handbook").hits[0]
    chunk = documents.get_chunk(app.store, first.id, "handbook")
    assert isinstance(chunk, Chunk) and chunk.chunk_id == first.id  # a record, not a row
    fetched = tools.fetch(app, first.id)
    assert fetched.model_dump() == {k: v for k, v in first.model_dump().items() if k in fetched.model_dump()}
    assert fetched.render().startswith("Quarterly Report, p. 2 [doc://handbook/reports/quarterly.pdf#page=2]")
    part = tools.fetch_chunk_partition(app, first.id, "handbook")
    assert part.chunk.id == first.id and first.id in {c.id for c in part.chunks}
    assert part.render().startswith(f"partition {part.partition.partition_id} (pages [2])")
    with pytest.raises(NotFound, match="no chunk with id"):
        tools.fetch(app, "no-such-chunk")
    with pytest.raises(NotFound, match="does not exist"):
        tools.fetch(app, first.id, "no-such-collection")


def test_documents_and_files_are_document_records_shown_with_seed_names(app: Thoth) -> None:
    copies = documents.find_document(app.store, bucket="handbook", key="reports/quarterly.pdf")
    assert [type(d) for d in copies] == [Document] and copies[0].key == "reports/quarterly.pdf"
    page = tools.fetch_document_chunks(app, bucket="handbook", key="reports/quarterly.pdf", limit=2)
    assert page.document.document_id == copies[0].doc_id and page.total_chunks == 3 and page.next_offset == 2
    whole = tools.fetch_chunk_document(app, page.chunks[0].id, limit=1)
    assert whole.chunk.id == page.chunks[0].id and whole.document == page.document and len(whole.chunks) == 1
    files = tools.list_collection_files(app, "handbook", limit=2)
    assert (files.collection, files.total, files.offset, files.next_offset) == ("handbook", 5, 0, 2)
    assert files.render().splitlines()[0] == "5 files in handbook:"
    listed = tools.list_collections(app)
    assert [c.collection for c in listed.collections] == ["handbook"] and listed.collections[0].documents == 5


def test_citation_and_bibtex(app: Thoth) -> None:
    citation = tools.resolve_citation(app, source_ref="doc://handbook/reports/quarterly.pdf#page=2")
    assert citation.mode == "file" and citation.url.endswith("/reports/quarterly.pdf#page=2")
    assert (citation.page_start, citation.page_end, citation.key) == (2, 2, "reports/quarterly.pdf")
    assert citation.render() == citation.url  # no expiry, no note for a local file
    with pytest.raises(ClientError, match="out of range"):
        tools.resolve_citation(app, bucket="handbook", key="reports/quarterly.pdf", page=9)
    hit = tools.search(app, "forklift operators hired in March").hits[0]
    bibtex = tools.fetch_chunk_bibtex(app, hit.id)
    assert bibtex.document_id == hit.document_id and "Quarterly Report" in bibtex.render()
