"""Search for the research surface: the shared hybrid search, hits described with their citations.

`hybrid` fuses BM25 and vector results (`Ranking`'s fusion), `cosine` is
vector search alone; both are `hybrid_search`, the function every surface uses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from thoth.embed import Embedder
from thoth.errors import check_choice
from thoth.records import Document, Excluding, Hit, Partition
from thoth.retrieval.documents import cite_chunks, documents_by_id
from thoth.retrieval.search import Searched, hybrid_search
from thoth.store import Store

RETRIEVAL_MODES = ("hybrid", "cosine")
# A reference-list chunk's fused score is multiplied by this: a paper's own text ranks above its
# bibliography for topical queries, while a query for a cited work still finds the entry
# (measured with bench/pdf_ranking.py; docs/research.md has the figures).
REFERENCE_WEIGHT = 0.9


def down_weighted(hits: list[Hit], limit: int, weight: float) -> list[Hit]:
    """The best `limit` hits once each reference chunk's score is multiplied by `weight`."""
    if weight == 1.0:
        return hits[:limit]
    scored = [replace(h, score=round(h.score * weight, 6)) if h.chunk.content_type == "references" else h for h in hits]
    return sorted(scored, key=lambda h: -h.score)[:limit]


@dataclass(frozen=True)
class CitedHit:
    """A search hit with the stored object it is cited from, and (when asked) its partition and its
    document's every key."""

    hit: Hit
    document: Document | None = None  # the record of the chunk's key
    partition: Partition | None = None
    copies: tuple[Document, ...] | None = None  # include_document: every key of the document


def search(
    store: Store,
    embedder: Embedder,
    query: str,
    *,
    top_k: int = 5,
    prefetch_k: int = 40,
    source_id: str | None = None,
    retrieval_mode: str = "hybrid",
    include_partition: bool = False,
    include_document: bool = False,
    exclude_references: bool = False,
    reference_weight: float = REFERENCE_WEIGHT,
    content_type: str | None = None,
) -> Searched[CitedHit]:
    """`exclude_references`: a paper's own text only, its bibliography left out (topical questions);
    otherwise reference chunks rank with their score times `reference_weight`. `content_type`: only
    chunks of that type (a paper's tables: "table")."""
    check_choice("retrieval_mode", retrieval_mode, RETRIEVAL_MODES)
    alpha = 1.0 if retrieval_mode == "cosine" else None
    prefetch = max(prefetch_k, top_k)  # each list must hold top_k: the schema allows top_k above the default 40
    kinds = content_type if content_type else Excluding(("references",)) if exclude_references else None
    match = {"source_id": source_id, "content_type": kinds}
    # A few more candidates than asked, so a down-weighted reference chunk can give its place away.
    depth = top_k if exclude_references else max(top_k, min(2 * top_k, prefetch))
    searched = hybrid_search(store, embedder, query, depth, alpha=alpha, match=match, prefetch=prefetch)
    hits = down_weighted(searched.hits, top_k, 1.0 if exclude_references else reference_weight)
    cited = cite_chunks(store, [hit.chunk for hit in hits])
    partitions: dict[str, Partition] = {}
    if include_partition and hits:
        ids = sorted({hit.chunk.partition_id for hit in hits if hit.chunk.partition_id})
        partitions = {p.partition_id: p for p in store.find(Partition, {"partition_id": ids})} if ids else {}
    copies: dict[tuple[str, str], list[Document]] = {}
    if include_document and hits:
        copies = documents_by_id(store, {(hit.chunk.source_id, hit.chunk.doc_id) for hit in hits})
    found = []
    for hit, c in zip(hits, cited, strict=True):
        keys = copies.get((hit.chunk.source_id, hit.chunk.doc_id))
        partition = partitions.get(hit.chunk.partition_id) if hit.chunk.partition_id else None
        found.append(CitedHit(hit, c.document, partition, tuple(keys) if keys else None))
    return Searched(found, searched.keyword_only)
