"""The cosine floor hybrid search scales a model's similarities from, measured at ingest on the index's own
chunks: a quantile of the cosines of pairs of chunks from different documents (mostly unrelated texts), so that
a cosine at the floor counts as nothing, whatever model made the vectors (docs/models.md)."""

from __future__ import annotations

import numpy as np

from thoth.store import Store
from thoth.store.calibration import Floor

FLOOR_QUANTILE = 0.75
SAMPLE_CHUNKS = 400  # up to 79,800 pairs: the 75th percentile to about ±0.005 (docs/models.md)
MIN_PAIRS = 100  # fewer pairs (a handful of documents) say too little: measured at a later ingest


def measure(doc_ids: list[str], vectors: np.ndarray) -> Floor | None:
    """The FLOOR_QUANTILE of the cosines of every pair of these (unit) vectors from different documents."""
    if len(doc_ids) < 2:
        return None
    cosines = vectors @ vectors.T
    docs = np.asarray(doc_ids)
    upper = np.triu(np.ones(cosines.shape, dtype=bool), k=1)
    pairs = cosines[upper & (docs[:, None] != docs[None, :])]
    if len(pairs) < MIN_PAIRS:
        return None
    return Floor(round(float(np.quantile(pairs, FLOOR_QUANTILE)), 4), FLOOR_QUANTILE, len(doc_ids), int(len(pairs)))


def calibrate(store: Store) -> Floor | None:
    """Measure and record the index's floor, unless the recorded one already came from a full sample (or
    from every chunk there is): a sample of a grown index is measured again until it is full."""
    current = store.calibration.recorded()
    if current is not None and current.chunks >= min(SAMPLE_CHUNKS, store.calibration.chunk_count()):
        return current
    floor = measure(*store.calibration.sample(SAMPLE_CHUNKS))
    if floor is not None:
        store.calibration.record(floor)
    return floor or current
