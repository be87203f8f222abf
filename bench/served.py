"""What serving only live documents' chunks costs a search (thoth/store/served.py), in one process.

    python -m bench.served --db /tmp/k35-100k [--queries 60] [--blocks 12] [--no-copy]

Over an existing index (bench.search's, whose chunks have their `documents` rows: `ensure_documents`), hybrid
search for `--queries` queries (their vectors embedded once, before the clock) in alternating blocks: without
the serve step (and without the doc_id a late reading reads for it), then with it. Prints each block's p50,
the ratio per pair of blocks, and the CPU time a search takes (this process, every thread). `--no-copy`:
without the held ranking columns, as searches read while a new version's copy is read after a write.
Read-only: the index is not written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any
from unittest.mock import patch

from bench.search import TEXT_SETTING
from bench.text import queries
from thoth.config import Settings
from thoth.embed import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import Store, chunks
from thoth.store.schema import RANKING_COLUMNS


class Embedded:
    """The real embedder, with the queries' vectors embedded once: the search alone is timed."""

    def __init__(self, inner: Any, texts: list[str]):
        self.inner, self.vectors = inner, dict(zip(texts, inner.embed_queries(texts), strict=True))

    def embed_queries(self, texts: list[str]) -> list[Any]:
        return [self.vectors[t] for t in texts]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Everything:
    """Live pairs that hold every pair: the check on a deferred reading's kept hits costs a lookup each."""

    def __contains__(self, pair: object) -> bool:
        return True


def block(store: Store, embedder: Embedded, qs: list[str], served: bool) -> tuple[float, float]:
    """(p50 ms, CPU ms a search) of one pass over `qs`."""
    patches = (
        []
        if served
        else [
            patch.object(store.chunks, "_served", lambda table, lists, started, again: lists),
            patch.object(store.chunks.live, "pairs", lambda documents, latest_since=None: Everything()),
            patch.object(chunks, "LATE_COLUMNS", RANKING_COLUMNS),
        ]
    )
    for p in patches:
        p.start()
    try:
        times, cpu = [], time.process_time()
        for q in qs:
            started = time.perf_counter()
            hybrid_search(store, embedder, q, 5)
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times), (time.process_time() - cpu) / len(qs) * 1000
    finally:
        for p in patches:
            p.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.served", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="an index built by bench.search (read only)")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--blocks", type=int, default=12, help="blocks of each kind, alternated")
    parser.add_argument("--no-copy", action="store_true", help="without the held ranking columns")
    args = parser.parse_args(argv)
    settings = Settings.from_env(db_uri=args.db, read_consistency_seconds=-1)
    store = Store(settings)
    if args.no_copy:
        chunks.RANKING_COPY_ROWS = 0
    else:
        store.warm_copies()
    qs = queries(args.queries, kind=store.get_setting(TEXT_SETTING) or "natural")
    embedder = Embedded(get_embedder(settings), qs)
    for q in qs[:10]:
        hybrid_search(store, embedder, q, 5)  # the first searches' lazy imports and caches
    print(f"load average {os.getloadavg()[0]:.1f} at start")
    without, with_ = [], []
    for _ in range(args.blocks):
        without.append(block(store, embedder, qs, served=False))
        with_.append(block(store, embedder, qs, served=True))
    ratios = [w[0] / o[0] for w, o in zip(with_, without, strict=True)]
    print("p50 ms without:", [round(b[0], 1) for b in without])
    print("p50 ms with:   ", [round(b[0], 1) for b in with_])
    print(f"ratio with/without per pair: median {statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]")
    cpu = statistics.median(b[1] for b in without), statistics.median(b[1] for b in with_)
    print(f"CPU ms a search: without {cpu[0]:.2f}, with {cpu[1]:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
