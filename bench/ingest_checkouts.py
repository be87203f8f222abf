"""Ingest cost per page of this checkout against another (the commit before a change), on the same PDFs.

    python -m bench.ingest_checkouts --other ../base-checkout [--data ../shared/data/pdfs/papers] [--rounds 2]

Each round ingests --data into a fresh temporary database once with each checkout (in child processes,
the checkout's `thoth` first on PYTHONPATH, PYTHONSAFEPATH set; the order flips every round), the model
loaded and warmed before the clock starts. Reported: CPU seconds per page of the whole ingest (parse, chunk,
embed, write; the child's own CPU time, which a loaded machine's waiting does not count), chunks written,
and the ratio this / other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs" / "papers"
HERE = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, time
from dataclasses import replace
from thoth.config import Settings
from thoth.writes.writer import Writer
data, db = sys.argv[1], sys.argv[2]
settings = replace(Settings.from_env(), db_uri=db, read_consistency_seconds=-1)
writer = Writer(settings)
writer.embedder.embed(["warm-up"])
cpu, wall = time.process_time(), time.perf_counter()
summary = writer.run(data, name="pdfs")
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "pages": summary.pages, "chunks": summary.chunks_written}))
"""


def _ingest(checkout: Path, data: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    with tempfile.TemporaryDirectory() as db:
        run = subprocess.run(
            [sys.executable, "-c", _CHILD, str(data), db], env=env, capture_output=True, text=True, check=True
        )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_checkouts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return
    totals = {"this": {"cpu": 0.0, "pages": 0, "chunks": 0}, "other": {"cpu": 0.0, "pages": 0, "chunks": 0}}
    for round_ in range(args.rounds):
        order = [("this", HERE), ("other", args.other)]
        for name, checkout in order if round_ % 2 == 0 else order[::-1]:
            got = _ingest(checkout, args.data)
            for key in ("cpu", "pages", "chunks"):
                totals[name][key] += got[key]
            print(f"round {round_ + 1} {name:5s}: {got['cpu']:.1f} CPU s, {got['wall']:.1f} s, "
                  f"{got['pages']} pages, {got['chunks']} chunks")  # fmt: skip
    per_page = {name: t["cpu"] / max(1, t["pages"]) for name, t in totals.items()}
    for name in ("this", "other"):
        print(f"{name:5s}: {per_page[name]:.3f} CPU s a page, {totals[name]['chunks'] // args.rounds} chunks")
    print(f"ingest cost per page, this / other: {per_page['this'] / per_page['other']:.2f}x")


if __name__ == "__main__":
    main()
