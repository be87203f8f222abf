"""Many small writes, then maintenance, against a fresh index of the same rows.

    python -m bench.writes [--pages 40] [--writes 1000] [--db PATH]

1. A base index: `--pages` generated Markdown pages (bench.ingest.write_corpus), one run, dataset `handbook`.
2. `--writes` small documents (2-3 KB each) through `ingest_document`'s path (thoth/writes/documents.py),
   one after another in this process, with the real model: seconds per write, and this process's RSS
   after the 10th write and after the last.
3. Table health (thoth/store/maintenance.py) after the writes, then `maintain` (retention 0: no reader
   here), then again.
4. A fresh index of the same rows: the pages and the written documents, as files, in two runs.
5. Cold open (a new Store's first search) and p50 of 30 hybrid searches, maintained index vs fresh one.
Printed as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from bench.ingest import write_corpus
from bench.search import percentile, rss_mb
from bench.text import TOPICS
from thoth.config import Settings
from thoth.embed import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.store.maintenance import maintain, table_health
from thoth.writes.documents import ingest_text
from thoth.writes.writer import Writer

QUERIES = [f"how does the {topic} policy work" for topic in TOPICS][:10]


def note(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    lines = [f"Note {i} on {topic}: item {j} of the {topic} checklist is reviewed by team {i % 7}." for j in range(25)]
    return f"# {topic.title()} note {i}\n\n" + "\n".join(lines) + "\n"


def totals(store: Store) -> dict[str, int]:
    health = table_health(store).values()
    return {"versions": sum(h.versions for h in health), "files": sum(h.files for h in health)}


def searches(settings: Settings) -> dict[str, float]:
    started = time.perf_counter()
    store = Store(settings)
    embedder = get_embedder(settings)
    hybrid_search(store, embedder, QUERIES[0], 5)
    cold = time.perf_counter() - started
    times = []
    for i in range(30):
        t = time.perf_counter()
        hybrid_search(store, embedder, QUERIES[i % len(QUERIES)], 5)
        times.append(time.perf_counter() - t)
    return {"cold_open_s": round(cold, 3), "p50_ms": round(percentile(times, 50) * 1000, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writes")
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--db", help="folder for the two indexes (default: a temporary one)")
    args = parser.parse_args(argv)
    root = Path(args.db or tempfile.mkdtemp(prefix="thoth-writes-"))
    pages = root / "pages"
    write_corpus(pages, args.pages)
    settings = replace(Settings.from_env(db_uri=str(root / "written")), tree_build=False, read_consistency_seconds=0)
    writer = Writer(settings)
    writer.run(str(pages), name="handbook")

    seconds, rss = [], {}
    for i in range(args.writes):
        started = time.perf_counter()
        ingest_text(writer, writer.store, "notes", note(i), f"notes/{i}.md")
        seconds.append(time.perf_counter() - started)
        if i + 1 in (10, args.writes):
            rss[f"after_{i + 1}"] = round(rss_mb(os.getpid())["rss"])
    before = totals(writer.store)
    report = maintain(writer.store, retention=timedelta(0))  # no other reader of this index
    after = totals(Store(settings))

    fresh_settings = replace(settings, db_uri=str(root / "fresh"))
    notes = root / "notes-files"
    for i in range(args.writes):
        (notes / "notes").mkdir(parents=True, exist_ok=True)
        (notes / "notes" / f"{i}.md").write_text(note(i))
    fresh = Writer(fresh_settings)
    fresh.run(str(pages), name="handbook")
    fresh.run(str(notes), name="notes")
    result = {
        "writes": args.writes,
        "write_s": {"p50": round(statistics.median(seconds), 3), "max": round(max(seconds), 3)},
        "writer_rss_mb": rss,
        "after_writes": before,
        "maintenance": {
            "seconds": round(report.seconds, 1),
            "versions_removed": sum(report.versions_removed.values()),
            "files_compacted": sum(report.files_removed.values()),
        },
        "after_maintenance": after,
        "fresh_index": totals(Store(fresh_settings)),
        "search_maintained": searches(settings),
        "search_fresh": searches(fresh_settings),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
