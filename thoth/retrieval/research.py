"""Search for the research surface: the shared hybrid search, hits described with their citations.

`hybrid` fuses BM25 and vector results (`Ranking`'s fusion), `cosine` is
vector search alone; both are `hybrid_search`, the function every surface uses.
"""

from __future__ import annotations

from thoth.embed import Embedder
from thoth.records import legacy_row
from thoth.retrieval.documents import (
    PARTITION_COLUMNS,
    describe_chunks,
    document_entry,
    document_rows,
    partition_entry,
)
from thoth.retrieval.errors import RetrievalError
from thoth.retrieval.search import hybrid_search
from thoth.store import Store, filters
from thoth.store.schema import PARTITIONS

RETRIEVAL_MODES = ("hybrid", "cosine")


def search(
    store: Store,
    embedder: Embedder,
    query: str,
    *,
    top_k: int = 5,
    prefetch_k: int = 40,
    collection: str | None = None,
    retrieval_mode: str = "hybrid",
    include_partition: bool = False,
    include_document: bool = False,
) -> list[dict]:
    if retrieval_mode not in RETRIEVAL_MODES:
        raise RetrievalError(f"retrieval_mode must be one of {', '.join(RETRIEVAL_MODES)}, got {retrieval_mode!r}")
    if prefetch_k < top_k:
        raise RetrievalError(f"prefetch_k ({prefetch_k}) must be at least top_k ({top_k})")
    alpha = 1.0 if retrieval_mode == "cosine" else None
    found = hybrid_search(
        store, embedder, query, top_k, alpha=alpha, match={"source_id": collection}, prefetch=prefetch_k
    )
    rows = [legacy_row(hit) for hit in found]
    hits = describe_chunks(store, rows)
    for hit, row in zip(hits, rows, strict=True):
        hit["score"] = row["score"]
        hit["similarity"] = round(row["similarity"], 4) if row.get("similarity") is not None else None
    if include_partition and hits:
        ids = sorted({h["partition_id"] for h in hits if h["partition_id"]})
        names = set(store.table(PARTITIONS).schema.names)
        columns = [c for c in PARTITION_COLUMNS if c in names]
        partitions = {p["partition_id"]: p for p in store.partitions(filters.is_in("partition_id", ids), columns)}
        for hit in hits:
            part = partitions.get(hit["partition_id"])
            hit["partition"] = partition_entry(part) if part else None
    if include_document and hits:
        documents = document_rows(store, {(h["collection"], h["document_id"]) for h in hits})
        for hit in hits:
            rows_of = documents.get((hit["collection"], hit["document_id"]))
            hit["document"] = document_entry(rows_of) if rows_of else None
    return hits
