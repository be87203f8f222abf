"""Completing kept hits on a large table: short columns held in memory against taken from the table.

    python -m bench.search --n 1000000 --embed-sample 1000 --db /tmp/thoth-1m   # the table, once
    python -m bench.held_columns --db /tmp/thoth-1m --rounds 3

On a table past thoth.store.chunks.LATE_READ_ROWS, a search reads row ids and ranking columns and then
reads the few hits it keeps whole, each column a read of its own. The ranking copy also holds the short
columns (thoth.store.schema.HELD_COLUMNS), so only the long ones are taken. This bench alternates the two
in one process (rounds of `--queries` hybrid searches, 5 hits ranked by document as search_handbook
serves) and prints the process CPU a search and the held copy's size for each.
"""

from __future__ import annotations

import argparse
import time
from unittest.mock import patch

from bench.text import queries
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import Store, chunks

WARM_UP = 20


def one_round(settings: Settings, embedder: object, held: bool, asked: list[str]) -> tuple[float, float]:
    """(CPU ms a search, held copy MB) with the short columns held or taken."""
    store = Store(settings)
    with patch.object(chunks, "HELD_COLUMNS", chunks.HELD_COLUMNS if held else ()):
        store.chunks.warm()
        copy = store.chunks._ranking.held[1]
        for query in asked[:WARM_UP]:
            hybrid_search(store, embedder, query, 5, documents=True)
        started = time.process_time()
        for query in asked[WARM_UP:]:
            hybrid_search(store, embedder, query, 5, documents=True)
        spent = time.process_time() - started
    return spent / (len(asked) - WARM_UP) * 1000, copy.rows.nbytes / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a chunk table past LATE_READ_ROWS (bench.search --db)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100, help="timed searches a round")
    args = parser.parse_args()
    settings = Settings.from_env({}, db_uri=args.db)
    embedder = get_embedder(settings)
    asked = queries(WARM_UP + args.queries, seed=7)
    print(f"{'round':>5}  {'short columns':<13} {'CPU ms a search':>15} {'held copy MB':>12}")
    for round_ in range(1, args.rounds + 1):
        for held in (False, True):
            cpu, size = one_round(settings, embedder, held, asked)
            print(f"{round_:>5}  {'held' if held else 'taken':<13} {cpu:>15.1f} {size:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
