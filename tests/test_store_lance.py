"""The lancedb adapter (thoth.store.lance): its public-API path finds the same hits as the private one
the store uses by default, on a small table (in memory and on LanceDB) and on a large one (ids first)."""

from __future__ import annotations

from unittest.mock import patch

from tests.conftest import nearest
from tests.test_store_chunks import QUERIES
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Hit
from thoth.retrieval.search import hybrid_search
from thoth.store import Store, chunks


def _seen(hits: list[Hit]) -> list[tuple]:
    return [(h.chunk, h.similarity, h.bm25, h.score, h.document_score) for h in hits]


def test_the_public_api_path_finds_the_same_hits(indexed: Settings) -> None:
    embedder = get_embedder(indexed)
    private, public = Store(indexed), Store(indexed, public_api=True)
    assert public.chunks.lance.public and not private.chunks.lance.public
    for late in (False, True):
        values = {"MEMORY_SEARCH_ROWS": 0, "LATE_READ_ROWS": 0} if late else {"LATE_READ_ROWS": chunks.LATE_READ_ROWS}
        with patch.multiple(chunks, **values):
            for query in QUERIES:
                for documents in (False, True):
                    served = hybrid_search(public, embedder, query, 5, documents=documents).hits
                    assert served and _seen(served) == _seen(
                        hybrid_search(private, embedder, query, 5, documents=documents).hits
                    )
                vector = embedder.embed([query])[0]
                assert _seen(nearest(public, vector, 8, {"source_id": "handbook"})) == _seen(
                    nearest(private, vector, 8, {"source_id": "handbook"})
                )


def test_lancedb_caches_are_sized_for_the_instance() -> None:
    """Settings.lance_cache_mb splits into the index cache and at most 16 MB of metadata cache; 0 sizes both
    from the memory the process may use (a quarter of it, 64-1024 MB)."""
    from thoth.freed import LANCE_CACHE_MAX_MB, LANCE_CACHE_MIN_MB, lance_cache_bytes, memory_limit_bytes

    mb = 1 << 20
    assert lance_cache_bytes(16) == (12 * mb, 4 * mb)  # a quarter, below the cap
    assert lance_cache_bytes(256) == (240 * mb, 16 * mb)
    assert lance_cache_bytes(1024) == (1008 * mb, 16 * mb)
    index, metadata = lance_cache_bytes(0)
    expected = min(max(memory_limit_bytes() // 4 // mb, LANCE_CACHE_MIN_MB), LANCE_CACHE_MAX_MB)
    assert index + metadata == expected * mb and metadata == min(expected * mb // 4, 16 * mb)
    assert memory_limit_bytes() > 0
    assert Settings.from_env({}).lance_cache_mb == 0
