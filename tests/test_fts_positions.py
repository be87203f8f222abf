"""The BM25 index stores word positions, so quoted phrases search; an older index is migrated by ingest."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.conftest import make_settings, write_corpus
from thoth.retrieval.search import hybrid_search, keyword_query
from thoth.store import Store
from thoth.store.indexes import FTS_COLUMN
from thoth.store.schema import CHUNKS, META_INDEX_FORMAT
from thoth.writes.writer import Writer


def test_keyword_query_has_no_syntax() -> None:
    assert keyword_query('"time off" planner') == ("planner", ("time off",))
    assert keyword_query('"unbalanced') == ("unbalanced", ())
    assert keyword_query("title:leave AND (x*)~^2 [a TO b] \\") == ("title leave AND x 2 a TO b", ())
    assert keyword_query('""') == ("", ())
    assert keyword_query("🙂") == ("", ())


def old_index(store: Store) -> None:
    """The BM25 index as versions before positions built it, which recorded no index format."""
    store.table(CHUNKS).create_fts_index(
        FTS_COLUMN, use_tantivy=False, replace=True, language="English", stem=True, remove_stop_words=True
    )
    store.delete_settings([META_INDEX_FORMAT])


def test_an_index_without_positions_is_migrated_by_ingest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = write_corpus(tmp_path / "corpus")
    settings = make_settings(tmp_path / "lancedb", tree_build=False)
    ingestor = Writer(settings)
    ingestor.run(str(root), name="handbook")
    store = Store(settings)
    assert store.indexes.fts_has_positions() is True
    phrase = hybrid_search(store, None, '"leave planner"', 5, alpha=0.0).hits
    assert phrase and all("leave planner" in h.chunk.text for h in phrase)

    old_index(store)
    assert store.indexes.fts_has_positions() is False
    with caplog.at_level(logging.WARNING, logger="thoth.store"):
        summary = Writer(settings).run(str(root), name="handbook")  # nothing changed: still migrates
    assert not summary.ingested and "BM25 index rebuilt with word positions" in caplog.text
    assert Store(settings).indexes.fts_has_positions() is True
