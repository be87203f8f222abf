"""One object -> its records (thoth/writes/prepare.py): content-derived identity, a failed file's row."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_settings
from thoth.config import Settings
from thoth.embed import get_tokenizer
from thoth.records import Document, Partition
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.writes.chunking import Chunker
from thoth.writes.objects import SourceObject
from thoth.writes.prepare import chunk_identity, prepare
from thoth.writes.writer import Writer


def obj(key: str, data: bytes) -> SourceObject:
    return SourceObject(key=key, uri=f"file:///docs/{key}", size=len(data), read=lambda: data)


def test_a_markdown_file_becomes_a_document_and_its_partitions() -> None:
    settings = Settings.from_env({})
    chunker = Chunker(get_tokenizer(settings), settings.chunk_tokens)  # the overlap: OVERLAP_TOKENS
    data = b"# Guide\n\nIntro.\n\n## Setup\n\nInstall it.\n"
    first = prepare(settings, "docs", obj("guide.md", data), None, {}, chunker, set())
    again = prepare(settings, "docs", obj("guide.md", data), None, {}, chunker, set())
    assert first is not None and again is not None
    assert isinstance(first.document, Document) and first.document.status == "ok"
    assert first.document.title == "Guide" and first.document.bibtex_source == "generated"
    assert all(isinstance(p, Partition) for p in first.partitions) and first.chunks
    assert [p.partition_id for p in first.partitions] == [p.partition_id for p in again.partitions]
    assert [p.heading_path for p in first.partitions][-1] == "Guide > Setup"
    known = prepare(settings, "docs", obj("copy.md", data), None, {}, chunker, {first.doc_id})
    assert known is not None and known.doc_id == first.doc_id and not known.partitions  # stored once


def test_a_file_that_cannot_be_parsed_gets_a_failed_document() -> None:
    settings = Settings.from_env({})
    chunker = Chunker(get_tokenizer(settings), settings.chunk_tokens)  # the overlap: OVERLAP_TOKENS
    failed = prepare(settings, "docs", obj("empty.md", b"  \n"), None, {}, chunker, set())
    assert failed is not None and failed.document.status == "failed" and failed.document.error == "empty file"
    assert not failed.partitions and not failed.chunks


def test_chunk_ids_depend_on_the_collection_and_the_normalised_text() -> None:
    assert chunk_identity("a", "d", 0, "one  two") == chunk_identity("a", "d", 0, "one two")
    assert chunk_identity("a", "d", 0, "x")[0] != chunk_identity("b", "d", 0, "x")[0]
    assert chunk_identity("a", "d", 0, "x")[1] == chunk_identity("b", "d", 0, "x")[1]  # the hash ignores it


def test_a_word_with_a_raised_mark_is_found_by_a_search_for_the_word(tmp_path: Path) -> None:
    """The PDF parser keeps footnote marks raised after their word (`competitions¹`); BM25 would take the
    mark for part of the word. The quoted text keeps it."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "marks.md").write_text("# Results\n\nWe won three competitions¹ with eight units⁸ of cos²(v).\n")
    (root / "other.md").write_text("# Other\n\nNothing to see in this page about prizes.\n")
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(root), name="docs").failed
    store = Store(settings)
    for word in ("competitions", "units", "cos"):
        hits = hybrid_search(store, None, word, 5, alpha=0.0).hits
        assert [h.chunk.key for h in hits] == ["marks.md"], word
        assert "competitions¹" in hits[0].chunk.text and "units⁸" in hits[0].chunk.text
