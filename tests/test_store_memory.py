"""A small chunk table is searched in memory (thoth.store.memory, issue 17): the same hits, in the
same order, with the same fields and similarities (to float32's last bit) as LanceDB's own
brute-force search; a write is seen at once (LanceDB answers while the new version is read); a filter,
an ANN index or a table past MEMORY_SEARCH_ROWS goes to LanceDB."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

from tests.conftest import bm25, make_settings, nearest, write_corpus
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Chunk, Hit
from thoth.store import Store, chunks
from thoth.writes.writer import Writer

QUERIES = ["how do I request time off", "deploy rollback", "expense report receipts", "on-call rotation"]


def _same(held: list[Hit], lance: list[Hit]) -> bool:
    # LanceDB sums in SIMD lanes, numpy in another order: a similarity may differ in float32's last bit
    # (~6e-8); tools serve it rounded to 4 places
    return [(h.chunk, h.row_id) for h in held] == [(h.chunk, h.row_id) for h in lance] and all(
        abs((a.similarity or 0.0) - (b.similarity or 0.0)) < 1e-6 for a, b in zip(held, lance, strict=True)
    )


def test_memory_search_finds_what_lancedb_finds(indexed: Settings) -> None:
    memory, lance = Store(indexed), Store(indexed)
    embedder = get_embedder(indexed)
    count = lance.table("chunks").count_rows()
    memory.chunks.warm()
    assert memory.chunks._memory.held is not None and memory.chunks._memory.held[1] is not None  # the memory path
    assert memory.search_reading(vector=False).held is not None  # BM25's rows too
    for query, vector in zip(QUERIES, embedder.embed(QUERIES), strict=True):
        for limit in (5, 40, count + 3):
            held = nearest(memory, vector, limit)
            words = bm25(memory, query, limit)  # its rows taken from the copy by row id
            with patch.object(chunks, "MEMORY_SEARCH_ROWS", 0):
                assert held and _same(held, nearest(lance, vector, limit))
                assert words and words == bm25(lance, query, limit)
    assert lance.chunks._memory.held is None


def test_a_write_is_searched_at_once_and_large_or_filtered_searches_go_to_lancedb(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    store, embedder = Store(settings), get_embedder(settings)
    query = "how do I request time off"
    vector = embedder.embed([query])[0]
    store.chunks.warm()
    held = store.chunks._memory.held
    before = nearest(store, vector, 3)

    # A new chunk whose text is the query itself. The next search finds it first: LanceDB answers while
    # the new version is read beside it; once that is held, the memory path finds it too.
    row = store.table("chunks").search().limit(1).to_list()[0]
    store.insert(Chunk, [{**row, "chunk_id": "new-chunk", "text": query, "vector": vector}])
    after = nearest(store, vector, 3)
    assert after[0].chunk_id == "new-chunk" and after[0].similarity > 0.999
    assert [h.chunk_id for h in after[1:]] == [h.chunk_id for h in before[:2]]
    store.chunks.warm()
    assert store.chunks._memory.held[0] != held[0] and store.chunks._memory.held[1] is not None
    assert _same(nearest(store, vector, 3), after)

    # Past the limit: LanceDB answers, and nothing is read or held (the row count says so, without
    # asking for the table's version on every search).
    small = Store(settings)
    with patch.object(chunks, "MEMORY_SEARCH_ROWS", 3):
        small.chunks.warm()
        assert small.chunks._memory.held is None
        assert [h.chunk_id for h in nearest(small, vector, 3)] == [h.chunk_id for h in after]

    # A filter goes to LanceDB (as a prefilter): only that source's chunks, best first.
    key = before[0].chunk.key
    filtered = nearest(store, vector, 50, match={"key": key})
    everything = nearest(store, vector, 1000)
    assert filtered and [h.chunk_id for h in filtered] == [h.chunk_id for h in everything if h.chunk.key == key]


def test_warm_up_reads_a_small_table_before_the_first_search(indexed: Settings) -> None:
    from thoth.app import Thoth

    app = Thoth(indexed)
    app.warm_up(background=False)
    assert app.store.chunks._memory.held is not None and app.store.chunks._memory.held[1] is not None
