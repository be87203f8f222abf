"""On a large table searches rank on ids and a few fields; only the hits kept are read whole (`Store.fill`,
issue 17).
The served hits are the same as when every candidate was read whole, and a row that moved or went
away between the search and the read is found by its chunk id or left out, never mixed up."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from tests.conftest import make_settings, write_corpus
from thoth.config import Settings
from thoth.embed import get_embedder
from thoth.mcp.toolsets.handbook import HIT_FIELDS
from thoth.records import Chunk
from thoth.retrieval.search import Ranking, _ranked_lists, by_document, fuse_lists, hybrid_search, ranking_fields
from thoth.store import Store
from thoth.writes.writer import Writer

QUERIES = ["how do I request time off", "deploy rollback", "expense report receipts", '"on-call" rotation']


def test_hybrid_search_serves_what_whole_candidates_gave(indexed: Settings) -> None:
    store, embedder = Store(indexed), get_embedder(indexed)
    late = Store(replace(indexed, late_read_rows=0))  # as on a large table: ids first, then the hits kept
    assert late.reads_late() and not store.reads_late()
    for query in QUERIES:
        for documents in (False, True):
            whole = _ranked_lists(store, embedder, query, 5, None, None, None)  # every field of every candidate
            fused = fuse_lists(whole, 5) if not documents else by_document(fuse_lists(whole, 80), 5, lists=whole)
            for served in (
                hybrid_search(late, embedder, query, 5, documents=documents),
                hybrid_search(store, embedder, query, 5, documents=documents),
            ):
                assert [(h.chunk, h.score, h.similarity, h.bm25, h.document_score) for h in served] == [
                    (h.chunk, h.score, h.similarity, h.bm25, h.document_score) for h in fused
                ], (query, documents)


def test_a_tool_s_fields_are_read_once_and_served_the_same(indexed: Settings) -> None:
    # search_handbook's fields on a large table: the ranking fields come from the searches, the rest
    # from fill (not read twice); the served chunks equal those of a table read the small way
    store, embedder = Store(indexed), get_embedder(indexed)
    late = Store(replace(indexed, late_read_rows=0))
    for query in QUERIES:
        served = hybrid_search(late, embedder, query, 5, documents=True, fields=HIT_FIELDS)
        small = hybrid_search(store, embedder, query, 5, documents=True, fields=HIT_FIELDS)
        assert served and [(h.chunk, h.score, h.document_score) for h in served] == [
            (h.chunk, h.score, h.document_score) for h in small
        ], query
        assert all(h.chunk.text and h.chunk.key and h.chunk.partition_id for h in served)


def test_searches_read_only_the_ranking_fields(indexed: Settings) -> None:
    store, embedder = Store(indexed), get_embedder(indexed)
    lists = _ranked_lists(store, embedder, QUERIES[0], 5, None, None, None, fields=ranking_fields(Ranking()))
    hits = [hit for _, found in lists.values() for hit in found]
    assert hits and all(h.chunk.text == "" and h.chunk.key and h.row_id is not None for h in hits)
    assert all(h.chunk.text for h in store.fill(hits[:3]))


def test_a_row_moved_since_the_search_is_read_by_its_id_and_a_deleted_one_left_out(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    store, embedder = Store(settings), get_embedder(settings)
    vector = embedder.embed(["how do I request time off"])[0]
    slim = store.vector_search(vector, 6, fields=["key"])
    whole = {h.chunk_id: h.chunk for h in store.vector_search(vector, 6)}
    gone = slim[1].chunk_id

    # Rewrite the table in reverse order without one hit: every row id now names another row or none.
    table = store.table("chunks").to_arrow()
    kept = table.filter(pa.compute.not_equal(table["chunk_id"], gone))
    store.db.create_table("chunks", data=kept.take(list(reversed(range(kept.num_rows)))), mode="overwrite")

    filled = store.fill(slim)
    assert [h.chunk_id for h in filled] == [h.chunk_id for h in slim if h.chunk_id != gone]
    assert all(h.chunk == whole[h.chunk_id] for h in filled)
    assert [h.similarity for h in filled] == [h.similarity for h in slim if h.chunk_id != gone]
    assert isinstance(filled[0].chunk, Chunk) and store.fill([]) == []


def test_stored_vectors_are_the_vectors_the_search_scored(indexed: Settings) -> None:
    # Store.vectors(Chunk, ...) feeds the dense-feedback arm of bench/ablation.py
    store, embedder = Store(indexed), get_embedder(indexed)
    query = embedder.embed([QUERIES[0]])[0]
    hits = store.vector_search(query, 3)
    found = store.vectors(Chunk, [h.chunk_id for h in hits] + ["no-such-chunk"])
    assert set(found) == {h.chunk_id for h in hits}  # an unknown id is left out
    for hit in hits:
        vector = np.asarray(found[hit.chunk_id])
        cosine = float(vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query)))
        assert abs(cosine - hit.similarity) < 1e-4
    assert store.vectors(Chunk, []) == {}
