"""A large table's ranking columns are held in memory by row id (thoth.store.memory.RankingColumns,
issue 17): its searches read only row ids and scores, and find the same hits, in the same order, with
the same fields and scores as searches that read the columns; a write is searched at once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.conftest import make_settings, write_corpus
from thoth.config import Settings
from thoth.embed import get_embedder
from thoth.mcp.toolsets.handbook import HIT_FIELDS
from thoth.records import Hit
from thoth.retrieval.search import DEFAULT_RANKING, hybrid_search, ranking_fields
from thoth.store import Store
from thoth.store.memory import RankingColumns
from thoth.store.schema import RANKING_COLUMNS
from thoth.writes.writer import Writer

QUERIES = ["how do I request time off", "deploy rollback", "expense report receipts", "on-call rotation"]


def _large(settings: Settings, **overrides: object) -> Store:
    # late_read_rows 0: the small test table is read as a large one (ids first); vector search on LanceDB
    return Store(replace(settings, late_read_rows=0, memory_search_rows=0, **overrides))


def _seen(hits: list[Hit]) -> list[tuple]:
    return [(h.chunk, h.row_id, h.similarity, h.bm25, h.score) for h in hits]


def test_held_columns_give_the_same_hits_as_reading_them(indexed: Settings) -> None:
    held, read = _large(indexed), _large(indexed, ranking_copy_rows=0)
    embedder = get_embedder(indexed)
    assert set(ranking_fields(DEFAULT_RANKING)) < set(RANKING_COLUMNS)  # what ranking reads is held
    held.warm_copies()
    copy = held._ranking.held[1]
    assert isinstance(copy, RankingColumns) and len(copy.row_ids) == held.table("chunks").count_rows()
    read.warm_copies()
    assert read._ranking.held is None
    fields = ranking_fields(DEFAULT_RANKING)
    for query, vector in zip(QUERIES, embedder.embed(QUERIES), strict=True):
        hits = held.vector_search(vector, 40, fields=fields)
        assert hits and _seen(hits) == _seen(read.vector_search(vector, 40, fields=fields))
        words = held.keyword_search(query, 40, fields=fields)
        assert words and _seen(words) == _seen(read.keyword_search(query, 40, fields=fields))
        assert copy.rows_of([h.row_id for h in words], ["chunk_id"]) == [{"chunk_id": h.chunk_id} for h in words]
        for documents in (False, True):
            served = hybrid_search(held, embedder, query, 5, documents=documents, fields=list(HIT_FIELDS))
            assert _seen(served) == _seen(
                hybrid_search(read, embedder, query, 5, documents=documents, fields=list(HIT_FIELDS))
            )
    # Other columns than the copy's are read from the table, as before.
    text = held.keyword_search(QUERIES[0], 5, fields=["text"])
    assert [h.chunk.text for h in text] == [h.chunk.text for h in read.keyword_search(QUERIES[0], 5, fields=["text"])]


def test_a_row_not_held_is_never_guessed() -> None:
    import pyarrow as pa

    copy = RankingColumns.of(pa.table({"chunk_id": ["b", "a"], "_rowid": pa.array([7, 3], type=pa.uint64())}))
    assert copy.rows_of([3, 7], ["chunk_id"]) == [{"chunk_id": "a"}, {"chunk_id": "b"}]  # sorted by row id
    assert copy.rows_of([3, 5], ["chunk_id"]) is None and copy.rows_of([9], ["chunk_id"]) is None
    assert copy.rows_of([3], ["key"]) is None  # a column it does not hold


def test_a_write_is_searched_at_once_with_the_columns_it_has(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    store = _large(settings)
    store.warm_copies()
    version = store._ranking.held[0][1]
    query = "zanzibar quokka itinerary"
    fields = ranking_fields(DEFAULT_RANKING)
    assert store.keyword_search(query, 5, fields=fields) == []

    # A new chunk: the copy is of the version before it, so the search reads its columns from the table
    # (and the new version is read beside it).
    row = store.table("chunks").search().limit(1).to_list()[0]
    new = {**row, "chunk_id": "new-chunk", "key": "new/page.md", "text": query, "search_text": query}
    store.add("chunks", [new])
    found = store.keyword_search(query, 5, fields=fields)
    assert [(h.chunk_id, h.chunk.key) for h in found] == [("new-chunk", "new/page.md")]
    store.warm_copies()
    assert store._ranking.held[0][1] > version
    assert store._ranking.held[1].rows_of([found[0].row_id], ["chunk_id", "key"]) == [
        {"chunk_id": "new-chunk", "key": "new/page.md"}
    ]
    assert [(h.chunk_id, h.chunk.key, h.row_id) for h in store.keyword_search(query, 5, fields=fields)] == [
        ("new-chunk", "new/page.md", found[0].row_id)
    ]
