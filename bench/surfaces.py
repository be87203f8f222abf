"""The Qurio and workshop surfaces: latency of each retrieval call against plain hybrid search, and
what alpha does to an exact error code and to a paraphrase.

    python -m bench.surfaces [--repeat 30]

One run, one index (examples/handbook plus the example workshop in tests/fixtures), so the ratios
compare like with like:
1. Ingest: the workshop through the real pipeline (units, sections, diffs, chunks, embeddings), and
   its chunk texts through the raw model; ratio = pipeline chunks/s / raw model chunks/s.
2. Latency: the median of `--repeat` calls of each retrieval function behind a tool, as a ratio to
   the median of `hybrid_search` (alpha 0.5, 10 hits) with the same query.
3. Alpha: the rank of the passage holding an exact error code, and of the passage a paraphrase
   describes, with keyword-only (0.0), hybrid (0.5) and vector-only (1.0) search.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from thoth.app import Thoth
from thoth.config import Settings
from thoth.mcp.outputs.qurio import PAGE_TEXT_CURSOR, PAGES_CURSOR
from thoth.mcp.outputs.workshop import WORKSHOPS_CURSOR
from thoth.records import Chunk, Hit
from thoth.retrieval import pages, workshop_topics, workshops
from thoth.retrieval.paging import MAX_CHARS
from thoth.retrieval.search import hybrid_search
from thoth.writes.writer import Writer

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "tests" / "fixtures" / "workshops" / "caching-fundamentals"
HANDBOOK = ROOT / "examples" / "handbook"
WS = "caching-fundamentals"
QUERY = "how long does a response stay fresh"
ERROR_CODE, ERROR_NEEDLE = "K7-0042", "K7-0042"
PARAPHRASE, PARAPHRASE_NEEDLE = "remember earlier answers so slow calculations never repeat", "lookup table keyed"


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm: first calls open tables and load indices
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def rank_of(hits: list[Hit], needle: str) -> str:
    return next((str(i) for i, hit in enumerate(hits, start=1) if needle in hit.chunk.text), "-")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.surfaces", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="calls per measured function")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env(db_uri=str(Path(tmp) / "db"), read_consistency_seconds=0.0)
        app = Thoth(settings)
        embedder = app.embedder()
        ingestor = Writer(settings, store=app.store, embedder=embedder)
        ingestor.run(str(HANDBOOK), name="handbook")
        started = time.perf_counter()
        summary = ingestor.run(str(WORKSHOP))
        pipeline_s = time.perf_counter() - started
        chunks = app.store.find(Chunk, {"source_id": WS}, fields=["section", "text"])
        texts = [(c.section or "") + "\n" + c.text for c in chunks]
        started = time.perf_counter()
        embedder.embed(texts)
        raw_s = time.perf_counter() - started
        n = summary.chunks_written
        print(
            f"ingest: workshop {len(summary.ingested)} units -> {n} chunks in {pipeline_s:.2f}s "
            f"({n / pipeline_s:.1f} chunks/s); raw model {len(texts) / raw_s:.1f} chunks/s; "
            f"ratio {(n / pipeline_s) / (len(texts) / raw_s):.2f}"
        )

        store = app.store
        reference = median_ms(lambda: hybrid_search(store, embedder, QUERY, 10, alpha=0.5).hits, args.repeat)
        url = pages.list_pages(store, settings, WS, 100, None, PAGES_CURSOR).pages[2].url
        calls: dict[str, Callable[[], object]] = {
            "qurio_search alpha=0.0": lambda: (
                pages.search(store, settings, app.embedder, QUERY, alpha=0.0, limit=10).hits
            ),
            "qurio_search alpha=0.5": lambda: (
                pages.search(store, settings, app.embedder, QUERY, alpha=0.5, limit=10).hits
            ),
            "qurio_search filtered": lambda: (
                pages.search(store, settings, app.embedder, QUERY, alpha=0.5, limit=10, metadata={"type": "code"}).hits
            ),
            "qurio_list_pages": lambda: pages.list_pages(store, settings, "handbook", 100, None, PAGES_CURSOR),
            "qurio_read_page": lambda: pages.read_page(store, settings, url, MAX_CHARS, None, PAGE_TEXT_CURSOR),
            "list_workshops": lambda: workshops.list_workshops(
                store, product=None, has_diffs=None, limit=20, cursor=None, cursors=WORKSHOPS_CURSOR
            ),
            "retrieve_learning_context": lambda: workshops.context_page(
                store,
                cursor_kind="t",
                source_id=WS,
                exercise=1,
                step=None,
                random_scope=False,
                max_chars=20000,
                cursor=None,
            ),
            "retrieve_learning_context random": lambda: workshops.context_page(
                store,
                cursor_kind="t",
                source_id=None,
                exercise=None,
                step=None,
                random_scope=True,
                max_chars=20000,
                cursor=None,
                rng=random.Random(1),
            ),
            "retrieve_diff_context": lambda: workshops.context_page(
                store,
                cursor_kind="t",
                source_id=WS,
                exercise=2,
                step=None,
                random_scope=False,
                max_chars=20000,
                cursor=None,
                diffs_only=True,
            ),
            "search_topic_context": lambda: workshop_topics.topic_search(
                store, app.embedder, QUERY, source_id=WS, exercise=None, step=None, limit=8
            ),
        }
        print(f"\nlatency, median of {args.repeat} (reference: hybrid_search, 10 hits = {reference:.1f} ms)")
        for name, fn in calls.items():
            ms = median_ms(fn, args.repeat)
            print(f"  {name:34s} {ms:7.1f} ms  {ms / reference:5.2f}x")

        print("\nrank of the passage (- = not in the top 10)   alpha 0.0  0.5  1.0")
        for label, query, needle in [
            ("exact error code", ERROR_CODE, ERROR_NEEDLE),
            ("paraphrase", PARAPHRASE, PARAPHRASE_NEEDLE),
        ]:
            ranks = [rank_of(hybrid_search(store, embedder, query, 10, alpha=a).hits, needle) for a in (0.0, 0.5, 1.0)]
            print(f"  {label:42s} {ranks[0]:>9}  {ranks[1]:>3}  {ranks[2]:>3}")


if __name__ == "__main__":
    main()
