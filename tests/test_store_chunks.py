"""How the store reads a chunk table for a search (thoth.store.chunks), chosen from its size: a large
table's searches read ids and the ranking columns (held in memory by row id, RankingColumns) and
complete only the hits kept. The served hits equal those of a table read whole; a write is searched at
once; a row that moved or went away between the search and the completing read is found by its chunk id
or left out, never mixed up."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pyarrow as pa

from tests.conftest import bm25, make_settings, nearest, write_corpus
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Chunk, Hit
from thoth.retrieval.search import fuse_lists, hybrid_search
from thoth.store import Store, chunks
from thoth.store.memory import RankingColumns
from thoth.writes.writer import Writer

QUERIES = ["how do I request time off", "deploy rollback", "expense report receipts", '"on-call" rotation']


@contextmanager
def reading(late: bool = True, copy: bool = True) -> Iterator[None]:
    """Searches read as on a large table (`late`: ids first; `copy`: ranking columns held), vector search
    on LanceDB: the test tables are small."""
    values = {"MEMORY_SEARCH_ROWS": 0, "LATE_READ_ROWS": 0 if late else 10**12}
    with patch.multiple(chunks, **values, RANKING_COPY_ROWS=chunks.RANKING_COPY_ROWS if copy else 0):
        yield


def _seen(hits: list[Hit]) -> list[tuple]:
    return [(h.chunk, h.similarity, h.bm25, h.score, h.document_score) for h in hits]


def test_a_large_table_serves_what_whole_candidates_gave(indexed: Settings) -> None:
    embedder = get_embedder(indexed)
    held, read, whole = Store(indexed), Store(indexed), Store(indexed)
    with reading():
        held.chunks.warm()
        copy = held.chunks._ranking.held[1]
    assert isinstance(copy, RankingColumns) and len(copy.row_ids) == held.table("chunks").count_rows()
    for query in QUERIES:
        for documents in (False, True):
            with reading(late=False):
                expected = hybrid_search(whole, embedder, query, 5, documents=documents).hits
            with reading():
                served = hybrid_search(held, embedder, query, 5, documents=documents).hits
            with reading(copy=False):
                without_copy = hybrid_search(read, embedder, query, 5, documents=documents).hits
            assert served and _seen(served) == _seen(expected) == _seen(without_copy), (query, documents)
            assert all(h.chunk.text and h.chunk.key and h.chunk.partition_id for h in served)
    assert read.chunks._ranking.held is None


def test_a_large_table_s_searches_read_only_the_ranking_columns_until_kept(indexed: Settings) -> None:
    store, embedder = Store(indexed), get_embedder(indexed)
    with reading():
        vector = embedder.embed([QUERIES[0]])[0]
        search = store.search_reading(vector=True)
        lists = {
            "vector": (0.5, store.vector_candidates(search, vector, 40)),
            "keyword": (0.5, store.keyword_candidates(search, "request time off", (), 40).result()),
        }
        kept = store.completed(search, fuse_lists(lists, 3))
    candidates = [h for _, hits in lists.values() for h in hits]
    assert candidates and all(h.chunk.text == "" and h.chunk.key and h.row_id is not None for h in candidates)
    assert len(kept) == 3 and all(h.chunk.text for h in kept)


def test_a_write_is_searched_at_once_with_the_columns_it_has(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    store = Store(settings)
    held = store.chunks._ranking
    query = "zanzibar quokka itinerary"
    with reading():
        store.chunks.warm()
        version = held.held[0][1]
        assert bm25(store, query, 5) == []
        # A new chunk: the copy is of the version before it, so the search reads its columns from the
        # table (and the new version is read beside it).
        row = store.table("chunks").search().limit(1).to_list()[0]
        store.insert(
            Chunk, [{**row, "chunk_id": "new-chunk", "key": "new/page.md", "text": query, "search_text": query}]
        )
        found = bm25(store, query, 5)
        assert [(h.chunk_id, h.chunk.key, h.chunk.text) for h in found] == [("new-chunk", "new/page.md", query)]
        store.chunks.warm()
        assert held.held[0][1] > version
        assert held.held[1].rows_of([found[0].row_id], ["chunk_id", "key"]) == [
            {"chunk_id": "new-chunk", "key": "new/page.md"}
        ]
        assert [(h.chunk_id, h.row_id) for h in bm25(store, query, 5)] == [("new-chunk", found[0].row_id)]


def test_a_row_not_held_is_never_guessed() -> None:
    copy = RankingColumns.of(pa.table({"chunk_id": ["b", "a"], "_rowid": pa.array([7, 3], type=pa.uint64())}))
    assert copy.rows_of([3, 7], ["chunk_id"]) == [{"chunk_id": "a"}, {"chunk_id": "b"}]  # sorted by row id
    assert copy.rows_of([3, 5], ["chunk_id"]) is None and copy.rows_of([9], ["chunk_id"]) is None
    assert copy.rows_of([3], ["key"]) is None  # a column it does not hold


def test_a_row_moved_since_the_search_is_read_by_its_id_and_a_deleted_one_left_out(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    store, embedder = Store(settings), get_embedder(settings)
    vector = embedder.embed(["how do I request time off"])[0]
    whole = {h.chunk_id: h.chunk for h in nearest(store, vector, 6)}
    with reading(copy=False):
        search = store.search_reading(vector=True)
        slim = store.vector_candidates(search, vector, 6)
        # Between the search and the completing read, the table is rewritten in reverse order without
        # one hit: every row id now names another row or none.
        table = store.table("chunks").to_arrow()
        kept = table.filter(pa.compute.not_equal(table["chunk_id"], slim[1].chunk_id))
        store.tables.db.create_table("chunks", data=kept.take(list(reversed(range(kept.num_rows)))), mode="overwrite")
        completed = store.completed(search, slim)
    gone = slim[1].chunk_id
    assert [h.chunk_id for h in completed] == [h.chunk_id for h in slim if h.chunk_id != gone]
    assert all(h.chunk == whole[h.chunk_id] for h in completed)
    assert [h.similarity for h in completed] == [h.similarity for h in slim if h.chunk_id != gone]


def test_stored_vectors_are_the_vectors_the_search_scored(indexed: Settings) -> None:
    store, embedder = Store(indexed), get_embedder(indexed)
    query = embedder.embed([QUERIES[0]])[0]
    hits = nearest(store, query, 3)
    found = store.vectors(Chunk, [h.chunk_id for h in hits] + ["no-such-chunk"])
    assert set(found) == {h.chunk_id for h in hits}  # an unknown id is left out
    for hit in hits:
        vector = np.asarray(found[hit.chunk_id])
        cosine = float(vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query)))
        assert abs(cosine - hit.similarity) < 1e-4
    assert store.vectors(Chunk, []) == {}


def test_a_kept_hit_takes_its_short_columns_from_the_copy_only_when_it_is_that_row() -> None:
    copy = RankingColumns.of(
        pa.table(
            {
                "chunk_id": ["a", "b"],
                "doc_id": ["d1", "d1"],
                "page_start": pa.array([1, 2], type=pa.int32()),
                "_rowid": pa.array([3, 7], type=pa.uint64()),
            }
        ),
        compact=("doc_id", "page_start"),
    )
    assert pa.types.is_dictionary(copy.rows.column("doc_id").type)  # a document's strings held once
    assert copy.rows.column("page_start").type == pa.int8()  # integers in the narrowest type that holds them
    assert copy.rows.column("chunk_id").type == pa.string()  # a column searches take stays as it is
    hits = [Hit(Chunk("b"), row_id=7), Hit(Chunk("a"), row_id=3)]
    assert chunks._held_columns(hits, (1, copy), ["doc_id", "page_start"]) == {
        "b": {"doc_id": "d1", "page_start": 2},
        "a": {"doc_id": "d1", "page_start": 1},
    }
    moved = [Hit(Chunk("a"), row_id=7)]  # a row id of another version names another row: read the table
    assert chunks._held_columns(moved, (1, copy), ["doc_id"]) is None
    assert chunks._held_columns(hits, None, ["doc_id"]) is None
