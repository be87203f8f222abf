"""Compaction's peak memory: maintenance of a large chunk table after many small writes.

    python -m bench.compaction [--chunks 100000] [--writes 200] [--db PATH]

1. A chunk table of `--chunks` generated chunks (bench.search.build_table: 200 embedded with the real model,
   the rest near them), its BM25 and (from THOTH_VECTOR_INDEX_MIN_ROWS) ANN index built.
2. `--writes` small appends of 10 chunks each, as many small writes leave the table: a fragment and a
   version apiece, in the indexes' unindexed tail.
3. `maintain` (thoth/store/maintenance.py, retention 0) in this process: its seconds, this process's RSS
   before, and its peak RSS during (the kernel's high-water mark, reset just before), with the table's
   size on disk before and after.
Printed as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from bench.search import build_table, rss_mb
from bench.writes import health
from thoth.config import Settings
from thoth.records import Chunk
from thoth.store import Store
from thoth.store.maintenance import maintain
from thoth.store.schema import CHUNKS


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--db", help="index folder (default: a temporary one)")
    args = parser.parse_args(argv)
    db = Path(args.db or tempfile.mkdtemp(prefix="thoth-compaction-"))
    settings = replace(Settings.from_env(db_uri=str(db)), read_consistency_seconds=0)
    started = time.perf_counter()
    build_table(settings, args.chunks, 200, "natural")
    store = Store(settings)
    store.ensure_vector_index()
    built = time.perf_counter() - started
    sample = store.table(CHUNKS).search().limit(10).to_arrow()
    for w in range(args.writes):  # small writes: new ids, the sample's text and vectors
        ids = pa.array([f"w{w:05d}-{i}" for i in range(len(sample))])
        store.insert(Chunk, sample.set_column(sample.schema.get_field_index("chunk_id"), "chunk_id", ids))
    before = health(store)
    disk_before = disk_mb(db)
    rss_before = rss_mb(os.getpid())["rss"]
    Path(f"/proc/{os.getpid()}/clear_refs").write_text("5")  # VmHWM back to the current RSS
    report = maintain(store, retention=timedelta(0))  # no other reader of this index
    peak = rss_mb(os.getpid())["peak"]
    result = {
        "chunks": args.chunks + args.writes * len(sample),
        "build_s": round(built, 1),
        "before": {"disk_mb": round(disk_before, 1), **before["tables"][CHUNKS]},  # type: ignore[index]
        "maintain_s": round(report.seconds, 1),
        "rss_before_mb": round(rss_before),
        "peak_during_mb": round(peak),
        "peak_above_before_mb": round(peak - rss_before),
        "after": {"disk_mb": round(disk_mb(db), 1), **health(Store(settings))["tables"][CHUNKS]},  # type: ignore[index]
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
