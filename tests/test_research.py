"""The research tools over a local folder's index (the shared session server): read-only calls only.

The bucket-backed library, events and signed URLs are in test_gcs.py.
"""

from __future__ import annotations

from pathlib import Path

import bibtexparser

from examples.pdfgen import write_paper_pdf
from tests.conftest import LiveServer, make_settings
from tests.test_gcs import error_text, ok
from thoth.embedders import get_embedder
from thoth.retrieval import research
from thoth.store import Store
from thoth.writes.writer import Writer


def test_local_collection_is_listed(server: LiveServer) -> None:
    assert ok(server, "ping", {})["status"] == "ok"
    collections = ok(server, "list_collections", {})["collections"]
    handbook = next(c for c in collections if c["collection"] == "handbook")
    assert (handbook["kind"], handbook["documents"], handbook["failed"]) == ("handbook", 5, 0)
    files = ok(server, "list_collection_files", {"collection": "handbook", "limit": 2, "batch_size": 1})
    assert files["total"] == 5 and [f["key"] for f in files["files"]] == [
        "engineering/deploy.md",
        "engineering/errors.mdx",
    ]
    assert files["files"][0]["bucket"] is None and files["files"][0]["source"].startswith("file://")


def test_markdown_chunk_partition_is_its_section(server: LiveServer) -> None:
    hit = ok(server, "search", {"query": "sick leave before your shift", "collection": "handbook",
                                "include_partition": True})["hits"][0]  # fmt: skip
    assert hit["key"] == "people/time-off.md" and hit["pages"] == []
    assert hit["partition"]["kind"] == "section" and hit["partition"]["heading_path"].endswith("Sick leave")
    part = ok(server, "fetch_chunk_partition", {"id": hit["id"], "collection": "handbook"})
    assert {c["partition_id"] for c in part["chunks"]} == {hit["partition_id"]}


def test_pdf_in_a_folder_cites_a_file_url_at_the_page(server: LiveServer, indexed) -> None:
    hit = ok(server, "search", {"query": "forklift operators hired in March"})["hits"][0]
    assert hit["source_ref"] == "doc://handbook/reports/quarterly.pdf#page=2"
    citation = ok(server, "resolve_citation", {"source_ref": hit["source_ref"]})
    assert citation["mode"] == "file" and citation["url"].endswith("/reports/quarterly.pdf#page=2")
    assert Path(citation["url"].removeprefix("file://").split("#")[0]).is_file()
    assert "local file" in error_text(server, "resolve_citation", {"source_ref": hit["source_ref"], "mode": "signed"})
    chunks = ok(server, "fetch_document_chunks", {"bucket": "handbook", "key": "reports/quarterly.pdf"})
    assert chunks["document"]["page_count"] == 3 and [c["pages"] for c in chunks["chunks"]] == [[1], [2], [3]]
    entry = bibtexparser.parse_string(ok(server, "fetch_chunk_bibtex", {"id": hit["id"]})["bibtex"]).entries[0]
    assert entry.fields_dict["title"].value == "Quarterly Report"
    assert entry.fields_dict["author"].value == "Lovelace, Ada"


def test_search_can_leave_a_papers_references_out(tmp_path: Path) -> None:
    body = "Dense retrieval finds passages by meaning; a reader model then answers from them. " * 4
    pages = [
        [("h1", "1 Introduction"), ("p", body)],
        [
            ("h1", "References"),
            (
                "p",
                "[1] Ann Lee and Bo Chen. Dense passage retrieval for open-domain question answering. "
                "arXiv preprint arXiv:2004.04906, 2020.",
            ),
        ],
    ]
    folder = tmp_path / "pdfs"
    folder.mkdir()
    write_paper_pdf(folder / "p.pdf", "Dense Retrieval For Readers", [("Ann Lee", "")], pages)
    settings = make_settings(tmp_path / "db")
    Writer(settings).run(str(folder), name="papers")
    store, embedder = Store(settings), get_embedder(settings)
    kinds = {
        h.hit.chunk.content_type for h in research.search(store, embedder, "dense passage retrieval", top_k=5).hits
    }
    assert kinds == {"text", "references"}
    own = research.search(store, embedder, "dense passage retrieval", top_k=5, exclude_references=True).hits
    assert own and {h.hit.chunk.content_type for h in own} == {"text"}
    # Reference chunks rank with their score down-weighted: at a tiny weight, after every text chunk.
    low = research.search(store, embedder, "dense passage retrieval", top_k=5, reference_weight=0.01).hits
    kinds_in_order = [h.hit.chunk.content_type for h in low]
    assert kinds_in_order == sorted(kinds_in_order, key=lambda k: k == "references") and "references" in kinds_in_order
    assert all(a.hit.score >= b.hit.score for a, b in zip(low, low[1:], strict=False))
    # The same through the tools: research's argument and Qurio's filter.
    with LiveServer(settings) as live:
        hits = ok(live, "search", {"query": "dense passage retrieval", "exclude_references": True})["hits"]
        assert hits and {h["content_type"] for h in hits} == {"text"}
        filtered = {"query": "dense passage retrieval", "filters": {"exclude_type": "references"}}
        results = ok(live, "qurio_search", filtered)["results"]
        assert results and {r["type"] for r in results} == {"text"}
        # BibTeX of a reference chunk: the cited work's entry.
        ref = next(h for h in ok(live, "search", {"query": "dense passage retrieval", "top_k": 10})["hits"]
                   if h["content_type"] == "references")  # fmt: skip
        answer = ok(live, "fetch_chunk_bibtex", {"id": ref["id"]})
        entry = bibtexparser.parse_string(answer["bibtex"]).entries[0]
        assert answer["bibtex_source"] == "cited" and entry.key == "lee2020dense"
        fields = {f.key: f.value for f in entry.fields}
        assert fields["title"] == "Dense passage retrieval for open-domain question answering"
        assert (fields["author"], fields["year"], fields["eprint"]) == ("Lee, Ann and Chen, Bo", "2020", "2004.04906")
        both = {"query": "x", "filters": {"type": "text", "exclude_type": "references"}}
        assert "repeats a filter" in error_text(live, "qurio_search", both)
