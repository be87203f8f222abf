"""Memory and CPU of embedding a write's batches, and CPU a query after them, in one process.

    python -m bench.embed_memory [--texts 256] [--sentences 14]
    PYTHONSAFEPATH=1 PYTHONPATH=CHECKOUT:. python -m bench.embed_memory   # another checkout's embedder

For another checkout, PYTHONSAFEPATH keeps `python -m` from putting this folder's thoth first (as
bench.search.checkout_env does for the benches that start children); `:.` still finds this bench.

The process caps malloc as the server does, loads the configured embedder (the bundled model on ONNX by
default), embeds 20 queries, then `--texts` generated passages as a write does (embed_documents, the
provider's batch size), then 280 queries one at a time. Printed: anonymous memory before the write's
batches, after them, after a malloc trim and after the queries (MB), the batches' CPU and wall seconds,
and the CPU ms a query.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import time

from bench.search import rss_mb
from bench.text import TOPICS, passage, queries
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.freed import cap_malloc_arenas


def anonymous_mb() -> float:
    return rss_mb(os.getpid())["anon"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed_memory")
    parser.add_argument("--texts", type=int, default=256, help="passages embedded as one write")
    parser.add_argument("--sentences", type=int, default=14, help="sentences a passage (14: ~250 tokens)")
    args = parser.parse_args(argv)
    cap_malloc_arenas()
    embedder = get_embedder(Settings.from_env())
    asked = queries(300, seed=5)
    for q in asked[:20]:
        embedder.embed_queries([q])
    figures = {"before_mb": anonymous_mb()}
    rng = random.Random(1)
    texts = [passage(rng, rng.choice(TOPICS), args.sentences) for _ in range(args.texts)]
    cpu, wall = time.process_time(), time.perf_counter()
    embedder.embed_documents(texts)
    figures |= {"write_cpu_s": time.process_time() - cpu, "write_wall_s": time.perf_counter() - wall}
    figures["after_write_mb"] = anonymous_mb()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    figures["after_trim_mb"] = anonymous_mb()
    cpu = time.process_time()
    for q in asked[20:]:
        embedder.embed_queries([q])
    figures["query_cpu_ms"] = (time.process_time() - cpu) * 1000 / len(asked[20:])
    figures["after_queries_mb"] = anonymous_mb()
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
