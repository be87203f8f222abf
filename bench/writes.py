"""Many small writes, then maintenance, against a fresh index of the same rows.

    python -m bench.writes [--pages 20] [--writes 100] [--minutes 0] [--rounds 3] [--gcs] [--db PATH]
                           [--no-arena-cap] [--tracemalloc]

1. A base index: `--pages` generated Markdown pages (bench.ingest.write_corpus), one run, dataset `handbook`.
2. `--writes` small documents (2-3 KB each) through `ingest_document`'s path (thoth/writes/documents.py),
   one after another in this process through the server's write gate, with the real model (or as many
   as fit in `--minutes`): seconds per write, and this process's RSS after the 10th write, every 100th and
   the last, with LanceDB's caches (the session's `size_bytes`) and Python's live objects beside it (and
   with `--tracemalloc`, what Python allocated between the 10th write and the last, by line). The process
   caps glibc's malloc arenas as the server does (`cap_malloc_arenas`; not with `--no-arena-cap`):
   uncapped, every thread's arena keeps what was freed in it, and RSS grows by write.
3. Table health (thoth/store/maintenance.py) after the writes, then `maintain` (retention 0: no reader
   here), then again, per table.
4. A fresh index of the same rows: the pages and the written documents, as files, in two runs.
5. Cold open (a new process's Store, its held copies read, its first search) and p50 of 50 hybrid
   searches, maintained index vs fresh one: `--rounds` rounds, each a new process per index, in
   alternating order (the first process of a round pays for the page cache); medians and ranges.
`--gcs` puts both indexes in a bucket of the GCS emulator (fake-gcs-server) instead of a folder.
Printed as one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from bench.ingest import write_corpus
from bench.search import percentile, rss_mb
from bench.text import TOPICS
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.freed import cap_malloc_arenas
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.store.lance import lancedb, session
from thoth.store.maintenance import maintain, table_health
from thoth.writes.documents import ingest_text
from thoth.writes.gate import WriteGate
from thoth.writes.writer import Writer

QUERIES = [f"how does the {topic} policy work" for topic in TOPICS][:10]
BUCKET = "bench-writes"


def note(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    lines = [f"Note {i} on {topic}: item {j} of the {topic} checklist is reviewed by team {i % 7}." for j in range(25)]
    return f"# {topic.title()} note {i}\n\n" + "\n".join(lines) + "\n"


def health(store: Store) -> dict[str, object]:
    """Versions and files over all tables, and each table's versions/files/fragments(/unindexed rows)."""
    tables = table_health(store)
    return {
        "versions": sum(h.versions for h in tables.values()),
        "files": sum(h.files for h in tables.values()),
        "tables": {
            name: {k: v for k, v in h.to_json().items() if k != "last_maintained"} for name, h in sorted(tables.items())
        },
    }


def searches(env: dict[str, str]) -> dict[str, float]:
    """In a new process (run by `--search`): cold open and p50 of 50 hybrid searches of THOTH_DB_URI."""
    settings = Settings.from_env(env)
    embedder = get_embedder(settings)
    embedder.embed(["warm the model: not the index's cost"])
    lancedb()  # imported before the clock starts: the same for any index
    started = time.perf_counter()
    store = Store(settings)
    store.chunks.warm()  # as the server's warm-up does
    hybrid_search(store, embedder, QUERIES[0], 5)
    cold = time.perf_counter() - started
    times = []
    for i in range(50):
        t = time.perf_counter()
        hybrid_search(store, embedder, QUERIES[i % len(QUERIES)], 5)
        times.append(time.perf_counter() - t)
    return {"cold_open_s": cold, "p50_ms": percentile(times, 50) * 1000}


def compare(envs: dict[str, dict[str, str]], rounds: int) -> dict[str, object]:
    """Each index searched by a new process per round, alternating which goes first."""
    found: dict[str, list[dict[str, float]]] = {name: [] for name in envs}
    for r in range(rounds):
        for name in sorted(envs, reverse=bool(r % 2)):
            out = subprocess.run(
                [sys.executable, "-m", "bench.writes", "--search"],
                env={**os.environ, **envs[name]},
                capture_output=True,
                text=True,
            )
            if out.returncode:
                raise RuntimeError(f"the search process failed:\n{out.stderr[-3000:]}")
            found[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    result: dict[str, object] = {}
    for name, runs in found.items():
        result[name] = {
            key: {
                "median": round(statistics.median(r[key] for r in runs), 3),
                "range": [round(min(r[key] for r in runs), 3), round(max(r[key] for r in runs), 3)],
            }
            for key in ("cold_open_s", "p50_ms")
        }
    for key in ("cold_open_s", "p50_ms"):
        ratio = result["maintained"][key]["median"] / max(result["fresh"][key]["median"], 1e-9)  # type: ignore[index]
        result[f"{key}_ratio"] = round(ratio, 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writes")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=0, help="stop writing after this long (0: no limit)")
    parser.add_argument("--rounds", type=int, default=3, help="search processes per index (alternating order)")
    parser.add_argument("--gcs", action="store_true", help="both indexes in a bucket of the GCS emulator")
    parser.add_argument("--db", help="folder for the corpus (and the two indexes without --gcs; default: temporary)")
    parser.add_argument("--no-arena-cap", action="store_true", help="glibc's default malloc arenas, not the server's 2")
    parser.add_argument("--tracemalloc", action="store_true", help="Python's allocations from write 10 to the last")
    parser.add_argument("--cache-mb", type=int, default=0, help="the writer's cap on LanceDB's caches (0: sized)")
    parser.add_argument("--search", action="store_true", help=argparse.SUPPRESS)  # one search process (compare)
    args = parser.parse_args(argv)
    if args.search:
        print(json.dumps(searches(dict(os.environ))))
        return 0
    capped = not args.no_arena_cap and cap_malloc_arenas()  # before any thread: as every server process
    root = Path(args.db or tempfile.mkdtemp(prefix="thoth-writes-"))
    pages = root / "pages"
    write_corpus(pages, args.pages)
    env = {k: v for k, v in os.environ.items() if k.startswith(("THOTH_", "HF_"))}
    env.update(THOTH_TREES="off")
    emulator = None
    if args.gcs:
        from tests.conftest import GcsEmulator  # the tests' fake-gcs-server, on a loopback port
        from thoth.gcs import storage_client

        emulator = GcsEmulator()
        env["STORAGE_EMULATOR_HOST"] = emulator.host
    uris = {name: f"gs://{BUCKET}/{name}" if args.gcs else str(root / name) for name in ("maintained", "fresh")}
    envs = {name: {**env, "THOTH_DB_URI": uri} for name, uri in uris.items()}
    try:
        settings = Settings.from_env(envs["maintained"], lance_cache_mb=args.cache_mb, read_consistency_seconds=0)
        if args.gcs:
            storage_client(settings).create_bucket(BUCKET)
        fresh = Settings.from_env(envs["fresh"], lance_cache_mb=args.cache_mb, read_consistency_seconds=0)
        result = run(args, settings, fresh, pages, root)
        result["malloc_arenas_capped"] = capped
        print(json.dumps(result), file=sys.stderr, flush=True)  # kept should the searches fail
        result["search"] = compare(envs, args.rounds)
    finally:
        if emulator is not None:
            emulator.stop()
    print(json.dumps(result, indent=2))
    return 0


def run(args: argparse.Namespace, settings: Settings, fresh_settings: Settings, pages: Path, root: Path) -> dict:
    writer = Writer(settings)
    writer.run(str(pages), name="handbook")
    seconds, rss, cache, objects, grown = [], {}, {}, {}, []
    lance_session = session(settings.lance_cache_mb, settings.db_uri)  # the caches every handle of it shares
    first = None
    gate = WriteGate(writer.store)
    gate.wait_seconds, gate.maintain_after = 0, args.writes + 1  # maintenance measured below, not in between
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    for i in range(args.writes):
        started = time.perf_counter()
        with gate.hold():  # as the server's ingest_document writes: one at a time, memory given back after
            ingest_text(writer, writer.store, "notes", note(i), f"notes/{i}.md")
        seconds.append(time.perf_counter() - started)
        last = i + 1 == args.writes or (deadline is not None and time.monotonic() > deadline)
        if i + 1 == 10 or (i + 1) % 100 == 0 or last:
            rss[f"after_{i + 1}"] = round(rss_mb(os.getpid())["rss"])
            cache[f"after_{i + 1}"] = round(lance_session.size_bytes / 2**20, 1)
            objects[f"after_{i + 1}"] = len(gc.get_objects())
            sample = f"after write {i + 1}: RSS {rss[f'after_{i + 1}']} MB, LanceDB cache {cache[f'after_{i + 1}']} MB"
            print(sample, file=sys.stderr, flush=True)  # a long run's progress, kept should it be stopped
        if args.tracemalloc and i + 1 == 10:
            tracemalloc.start()
            first = tracemalloc.take_snapshot()
        if first is not None and last:
            diff = tracemalloc.take_snapshot().compare_to(first, "lineno")
            grown = [f"{d.size_diff / 1024:.0f} KiB {d.count_diff:+d} blocks {d.traceback}" for d in diff[:15]]
            tracemalloc.stop()
        if last:
            break
    args.writes = len(seconds)  # as many as fitted in --minutes
    before = health(writer.store)
    report = maintain(writer.store, retention=timedelta(0))  # no other reader of this index
    after = health(Store(settings))

    notes = root / "notes-files"
    for i in range(args.writes):
        (notes / "notes").mkdir(parents=True, exist_ok=True)
        (notes / "notes" / f"{i}.md").write_text(note(i))
    fresh = Writer(replace(fresh_settings))
    fresh.run(str(pages), name="handbook")
    fresh.run(str(notes), name="notes")
    return {
        "writes": args.writes,
        "where": "gcs emulator" if args.gcs else "folder",
        "write_s": {"p50": round(statistics.median(seconds), 3), "max": round(max(seconds), 3)},
        "writer_rss_mb": rss,
        "lance_cache_mb": cache,
        "python_objects": objects,
        "python_grown_since_10th": grown,
        "after_writes": before,
        "maintenance": {
            "seconds": round(report.seconds, 1),
            "versions_removed": sum(report.versions_removed.values()),
            "files_compacted": sum(report.files_removed.values()),
        },
        "after_maintenance": after,
        "fresh_index": health(Store(fresh_settings)),
    }


if __name__ == "__main__":
    raise SystemExit(main())
