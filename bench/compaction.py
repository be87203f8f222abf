"""Compaction's peak memory: maintenance of a large chunk table after many small writes.

    python -m bench.compaction [--chunks 100000] [--writes 200] [--db PATH]

1. A chunk table of `--chunks` generated chunks (bench.search.build_table: 200 embedded with the real model,
   the rest near them), its BM25 and (from VECTOR_INDEX_MIN_ROWS) ANN index built.
2. `--writes` small appends of 10 chunks each, as many small writes leave the table: a fragment and a
   version apiece, in the indexes' unindexed tail.
3. maintenance (retention 0) as a process of its own, as `python -m ingest maintain` runs it:
   its seconds and peak RSS, beside the peak of a process that only opens the index and counts its rows,
   with the table's size on disk before and after. `--reuse` keeps an index built by an earlier run.
Printed as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from bench.search import build_table
from bench.writes import health
from thoth.config import Settings
from thoth.records import Chunk
from thoth.store import Store
from thoth.store.schema import CHUNKS


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


# Each child reports its own high-water mark: a fork's rusage counts the parent's pages it started with.
PEAK = "; print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))"
OPEN_ONLY = (
    "import sys; from thoth.config import Settings; from thoth.store import Store; from thoth.records import Chunk; "
    "Store(Settings.from_env(db_uri=sys.argv[1])).count_of(Chunk)" + PEAK
)
MAINTAIN = (  # what `python -m ingest maintain --db PATH` runs
    "import sys; from thoth.config import Settings; from thoth.store import Store; "
    "from datetime import timedelta; from thoth.store.maintenance import maintain; "
    # build_table's chunks have no documents rows: orphans to maintenance, which would sweep them all
    # no other reader of this index: versions are cleaned at once
    "maintain(Store(Settings.from_env(db_uri=sys.argv[1])), timedelta(0), orphan_grace=timedelta(days=3650))" + PEAK
)


def peak_of(code: str, db: Path, env: dict[str, str]) -> float:
    """The peak RSS in MB of a Python process running `code` over the index at `db`."""
    out = subprocess.run([sys.executable, "-c", code, str(db)], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--db", help="index folder (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="keep the index --db holds: only the writes again")
    args = parser.parse_args(argv)
    db = Path(args.db or tempfile.mkdtemp(prefix="thoth-compaction-"))
    settings = replace(Settings.from_env(db_uri=str(db)), read_consistency_seconds=0)
    started = time.perf_counter()
    if not (args.reuse and (db / f"{CHUNKS}.lance").exists()):
        build_table(settings, args.chunks, 200, "natural")
    store = Store(settings)
    store.indexes.ensure_vector()
    built = time.perf_counter() - started
    sample = store.table(CHUNKS).search().limit(10).to_arrow()
    stamp = int(time.time())  # new ids on every run (--reuse)
    for w in range(args.writes):  # small writes: new ids, the sample's text and vectors
        ids = pa.array([f"w{stamp}-{w:05d}-{i}" for i in range(len(sample))])
        store.insert(Chunk, sample.set_column(sample.schema.get_field_index("chunk_id"), "chunk_id", ids))
    before = health(store)
    disk_before = disk_mb(db)
    env = dict(os.environ)
    opened = peak_of(OPEN_ONLY, db, env)
    started = time.perf_counter()
    maintained = peak_of(MAINTAIN, db, env)
    result = {
        "chunks": store.count_of(Chunk),
        "build_s": round(built, 1),
        "before": {"disk_mb": round(disk_before, 1), **before["tables"][CHUNKS]},  # type: ignore[index]
        "maintain_s": round(time.perf_counter() - started, 1),
        "maintain_peak_rss_mb": round(maintained),
        "open_only_peak_rss_mb": round(opened),
        "after": {"disk_mb": round(disk_mb(db), 1), **health(Store(settings))["tables"][CHUNKS]},  # type: ignore[index]
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
