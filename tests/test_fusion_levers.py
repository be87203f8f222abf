"""Hybrid search's fusion (issue 16): how each list is scaled onto 0..1 (`Ranking.normalise`), files
ranked by document-level fusion, and the RRF preset: pure functions over hits, and hybrid search over
a small generated corpus (real model, real LanceDB)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.test_retrieval_quality import _ingest_pages
from thoth.embed import Embedder
from thoth.embedders import get_embedder
from thoth.records import Chunk, Hit
from thoth.retrieval.search import (
    DEFAULT_RANKING,
    Ranking,
    _scaled,
    by_document,
    document_scores,
    fuse,
    fuse_lists,
    hybrid_search,
    ranking_for,
)
from thoth.store import Store


def _hit(chunk_id: str, key: str, *, similarity: float | None = None, bm25: float | None = None) -> Hit:
    return Hit(Chunk(chunk_id, key=key, source_id="s", partition_id=chunk_id), similarity=similarity, bm25=bm25)


VECTOR = [_hit(f"v{i}", f"v{i}.md", similarity=s) for i, s in enumerate([0.8, 0.6, 0.5, 0.4])]


def test_min_max_scales_the_best_to_one_and_the_last_candidate_to_zero() -> None:
    scaled = _scaled(VECTOR, "similarity", Ranking(normalise="minmax"))
    assert scaled == pytest.approx({"v0": 1.0, "v1": 0.5, "v2": 0.25, "v3": 0.0})


def test_a_fixed_floor_scales_cosine_from_the_floor_not_from_the_last_candidate() -> None:
    scaled = _scaled(VECTOR, "similarity", Ranking(normalise="floor", vector_floor=0.2))
    assert scaled == pytest.approx({"v0": 1.0, "v1": 4 / 6, "v2": 0.5, "v3": 2 / 6})
    keyword = [_hit("k0", "a.md", bm25=10.0), _hit("k1", "b.md", bm25=4.0)]
    assert _scaled(keyword, "bm25", Ranking(normalise="floor", vector_floor=0.2)) == {
        "k0": 1.0,
        "k1": 0.4,
    }  # BM25 from 0


def test_an_unknown_normalisation_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="normalise must be one of floor, minmax"):
        Ranking(normalise="zscore")


def test_the_floor_changes_the_fused_order_where_min_max_stretches_a_small_gap() -> None:
    # Every vector candidate is close to the others (0.80 to 0.65): min-max stretches the small cosine gap
    # between a and b over most of 0..1, and it outweighs b's clear BM25 lead; scaled from a cosine of 0,
    # the gap stays small and the keyword lead decides.
    vector = [
        _hit("a", "a.md", similarity=0.80),
        _hit("b", "b.md", similarity=0.70),
        _hit("z", "z.md", similarity=0.65),
    ]
    keyword = [_hit("b", "b.md", bm25=5.0), _hit("a", "a.md", bm25=4.0), _hit("y", "y.md", bm25=0.0)]
    lists = {"vector": (0.5, vector), "keyword": (0.5, keyword)}
    assert [h.chunk_id for h in fuse_lists(lists, 2, Ranking(normalise="minmax"))] == ["a", "b"]
    assert [h.chunk_id for h in fuse_lists(lists, 2, Ranking(normalise="floor", vector_floor=0.0))] == ["b", "a"]


def test_document_fusion_counts_a_documents_best_chunk_in_each_list() -> None:
    # Page "two" has one passage that matches the words and another that matches the meaning; page "one"
    # a single passage that is second in both. Chunk by chunk, "one" wins; document by document, "two".
    vector = [_hit("two-a", "two.md", similarity=0.9), _hit("one", "one.md", similarity=0.8)]
    vector.append(_hit("far", "far.md", similarity=0.1))
    keyword = [_hit("two-b", "two.md", bm25=9.0), _hit("one", "one.md", bm25=8.0), _hit("far", "far.md", bm25=1.0)]
    lists = {"vector": (0.5, vector), "keyword": (0.5, keyword)}
    ranking = Ranking(document_share=0.0)
    scores = document_scores(lists, ranking)
    assert scores[("s", "two.md")] == pytest.approx(1.0)  # the best of both lists
    fused = fuse_lists(lists, 10, ranking)
    assert [h.chunk.key for h in by_document(fused, 2, Ranking(document_share=0.0))] == ["one.md", "two.md"]
    ranked = by_document(fused, 2, ranking, lists)
    assert [h.chunk.key for h in ranked] == ["two.md", "one.md"]
    assert ranked[0].document_score == pytest.approx(1.0)
    assert ranked[0].chunk_id in {"two-a", "two-b"}  # represented by its best fused passage
    rrf = Ranking(fusion="rrf", document_share=0.0)  # no document-level fusion: by its best fused passage
    assert [h.chunk.key for h in by_document(fused, 2, rrf, lists)] == ["one.md", "two.md"]


FILLER = "Teams write their plans in the shared tracker and review them each quarter."
# notes.md: one section has the part number (the keyword side's best), another says in other words what the
# query means (the vector side's best). inventory.md: one passage second in both lists, close behind.
SPLIT_PAGES = {
    "kit/notes.md": "# Workshop notes\n\n## Ordering\n\nOrder form: part 4471, the supplier address and the price.\n\n"
    "## Accuracy\n\nOver the years a meter's indications wander off the correct figure.\n",
    "kit/inventory.md": "# Inventory\n\nThe store room keeps part 4471 and meters that slowly lose their accuracy.\n",
    **{f"misc/p{i}.md": f"# Page {i}\n\nThe canteen menu changes on Monday {i}. {FILLER}\n" for i in range(6)},
    **{
        f"lab/m{i}.md": f"# Method {i}\n\nA method for sample {i}: weigh, dissolve and filter. {FILLER}\n"
        for i in range(4)
    },
}


def test_a_page_whose_sections_match_the_words_and_the_meaning_ranks_first(tmp_path: Path) -> None:
    settings = _ingest_pages(tmp_path, SPLIT_PAGES, "split")
    store, embedder = Store(settings), get_embedder(settings)
    query = "part 4471 readings drift over time"
    keyword = hybrid_search(store, embedder, query, 2, alpha=0.0).hits
    vector = hybrid_search(store, embedder, query, 2, alpha=1.0).hits
    assert {h.chunk.section for h in keyword} == {"Workshop notes > Ordering", "Inventory"}  # "part 4471"
    assert [h.chunk.section for h in vector] == ["Workshop notes > Accuracy", "Inventory"]

    files = hybrid_search(store, embedder, query, 2, documents=True).hits  # the default: document-level fusion
    assert [h.chunk.key for h in files] == ["kit/notes.md", "kit/inventory.md"]
    assert files[0].document_score > files[1].document_score


@pytest.mark.parametrize("weight", [0.4, 0.7])
def test_the_rrf_preset_is_weighted_reciprocal_rank_fusion_of_the_two_searches(tmp_path: Path, weight: float) -> None:
    # What workshop topic search fused by hand: fuse([(w, vector hits), (1 - w, keyword hits)], depth)
    settings = _ingest_pages(tmp_path, SPLIT_PAGES, "split")
    store, embedder = Store(settings), get_embedder(settings)
    depth, match = 48, {"source_id": "split"}
    preset = Ranking(fusion="rrf", vector_weight=weight)
    for query in ("part 4471 readings drift over time", "weigh and dissolve a sample", '"part 4471"'):
        vector_hits = hybrid_search(store, embedder, query, depth, alpha=1.0, match=match).hits
        keyword_hits = hybrid_search(store, None, query, depth, alpha=0.0, match=match).hits
        expected = fuse([(weight, vector_hits), (1 - weight, keyword_hits)], depth)
        served = hybrid_search(store, embedder, query, depth, match=match, ranking=preset).hits
        assert served and _all(served) == _all(expected)
        keyword_only = hybrid_search(store, embedder, query, depth, match=match, ranking=preset, alpha=0.0).hits
        assert _all(keyword_only) == _all(fuse([(1.0, keyword_hits)], depth))


def _all(hits: list[Hit]) -> list[tuple]:
    return [(h.chunk, h.score, h.similarity, h.bm25) for h in hits]


class _Renamed(Embedder):
    """The real model under another name: what an index embedded by another model reports."""

    def __init__(self, inner, model_name: str):
        self.inner, self.model_name, self.dim, self.max_tokens = inner, model_name, inner.dim, inner.max_tokens

    def embed(self, texts: list[str]):
        return self.inner.embed(texts)


def test_the_cosine_floor_is_the_bundled_model_s_and_another_model_gets_min_max(tmp_path: Path) -> None:
    settings = _ingest_pages(tmp_path, SPLIT_PAGES, "split")
    store, embedder = Store(settings), get_embedder(settings)
    other = _Renamed(embedder, "intfloat/e5-small-v2")
    assert ranking_for(embedder) == DEFAULT_RANKING and DEFAULT_RANKING.normalise == "floor"
    assert ranking_for(other) == replace(DEFAULT_RANKING, normalise="minmax")
    assert ranking_for(None) == DEFAULT_RANKING  # keyword only: no model to ask
    minmax = replace(DEFAULT_RANKING, normalise="minmax")
    for query in ("part 4471 readings drift over time", "weigh and dissolve a sample"):
        for documents in (False, True):
            served = hybrid_search(store, other, query, 4, documents=documents).hits
            expected = hybrid_search(store, embedder, query, 4, documents=documents, ranking=minmax).hits
            assert [(h.chunk_id, h.score) for h in served] == [(h.chunk_id, h.score) for h in expected]
            floor = hybrid_search(store, embedder, query, 4, documents=documents).hits
            assert floor == hybrid_search(store, embedder, query, 4, documents=documents, ranking=DEFAULT_RANKING).hits
