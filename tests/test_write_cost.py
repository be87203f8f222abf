"""A write of one document does table work in proportion to the document: its chunks wait in the
indexes' unindexed tail (searched all the same) until FOLD_IN_ROWS of them are folded in at once.

Real LanceDB and the real model; bench/reliability.py measures the seconds and the memory.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import bm25, make_settings, write_corpus
from thoth.embedders import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import indexes
from thoth.store.schema import CHUNKS
from thoth.writes.documents import ingest_text
from thoth.writes.writer import Writer

NOTE = "The zorbluxian quartermaster audits the kumquat ledger every Thursday evening."


def unindexed(ingestor: Writer) -> int:
    table = ingestor.store.table(CHUNKS)
    name = next(i.name for i in table.list_indices() if indexes.FTS_COLUMN in i.columns)
    return table.index_stats(name).num_unindexed_rows


def test_a_small_write_waits_in_the_tail_and_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    ingestor = Writer(settings)
    assert not ingestor.run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    assert unindexed(ingestor) == 0  # a run that writes many chunks builds the index over all of them
    versions = len(ingestor.store.table(CHUNKS).list_versions())

    ingest_text(ingestor, ingestor.store, "notes", NOTE, "notes/ledger.md")
    assert unindexed(ingestor) == 1  # not folded in: no optimize over the whole table for one chunk
    assert len(ingestor.store.table(CHUNKS).list_versions()) - versions <= 3  # no compaction rewrite
    store = ingestor.store
    assert "zorbluxian" in bm25(store, "zorbluxian", 3)[0].chunk.text
    assert "kumquat ledger" in bm25(store, "", 3, phrases=("kumquat ledger",))[0].chunk.text
    assert bm25(store, "", 3, phrases=("ledger kumquat",)) == []  # phrases keep their order
    hits = hybrid_search(store, get_embedder(settings), "who audits the kumquat ledger", 3).hits
    assert "zorbluxian" in hits[0].chunk.text

    monkeypatch.setattr(indexes, "FOLD_IN_ROWS", 2)  # the write that brings the tail to FOLD_IN_ROWS folds it in
    ingest_text(ingestor, ingestor.store, "notes", "Parcels arrive at the loading dock before nine.", "notes/dock.md")
    assert unindexed(ingestor) == 0
    assert "zorbluxian" in bm25(store, "zorbluxian", 3)[0].chunk.text
