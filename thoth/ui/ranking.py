"""The search page's account of how its hits were ranked, written from the `Ranking` the search used
(thoth/retrieval/search.py), so the page says what the code did and changes when the ranking does."""

from __future__ import annotations

from thoth.retrieval.search import RRF_K, Ranking


def _weight(value: float) -> str:
    return f"{value:g}"


def explain(ranking: Ranking, alpha: float | None, limit: int) -> list[str]:
    """Sentences: which searches ran, how deep, how their lists were fused and weighed."""
    depth = max(ranking.candidates, limit)
    if alpha == 0.0:
        return [f"Keyword search only (alpha 0): BM25 over {depth} candidates; the vector search did not run."]
    if alpha == 1.0:
        return [f"Vector search only (alpha 1): cosine similarity over {depth} candidates; BM25 did not run."]
    vector = ranking.vector_weight if alpha is None else alpha
    weights = f"vector {_weight(vector)}, keyword {_weight(round(1 - vector, 6))}"
    given = f" (alpha {_weight(alpha)})" if alpha is not None else " (the default; no alpha given)"
    said = [f"Both searches ran, {depth} candidates each, and their lists were fused with weights {weights}{given}."]
    if ranking.fusion == "convex":
        if ranking.normalise == "floor":
            scale = f"cosine from {_weight(ranking.vector_floor)} and BM25 from 0 up to each list's best"
        else:
            scale = "each list's last candidate 0 and its best 1"
        said.append(
            f"Convex fusion: each list's scores are scaled to 0..1 ({scale}), then weighed and summed; "
            "a passage one list did not return gets 0 from it. A fused score of 1.0 means best in both lists."
        )
    else:
        said.append(f"Reciprocal rank fusion: each list adds weight / ({RRF_K} + rank); scores are relative.")
    return said
