"""Vector, keyword (BM25) and hybrid search over chunks.

Hybrid search runs both and fuses the ranked lists (`Ranking` says how: a convex combination of each
list's scores scaled to 0..1, or weighted reciprocal rank fusion, each list contributing
weight / (RRF_K + rank)). `alpha` weighs vector (1.0) against keyword (0.0); 0 and 1 skip the other
search entirely. With no alpha, the ranking's own weight applies. Tools that rank files rather than
passages use `by_document`, so one page's many chunks do not crowd the others out.
docs/benchmarks.md ("Retrieval quality") has the measurements behind the defaults.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from thoth.embed import BUNDLED_MODEL, Embedder, EmbedderUnavailable
from thoth.errors import ClientError
from thoth.records import Hit, Match
from thoth.retrieval.rerank import configured_reranker, reranked
from thoth.store import Store

T = TypeVar("T")
log = logging.getLogger(__name__)

RRF_K = 60
MIN_PREFETCH = 40
# Searched again without the document versions no `documents` row points at (staged by a write in flight, or
# left by one killed), at most this many times: each round leaves out what the last one found.
SERVE_AGAIN = 3
RERANK_TOP_N = 20  # fused hits an optional reranker reorders: the first page and the next, within its budget


@dataclass(frozen=True)
class Searched(Generic[T]):
    """What a search found: its hits, and, when the query could not be embedded, why they are keyword
    matches only (`keyword_only`, which the answer says)."""

    hits: list[T]
    keyword_only: str | None = None


@dataclass(frozen=True)
class Ranking:
    """How hybrid search ranks chunks and documents. The defaults were chosen on the dev splits
    (docs/benchmarks.md, "Retrieval quality: ranking levers"); the levers measured and not kept are
    listed there."""

    fusion: str = "convex"  # "rrf": weighted reciprocal ranks; "convex": weighted sum of scores scaled per list
    vector_weight: float = 0.4  # the vector list's weight when no alpha is given (keyword: 1 - this)
    document_share: float = 0.2  # a document's score: its best chunk's plus this share of its next ones
    document_chunks: int = 3  # how many of its next chunks count (one per other page or section)
    # How convex fusion scales each list onto 0..1: "floor" (cosine from `vector_floor`, BM25 from 0,
    # each list's best 1) or "minmax" (its best 1, its last candidate 0). The floor was chosen on dev for
    # all-MiniLM-L6-v2, whose unrelated texts score near 0; `ranking_for` gives any other model the floor
    # measured on its index (e5's cosines all sit high), or "minmax" where none was measured.
    normalise: str = "floor"
    vector_floor: float = 0.2
    candidates: int = MIN_PREFETCH  # how deep each list is fetched (the min-max floor is the last one)

    def __post_init__(self) -> None:
        if self.normalise not in NORMALISATIONS:
            raise ValueError(f"Ranking.normalise must be one of {', '.join(NORMALISATIONS)}, got {self.normalise!r}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"Ranking.fusion must be one of {', '.join(FUSIONS)}, got {self.fusion!r}")


NORMALISATIONS = ("floor", "minmax")
FUSIONS = ("convex", "rrf")
DEFAULT_RANKING = Ranking()
# For a model whose floor was never measured (an index built before floors were): min-max scaling
# assumes nothing about where its cosines sit
UNMEASURED_MODEL_RANKING = replace(DEFAULT_RANKING, normalise="minmax")


def ranking_for(embedder: Embedder | None, store: Store | None = None) -> Ranking:
    """The default ranking for queries embedded by `embedder`'s model. The bundled all-MiniLM-L6-v2
    keeps the floor chosen on the dev splits, 0.2 (its measured floor, the 75th percentile of unrelated
    pairs, is 0.205 on SciFact: the same within the measurement's spread). Any other model's cosines may
    all sit high (e5's at 0.7-0.9), so its floor is the one measured on the index at ingest
    (thoth/writes/calibrate.py); an index without one gets min-max scaling (docs/models.md)."""
    if embedder is None or embedder.model_name == BUNDLED_MODEL:
        return DEFAULT_RANKING
    measured = store.calibration.floor() if store is not None else None
    if measured is None:
        return UNMEASURED_MODEL_RANKING
    return replace(DEFAULT_RANKING, vector_floor=measured.floor)


_PHRASE = re.compile(r'"([^"]*)"')
_NOT_A_WORD = re.compile(r"[^\w]+|_+")  # punctuation, operators, emoji, quotes: word separators


def _words(text: str) -> str:
    return " ".join(_NOT_A_WORD.sub(" ", text).split())


def keyword_query(query: str) -> tuple[str, tuple[str, ...]]:
    """(words, phrases) of what a person typed. Text in double quotes is a phrase; everything else is
    words. No query syntax: `AND`, `field:value`, `*`, `~`, `^`, brackets and backslashes are plain
    text, and an unbalanced quote is just a character, so every text is a valid keyword query."""
    phrases = tuple(p for p in (_words(m) for m in _PHRASE.findall(query)) if p)
    rest = _PHRASE.sub(" ", query)
    return _words(rest), phrases


Lists = dict[str, tuple[float, list[Hit]]]  # the ranked lists hybrid search fuses, by name, with their weights


def rrf(ranked: list[tuple[float, list[T]]], limit: int, key: Callable[[T], str]) -> list[tuple[T, float]]:
    """Weighted reciprocal rank fusion of (weight, items) lists, each list contributing
    weight / (RRF_K + rank): the best `limit` items (each as first seen) with their scores, scaled so
    that 1.0 means ranked first by every list."""
    first: dict[str, T] = {}
    scores: dict[str, float] = {}
    for weight, items in ranked:
        for rank, item in enumerate(items, start=1):
            name = key(item)
            first.setdefault(name, item)
            scores[name] = scores.get(name, 0.0) + weight / (RRF_K + rank)
    best = sorted(scores, key=lambda name: (-scores[name], name))[:limit]
    total_weight = sum(weight for weight, _ in ranked) or 1.0
    return [(first[name], round(scores[name] * (RRF_K + 1) / total_weight, 6)) for name in best]


def _fused(lists: list[list[Hit]], scores: list[tuple[str, float]]) -> list[Hit]:
    """The hits named by `scores` (chunk id, fused score), in that order: each as first seen, with its
    fused score and the similarity and bm25 any list saw (one copy per hit returned, none per hit seen)."""
    wanted = dict(scores)
    first: dict[str, Hit] = {}
    similarity: dict[str, float] = {}
    bm25: dict[str, float] = {}
    for hits in lists:
        for hit in hits:
            chunk_id = hit.chunk_id
            if chunk_id not in wanted:
                continue
            first.setdefault(chunk_id, hit)
            if hit.similarity is not None:
                similarity[chunk_id] = hit.similarity
            if hit.bm25 is not None:
                bm25[chunk_id] = hit.bm25
    return [replace(first[c], score=score, similarity=similarity.get(c), bm25=bm25.get(c)) for c, score in scores]


def fuse(ranked: list[tuple[float, list[Hit]]], limit: int) -> list[Hit]:
    """Weighted reciprocal rank fusion of (weight, hits) lists (`rrf`)."""
    scores = [(hit.chunk_id, score) for hit, score in rrf(ranked, limit, lambda h: h.chunk_id)]
    return _fused([hits for _, hits in ranked], scores)


_FIELDS = {"vector": "similarity", "keyword": "bm25"}  # the score each list ranks by


def _scaled(hits: list[Hit], field: str, ranking: Ranking = DEFAULT_RANKING) -> dict[str, float]:
    """Each hit's `field` mapped onto 0..1 within its list as `ranking.normalise` says (by default the
    best 1, a cosine of `vector_floor` or a BM25 of 0 as 0), clipped to 0..1."""
    scores = [float(getattr(h, field)) for h in hits]
    if not scores:
        return {}
    top = max(scores)
    if ranking.normalise == "floor":
        bottom = ranking.vector_floor if field == "similarity" else 0.0
    else:
        bottom = min(scores)
    span = top - bottom
    if span <= 0:
        return dict.fromkeys((h.chunk_id for h in hits), 1.0)
    return {h.chunk_id: min(1.0, max(0.0, (s - bottom) / span)) for h, s in zip(hits, scores, strict=True)}


def fuse_scores(lists: Lists, limit: int, ranking: Ranking = DEFAULT_RANKING) -> list[Hit]:
    """Convex combination of the lists' scaled scores (similarity for "vector", bm25 for "keyword"): a
    hit missing from a list gets that list's floor, 0. Scores are 0..1, 1.0 = best in every list."""
    total_weight = sum(weight for weight, _ in lists.values()) or 1.0
    scores: dict[str, float] = {}
    first_rank: dict[str, int] = {}  # ties (equal scores) keep the order the searches gave
    for name, (weight, hits) in lists.items():
        scaled = _scaled(hits, _FIELDS[name], ranking)
        for rank, hit in enumerate(hits):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight * scaled[hit.chunk_id] / total_weight
            first_rank[hit.chunk_id] = min(rank, first_rank.get(hit.chunk_id, rank))
    best = sorted(scores, key=lambda c: (-scores[c], first_rank[c], c))[:limit]
    return _fused([hits for _, hits in lists.values()], [(c, round(scores[c], 6)) for c in best])


def fuse_lists(lists: Lists, limit: int, ranking: Ranking = DEFAULT_RANKING) -> list[Hit]:
    """The lists hybrid search ran, fused as `ranking` says."""
    if ranking.fusion == "convex":
        return fuse_scores(lists, limit, ranking)
    return fuse(list(lists.values()), limit)


def _other_partitions(group: list[Hit]) -> list[float]:
    """Scores of a document's further evidence, best first: the best hit of each other partition (page
    or section). Overlapping windows of one section say the same thing and count once, so a long
    section (or abstract) cut into many chunks gains nothing over a short one (measured on SciFact)."""
    seen = {group[0].chunk.partition_id}
    scores = []
    for hit in group[1:]:
        partition = hit.chunk.partition_id
        if partition not in seen:
            seen.add(partition)
            scores.append(hit.score)
    return scores


def _document(hit: Hit) -> tuple[str, str]:
    return hit.chunk.source_id, hit.chunk.key


def document_scores(lists: Lists, ranking: Ranking = DEFAULT_RANKING) -> dict[tuple[str, str], float]:
    """Document-level convex fusion: each document's weighted sum, over the lists, of its best chunk's
    scaled score in that list (a passage matching the words and another matching the meaning both count)."""
    total_weight = sum(weight for weight, _ in lists.values()) or 1.0
    scores: dict[tuple[str, str], float] = {}
    for name, (weight, hits) in lists.items():
        scaled = _scaled(hits, _FIELDS[name], ranking)
        best: dict[tuple[str, str], float] = {}
        for hit in hits:
            doc = _document(hit)
            best[doc] = max(best.get(doc, 0.0), scaled[hit.chunk_id])
        for doc, score in best.items():
            scores[doc] = scores.get(doc, 0.0) + weight * score / total_weight
    return scores


def by_document(
    hits: list[Hit], limit: int, ranking: Ranking = DEFAULT_RANKING, lists: Lists | None = None
) -> list[Hit]:
    """`limit` hits that put documents first: each document (source and key) scored by its best hit
    plus `document_share` of the best hits of its next `document_chunks` partitions, and represented
    by its best hit; documents in that order, then, when fewer documents than `limit` were found, their
    further hits by score. Each hit keeps its own `score` and gets `document_score`. With `lists` (the
    lists `hits` were fused from) and convex fusion, a document's own part of the score is
    `document_scores`' instead of its best hit's."""
    fused = document_scores(lists, ranking) if lists and ranking.fusion == "convex" else {}
    groups: dict[tuple[str, str], list[Hit]] = {}
    for hit in sorted(hits, key=lambda h: -h.score):
        groups.setdefault(_document(hit), []).append(hit)
    scored = []
    for doc, group in groups.items():
        rest = _other_partitions(group)[: ranking.document_chunks]
        scored.append((fused.get(doc, group[0].score) + ranking.document_share * sum(rest), group))
    scored.sort(key=lambda sg: -sg[0])  # stable: ties keep the best hit's order
    firsts = [replace(group[0], document_score=round(score, 6)) for score, group in scored[:limit]]
    if len(firsts) >= limit:
        return firsts
    more = sorted(((h, score) for score, group in scored for h in group[1:]), key=lambda hs: -hs[0].score)
    return firsts + [replace(h, document_score=round(score, 6)) for h, score in more[: limit - len(firsts)]]


def hybrid_search(
    store: Store,
    embedder: Embedder | None,
    query: str,
    limit: int,
    *,
    alpha: float | None = None,
    match: Match | None = None,
    prefetch: int | None = None,
    documents: bool = False,
    ranking: Ranking | None = None,
) -> Searched[Hit]:
    """The best `limit` chunks for `query`, each with `score` (fused, 0..1) and what each search saw.
    With `documents`, the best documents instead, each by its best chunk (`by_document`).
    `match`: which chunks may be found; `ranking`: by default the one for the embedder's model
    (`ranking_for`). A configured reranker (thoth.retrieval.rerank, off by default) reorders the first
    RERANK_TOP_N fused hits, or documents, before the first `limit` are kept."""
    ranking = ranking or ranking_for(embedder, store)
    settings = store.settings
    reranker = configured_reranker(settings)
    wanted = max(limit, RERANK_TOP_N) if reranker else limit  # the reranker sees its top N

    def keep(lists: Lists) -> list[Hit]:
        if not documents:
            return fuse_lists(lists, wanted, ranking)
        depth = max(len(hits) for _, hits in lists.values()) if lists else wanted
        return by_document(fuse_lists(lists, 2 * depth, ranking), wanted, ranking, lists)

    found = _search(store, embedder, query, wanted, alpha, match, prefetch, ranking, keep)
    if reranker is None:
        return found
    return replace(found, hits=reranked(reranker, query, found.hits, RERANK_TOP_N)[:limit])


def _search(
    store: Store,
    embedder: Embedder | None,
    query: str,
    limit: int,
    alpha: float | None,
    match: Match | None,
    prefetch: int | None,
    ranking: Ranking,
    keep: Callable[[Lists], list[Hit]],
) -> Searched[Hit]:
    """The hits `keep` keeps of the weighted lists hybrid search fuses, by name ("vector", "keyword"; alpha
    0 or 1 skips one), each step a call of the store: how it reads, the candidate lists (BM25 runs while
    the query is embedded), the kept hits read whole (on a large table only these), then the serve check."""
    if not query or not query.strip():
        raise ClientError("query must be a non-empty string")
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise ClientError(f"alpha must be between 0.0 and 1.0, got {alpha}")
    depth = max(prefetch or 0, ranking.candidates, limit)
    w_vector = ranking.vector_weight if alpha is None else alpha
    if w_vector > 0 and embedder is None:
        raise ClientError("a vector search needs the embedding model (alpha > 0)")
    reading = store.search_reading(match, vector=w_vector > 0)
    words, phrases = keyword_query(query)
    keyword = store.keyword_candidates(reading, words, phrases, depth) if w_vector < 1 else None
    vector, note = None, None
    if embedder is not None and w_vector > 0:
        try:
            vector = embedder.embed_queries([query])[0]
        except EmbedderUnavailable as exc:
            # The provider is down (a remote endpoint past its retries): keyword matches still answer.
            log.warning("vector search is unavailable, answering with keyword matches: %s", exc)
            note, w_vector = keyword_only(exc), 0.0
            keyword = keyword or store.keyword_candidates(reading, words, phrases, depth)
    for again in range(SERVE_AGAIN, -1, -1):
        lists: Lists = {}
        if vector is not None:
            lists["vector"] = (w_vector, store.vector_candidates(reading, vector, depth))
        if keyword is not None:
            lists["keyword"] = (1.0 - w_vector, keyword.result())
        hits = store.completed(reading, keep(lists))
        unserved = store.unserved(reading, hits)
        if not unserved or not again:
            break
        # A write in flight staged these versions, or one killed left them: searched again without them.
        reading = reading.without(unserved)
        keyword = store.keyword_candidates(reading, words, phrases, depth) if keyword is not None else None
    return Searched([hit for hit in hits if (hit.chunk.source_id, hit.chunk.doc_id) not in unserved], note)


def keyword_only(reason: object) -> str:
    """What a result says when vector search could not run."""
    return f"vector search is unavailable ({reason}); these are keyword matches"


def explained_search(
    store: Store,
    embedder: Embedder | None,
    query: str,
    limit: int,
    *,
    alpha: float | None = None,
    match: Match | None = None,
    as_if: int | None = None,
) -> Searched[Hit]:
    """hybrid_search's hits, each also with `vector_rank` and `keyword_rank` (1-based), so a reader sees
    why a hit ranked: None when that search did not run (alpha 0 or 1, where `embedder` may be None)
    or did not have the hit among its first candidates. With `as_if`, the searches fetch what
    hybrid_search(limit=as_if) fetches, so the first `as_if` hits are that search's, in its order
    (fused scores are scaled within each list, so a deeper list would reorder them); the rest of the
    `limit` come from the same lists."""
    ranking = ranking_for(embedder, store)

    def keep(lists: Lists) -> list[Hit]:
        ranks = {name: {h.chunk_id: rank for rank, h in enumerate(hits, start=1)} for name, (_, hits) in lists.items()}
        return [
            replace(
                hit,
                vector_rank=ranks.get("vector", {}).get(hit.chunk_id),
                keyword_rank=ranks.get("keyword", {}).get(hit.chunk_id),
            )
            for hit in fuse_lists(lists, limit, ranking)
        ]

    return _search(store, embedder, query, as_if or limit, alpha, match, prefetch=None, ranking=ranking, keep=keep)
