"""What serving only live documents' chunks costs a search (thoth/store/served.py), in one process.

    python -m bench.served --db /tmp/k35-100k [--queries 60] [--blocks 12] [--no-copy]
    python -m bench.served --db /tmp/k35-100k --http-against /work/main [--rounds 4]

Over an existing index (bench.search's, whose chunks have their `documents` rows: `ensure_documents`), hybrid
search for `--queries` queries (their vectors embedded once, before the clock) in alternating blocks: without
the serve step (`unserved` on the kept hits), then with it. Prints each block's p50,
the ratio per pair of blocks, and the CPU time a search takes (this process, every thread). `--no-copy`:
without the held ranking columns, as searches read while a new version's copy is read after a write.
`--http-against DIR`: instead, the server (`python -m thoth.mcp.server`, bench.search's start_server) of this
checkout and of the one in DIR in turn (ABBA, `--rounds` each), 120 search_handbook calls from one client:
p50 and the server's CPU per request, each, and their medians' ratio. Read-only: the index is not written.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

from bench.search import TEXT_SETTING, start_server, time_concurrent
from bench.text import queries
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import Store, chunks


class Embedded:
    """The real embedder, with the queries' vectors embedded once: the search alone is timed."""

    def __init__(self, inner: Any, texts: list[str]):
        self.inner, self.vectors = inner, dict(zip(texts, inner.embed_queries(texts), strict=True))

    def embed_queries(self, texts: list[str]) -> list[Any]:
        return [self.vectors[t] for t in texts]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def block(store: Store, embedder: Embedded, qs: list[str], served: bool) -> tuple[float, float]:
    """(p50 ms, CPU ms a search) of one pass over `qs`."""
    patches = [] if served else [patch.object(store.chunks, "unserved", lambda reading, hits: frozenset())]
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


def http_against(db: str, other: str, rounds: int) -> None:
    """This checkout's server against `other`'s, alternated, over HTTP (bench.search's client and timing)."""
    checkouts = {"this": os.getcwd(), "other": str(Path(other).resolve())}
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    env |= {
        "THOTH_DB_URI": db,
        "THOTH_CACHE_DIR": str(Path(Settings.from_env().cache_dir).expanduser().resolve()),
        "THOTH_LOG_LEVEL": "WARNING",
    }
    found: dict[str, list[dict]] = {"this": [], "other": []}
    for r in range(rounds):
        for name in ("other", "this") if r % 2 == 0 else ("this", "other"):
            server, url = start_server({**env, "PYTHONPATH": checkouts[name]})
            try:
                result = time_concurrent(url, queries(120, seed=11, kind="natural"), 5, 1, server.pid)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)
            found[name].append(result)
            print(
                f"{name:6}{result['p50']:>8.1f} ms p50{result['cpu_ms']:>8.1f} ms CPU a request, load "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    for measure in ("p50", "cpu_ms"):
        this, that = (statistics.median(r[measure] for r in found[n]) for n in ("this", "other"))
        print(f"{measure}: this {this:.1f}, other {that:.1f}: {this / that:.3f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.served", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="an index built by bench.search (read only)")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--blocks", type=int, default=12, help="blocks of each kind, alternated")
    parser.add_argument("--no-copy", action="store_true", help="without the held ranking columns")
    parser.add_argument("--http-against", metavar="DIR", help="another checkout's server, over HTTP")
    parser.add_argument("--rounds", type=int, default=4, help="with --http-against: servers of each")
    args = parser.parse_args(argv)
    if args.http_against:
        http_against(args.db, args.http_against, args.rounds)
        return
    settings = Settings.from_env(db_uri=args.db, read_consistency_seconds=-1)
    store = Store(settings)
    if args.no_copy:
        chunks.RANKING_COPY_ROWS = 0
    else:
        store.chunks.warm()
    qs = queries(args.queries, kind=store.metadata.get(TEXT_SETTING) or "natural")
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
