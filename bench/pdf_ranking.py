"""A paper's own text against its bibliography in research search: the reference down-weight, measured.

    python -m bench.pdf_ranking [--data ../shared/data/pdfs/papers] [--weights 1 0.9 0.8 0.7 0.6 0.5]

Ingests the dev papers into a temporary index, then runs research search (`thoth.retrieval.research`,
the `search` tool's function) for the queries in bench/data/papers_queries.tsv at each weight:
- topical queries (what a paper says): reference-list chunks among the top 5 (fewer is better);
- cited-work queries (the title of a work the papers cite): queries with a reference chunk in the
  top 5 (the entry must still be found).
Handbook and SciFact have no reference chunks, so their quality cannot move with the weight.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from thoth.config import Settings
from thoth.retrieval import research
from thoth.writes.writer import Writer

QUERIES = Path(__file__).parent / "data" / "papers_queries.tsv"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs" / "papers"
TOP = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_ranking", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"the papers (default {DEFAULT_DATA})")
    parser.add_argument("--weights", type=float, nargs="+", default=[1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    args = parser.parse_args(argv)
    if not any(args.data.glob("*.pdf")):
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return 0
    with QUERIES.open(newline="") as handle:
        queries = [(row["kind"], row["query"]) for row in csv.DictReader(handle, delimiter="\t")]
    topical = [q for kind, q in queries if kind == "topical"]
    cited = [q for kind, q in queries if kind == "cited"]
    with tempfile.TemporaryDirectory() as db:
        settings = replace(Settings.from_env(), db_uri=db, read_consistency_seconds=-1)
        writer = Writer(settings)
        summary = writer.run(str(args.data), name="papers")
        store, embedder = writer.store, writer.embedder
        print(f"{len(summary.ingested)} papers, {summary.chunks_written} chunks; top {TOP} per query")
        print(f"{'weight':>8s} {'reference chunks, topical':>27s} {'cited work found':>17s}")

        def kinds(query: str, **options: object) -> list[str]:
            hits = research.search(store, embedder, query, top_k=TOP, **options).hits
            return [h.hit.chunk.content_type for h in hits]

        for weight in args.weights:
            refs = sum(kinds(q, reference_weight=weight).count("references") for q in topical)
            found = sum("references" in kinds(q, reference_weight=weight) for q in cited)
            print(f"{weight:8.2f} {refs:>14d} of {TOP * len(topical):<10d} {found:>8d} of {len(cited)}")
        refs = sum(kinds(q, exclude_references=True).count("references") for q in topical)
        print(f"{'excluded':>8s} {refs:>14d} of {TOP * len(topical):<10d} {'-':>8s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
