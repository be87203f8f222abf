"""Vector, keyword (BM25) and hybrid search over chunks.

Hybrid search runs both and fuses the ranked lists with weighted reciprocal
rank fusion: each list contributes weight / (RRF_K + rank). `alpha` weighs
vector (1.0) against keyword (0.0); 0 and 1 skip the other search entirely.
With no alpha, both lists weigh the same (plain RRF).
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from typing import Any

from thoth.embed import Embedder
from thoth.store import Store

RRF_K = 60
MIN_PREFETCH = 40


class SearchError(ValueError):
    """The search arguments cannot be served; the message names the argument."""


def vector_search(
    store: Store,
    embedder: Embedder,
    query: str,
    limit: int,
    where: str | None = None,
    columns: list[str] | None = None,
) -> list[dict]:
    vector = embedder.embed([query])[0]
    return store.vector_search(vector, limit, where, columns=columns)


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


def keyword_search(
    store: Store, query: str, limit: int, where: str | None = None, columns: list[str] | None = None
) -> list[dict]:
    return _start_keyword_search(store, query, limit, where, columns).result()


def _start_keyword_search(
    store: Store, query: str, limit: int, where: str | None, columns: list[str] | None
) -> Future[list[dict]]:
    """keyword_search, running while the caller goes on (hybrid search embeds the query meanwhile)."""
    words, phrases = keyword_query(query)
    if not words and not phrases:
        done: Future[list[dict]] = Future()
        done.set_result([])  # nothing BM25 could match
        return done
    return store.start_keyword_search(words, limit, where, phrases=phrases, columns=columns)


def fuse(ranked: list[tuple[float, list[dict]]], limit: int, key: str = "chunk_id") -> list[dict]:
    """Weighted reciprocal rank fusion of (weight, hits) lists, keyed by `key` (chunk_id by default)."""
    fused: dict[str, dict[str, Any]] = {}
    for weight, hits in ranked:
        for rank, hit in enumerate(hits, start=1):
            entry = fused.setdefault(hit[key], {**hit, "score": 0.0})
            entry.update({k: v for k, v in hit.items() if k in ("similarity", "bm25")})
            entry["score"] += weight / (RRF_K + rank)
    best = sorted(fused.values(), key=lambda h: (-h["score"], h[key]))[:limit]
    total_weight = sum(weight for weight, _ in ranked) or 1.0
    for hit in best:  # scaled so that 1.0 means ranked first by every search
        hit["score"] = round(hit["score"] * (RRF_K + 1) / total_weight, 6)
    return best


def hybrid_search(
    store: Store,
    embedder: Embedder,
    query: str,
    limit: int,
    *,
    alpha: float | None = None,
    where: str | None = None,
    prefetch: int | None = None,
    columns: list[str] | None = None,
) -> list[dict]:
    """The best `limit` chunks for `query`, each with `score` (fused, 0..1) and what each search saw.
    `columns`: the chunk columns the caller uses (default every hit column)."""
    lists = _ranked_lists(store, embedder, query, limit, alpha, where, prefetch, columns)
    return fuse(list(lists.values()), limit)


def _ranked_lists(
    store: Store,
    embedder: Embedder | None,
    query: str,
    limit: int,
    alpha: float | None,
    where: str | None,
    prefetch: int | None,
    columns: list[str] | None = None,
) -> dict[str, tuple[float, list[dict]]]:
    """The weighted lists hybrid search fuses, by name ("vector", "keyword"); alpha 0 or 1 skips one."""
    if not query or not query.strip():
        raise SearchError("query must be a non-empty string")
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise SearchError(f"alpha must be between 0.0 and 1.0, got {alpha}")
    depth = max(prefetch or 0, MIN_PREFETCH, limit)
    w_vector = 0.5 if alpha is None else alpha
    lists: dict[str, tuple[float, list[dict]]] = {}
    if w_vector > 0 and embedder is None:
        raise SearchError("a vector search needs the embedding model (alpha > 0)")
    # BM25 first: it runs while the query is embedded (measured in docs/benchmarks.md, "Latency")
    keyword = _start_keyword_search(store, query, depth, where, columns) if w_vector < 1 else None
    if w_vector > 0:
        lists["vector"] = (w_vector, vector_search(store, embedder, query, depth, where, columns))
    if keyword is not None:
        lists["keyword"] = (1.0 - w_vector, keyword.result())
    return lists


def explained_search(
    store: Store,
    embedder: Embedder | None,
    query: str,
    limit: int,
    *,
    alpha: float | None = None,
    where: str | None = None,
    prefetch: int | None = None,
) -> list[dict]:
    """hybrid_search's hits, each also with `vector_rank` and `keyword_rank` (1-based), so a reader sees
    why a hit ranked: None when that search did not run (alpha 0 or 1, where `embedder` may be None)
    or did not have the hit among its first candidates."""
    lists = _ranked_lists(store, embedder, query, limit, alpha, where, prefetch)
    ranks = {
        name: {hit["chunk_id"]: rank for rank, hit in enumerate(hits, start=1)} for name, (_, hits) in lists.items()
    }
    hits = fuse(list(lists.values()), limit)
    for hit in hits:
        for name in ("vector", "keyword"):
            hit[f"{name}_rank"] = ranks.get(name, {}).get(hit["chunk_id"])
    return hits
