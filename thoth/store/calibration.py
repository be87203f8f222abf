"""The rows the cosine floor is measured from (thoth/writes/calibrate.py) and where it is kept: a seeded
sample of chunk vectors with their documents, and the measured floor beside the model's identity."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass

import numpy as np

from thoth.store.metadata import Metadata
from thoth.store.schema import CHUNKS, META_EMBED_FLOOR
from thoth.store.tables import Tables

FLOOR_TTL_SECONDS = 60.0  # a server reads the recorded floor again this often (an ingest may re-measure it)


@dataclass(frozen=True)
class Floor:
    """A model's cosine floor as measured on this index: the `quantile` of cosines of `pairs` pairs of
    chunks from different documents, among `chunks` sampled chunks."""

    floor: float
    quantile: float
    chunks: int
    pairs: int


class Calibration:
    def __init__(self, tables: Tables, metadata: Metadata):
        self.tables = tables
        self.metadata = metadata
        self._read: tuple[float, Floor | None] | None = None  # (when, what) a server last read
        self._lock = threading.Lock()

    def _sampled(self, n: int, columns: list[str]) -> dict[str, list] | None:
        # a fixed seed, so the same rows for the same table: a re-embedding samples the chunks a fresh ingest would
        if CHUNKS not in self.tables.names():
            return None
        table = self.tables.table(CHUNKS)
        total = table.count_rows()
        offsets = sorted(np.random.default_rng(0).choice(total, size=min(n, total), replace=False).tolist())
        if not offsets:
            return None
        return table.take_offsets(offsets).select(columns).to_arrow().to_pydict()

    def sample(self, n: int) -> tuple[list[str], np.ndarray]:
        """Up to `n` chunks' (doc ids, vectors), drawn at random (the same rows each time)."""
        rows = self._sampled(n, ["doc_id", "vector"])
        if rows is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        return rows["doc_id"], np.asarray(rows["vector"], dtype=np.float32)

    def sample_ids(self, n: int) -> tuple[list[str], list[str]]:
        """The (chunk ids, doc ids) of the chunks `sample` draws: a re-embedding measures its new vectors'
        floor on them."""
        rows = self._sampled(n, ["chunk_id", "doc_id"])
        return (rows["chunk_id"], rows["doc_id"]) if rows else ([], [])

    def chunk_count(self) -> int:
        return self.tables.table(CHUNKS).count_rows() if CHUNKS in self.tables.names() else 0

    def record(self, floor: Floor) -> None:
        self.metadata.set({META_EMBED_FLOOR: json.dumps(asdict(floor), sort_keys=True)})
        with self._lock:
            self._read = None

    def recorded(self) -> Floor | None:
        raw = self.metadata.get(META_EMBED_FLOOR) if self.metadata.index_model()[0] else None
        return Floor(**json.loads(raw)) if raw else None

    def floor(self) -> Floor | None:
        """The recorded floor, read again at most every FLOOR_TTL_SECONDS (searches ask for it each time)."""
        now = time.monotonic()
        with self._lock:
            if self._read is not None and now - self._read[0] < FLOOR_TTL_SECONDS:
                return self._read[1]
        found = self.recorded()
        with self._lock:
            self._read = (now, found)
        return found
