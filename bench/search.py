"""Search at scale: ANN recall and latency, hybrid search_handbook over HTTP at 1/4/16 clients, server RSS.

    python -m bench.search                                   # 10,000 chunks, IVF_RQ (the default type)
    python -m bench.search --n 100000 --index none,IVF_RQ
    python -m bench.search --n 1000000 --index IVF_RQ --db /tmp/thoth-1m   # keep the table for reruns

What it does, all in one run so the ratios compare like with like:
1. Table: `--n` generated chunks, written in batches of 20,000 (never all in memory). Texts come
   from bench.text (`--text`): by default Zipf-distributed words with topics, so BM25 meets the
   posting-list lengths of real text; `narrow` is the 40-word text of runs before 2026-11-25, where
   every query word is in most chunks. A kept table (`--db`) records which. `--embed-sample` texts are
   embedded with the real model; every other vector blends two of those (a + w*b, w in 0..0.6)
   plus Gaussian noise, renormalised: neighbourhoods shaped like real embeddings' without
   embedding a million texts. The FTS index is built as ingest builds it.
2. For each entry of `--index` (`none` = exact search): the ANN index is (re)built and timed;
   recall@10 of vector search against exact search on `--recall-queries` real queries; vector
   and hybrid latency in this process.
3. `search_handbook` over HTTP against a server subprocess (`python -m thoth.mcp.server`), with 1,
   4 and 16 concurrent clients: p50/p95 latency and queries/s; the server's RSS afterwards
   (anonymous memory, i.e. excluding the OS page cache, and in total).
4. Where the time goes (`--profile`, on by default): each stage of a search_handbook call timed on its
   own in this process, by 1, 4 and 16 concurrent callers (threads; the MCP tool call as concurrent
   tasks on one event loop, as the server runs it): query embedding, BM25, vector search, fetching
   the hit rows (on a table of thoth.store.chunks.LATE_READ_ROWS or more, the k hits kept read whole;
   a smaller table's searches read their rows whole, counted in fts and vector), fusion,
   the MCP layer (argument validation, the tool's shaping and rendering: the in-process tool call
   less hybrid search), JSON serialisation of the result, and HTTP (the HTTP p50 less the in-process
   tool call and serialisation). Every stage gets its own queries, so no cache answers a repeat.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.text import KINDS, TOPICS, passage, queries
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Chunk, Document, Hit
from thoth.retrieval.search import DEFAULT_RANKING, MIN_PREFETCH, fuse, fuse_lists, hybrid_search, keyword_query
from thoth.store import IndexMissing, Store, chunks
from thoth.store.indexes import is_current
from thoth.store.schema import CHUNKS

WRITE_BATCH = 20_000
WARM_UP_CALLS = 20  # search_handbook calls after a server is ready, before anything is timed
TEXT_SETTING = "bench_text"  # which generated text a kept table holds (bench.text.KINDS)


def chunk_count(store: Store) -> int:
    """How many chunks the index holds (0 before the first ingest)."""
    try:
        return store.count_of(Chunk)
    except IndexMissing:
        return 0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (the worker processes under a supervisor)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            pids += process_tree(int(child))
    return pids


def rss_mb(pid: int) -> dict[str, float]:
    """Resident memory in MB of a process and its children together: total, anonymous (heap: excludes
    page cache), file-backed, peak."""
    fields = {"VmRSS": 0.0, "RssAnon": 0.0, "RssFile": 0.0, "VmHWM": 0.0}
    for one in process_tree(pid):
        for line in Path(f"/proc/{one}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in fields:
                fields[key] += int(value.split()[0]) / 1024
    return {"rss": fields["VmRSS"], "anon": fields["RssAnon"], "file": fields["RssFile"], "peak": fields["VmHWM"]}


# -- 1. the table ------------------------------------------------------------------


def build_table(settings: Settings, n: int, embed_sample: int, text: str) -> dict[str, float]:
    rng = random.Random(2)
    np_rng = np.random.default_rng(2)
    embedder = get_embedder(settings)
    store = Store(settings)
    store.ensure_tables(embedder.dim)
    store.metadata.record_model(embedder.model_name, embedder.dim)
    topics = [TOPICS[i % len(TOPICS)] for i in range(min(n, embed_sample))]
    texts = [passage(rng, t, 8, text) for t in topics]
    started = time.perf_counter()
    sample = embedder.embed(texts)
    embed_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for first in range(0, n, WRITE_BATCH):
        count = min(WRITE_BATCH, n - first)
        ids = np.arange(first, first + count)
        a = ids % len(sample)
        b = np_rng.integers(0, len(sample), count)
        vectors = sample[a] + np_rng.uniform(0, 0.6, (count, 1)).astype(np.float32) * sample[b]
        vectors[ids < len(sample)] = sample[a[ids < len(sample)]]  # the embedded sample itself, as is
        vectors += np_rng.normal(0, 0.02, vectors.shape).astype(np.float32) * (ids >= len(sample))[:, None]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = []
        for i, j, vector in zip(ids.tolist(), a.tolist(), vectors, strict=True):
            topic = topics[j]
            body = texts[j] if i < len(texts) else passage(rng, topic, 8, text)
            key = f"{topic.replace(' ', '-')}/page-{i // 10}.md"
            rows.append(
                {
                    "chunk_id": f"c{i:08d}",
                    "doc_id": f"d{i // 10:07d}",
                    "source_id": "bench",
                    "partition_id": f"p{i}",
                    "chunk_index": i % 10,
                    "key": key,
                    "title": topic.title(),
                    "section": topic,
                    "text": body,
                    "search_text": f"{topic}\n{body}",
                    "vector": vector,
                    "content_type": "text",
                    "language": "",
                    "tags": [],
                    "source_ref": f"doc://bench/{key}",
                }
            )
        store.insert(Chunk, rows)
        print(f"  wrote {first + count:,} / {n:,} chunks", file=sys.stderr, flush=True)
    write_seconds = time.perf_counter() - started
    ensure_documents(store, n)
    started = time.perf_counter()
    store.indexes.ensure_fts()
    store.metadata.set({TEXT_SETTING: text})
    return {"embed": embed_seconds, "write": write_seconds, "fts": time.perf_counter() - started}


def ensure_documents(store: Store, n: int) -> None:
    """A `documents` row for each generated document (10 chunks each): searches serve only the chunks a
    documents row points at (thoth.store.served). A table written before it had none: they are added."""
    if store.count_of(Document) == 0:
        docs = range(-(-n // 10))
        store.insert(
            Document,
            [{"doc_id": f"d{d:07d}", "source_id": "bench", "key": f"page-{d}.md", "status": "ok"} for d in docs],
        )


# -- 2. the ANN index: build, recall, in-process latency --------------------------------


def drop_vector_index(store: Store) -> None:
    index = store.indexes.vector_index()
    if index:
        store.table(CHUNKS).drop_index(index.name)


def nearest(store: Store, vector: np.ndarray, limit: int) -> list[Hit]:
    """The `limit` chunks nearest `vector`, read whole: a search's vector steps (thoth.retrieval.search)."""
    reading = store.search_reading(vector=True)
    return store.completed(reading, store.vector_candidates(reading, vector, limit))


def exact_search(store: Store, vector: np.ndarray) -> list[str]:
    """The 10 nearest chunks by cosine, by LanceDB's brute force (the ANN index bypassed)."""
    query = store.table(CHUNKS).search(vector).metric("cosine").bypass_vector_index().select(["chunk_id"])
    return [row["chunk_id"] for row in query.limit(10).to_list()]


def recall_sweep(settings: Settings, vectors: np.ndarray, exact: list[set[str]], grid: list[tuple[int, int]]) -> None:
    """Recall@10 and vector-search latency for each (nprobes, refine factor): how to pick the constants
    (thoth.store.chunks.NPROBES, REFINE_FACTOR), patched in this process for each pair."""
    print(f"{'nprobes':>8}{'refine':>8}{'recall@10':>10}{'vector p50 ms':>15}")
    kept = chunks.NPROBES, chunks.REFINE_FACTOR
    for nprobes, refine in grid:
        chunks.NPROBES, chunks.REFINE_FACTOR = nprobes, refine
        store = Store(settings)
        nearest(store, vectors[0], 10)
        found, ms = [], []
        for v, truth in zip(vectors, exact, strict=True):
            started = time.perf_counter()
            ann = {r.chunk_id for r in nearest(store, v, 10)}
            ms.append((time.perf_counter() - started) * 1000)
            found.append(len(ann & truth) / 10)
        print(f"{nprobes:>8}{refine:>8}{np.mean(found):>10.3f}{percentile(ms, 50):>15.1f}", flush=True)
    chunks.NPROBES, chunks.REFINE_FACTOR = kept  # the rest of the run measures the constants as they are


def measure_index(
    settings: Settings, qs: list[str], recall_qs: list[str], k: int, grid: list[tuple[int, int]] | None = None
) -> dict[str, float]:
    store, embedder = Store(settings), get_embedder(settings)
    vectors = embedder.embed(recall_qs)
    found, ann_ms, exact_ms, truths = [], [], [], []
    for v in vectors:
        started = time.perf_counter()
        ann = [r.chunk_id for r in nearest(store, v, 10)]
        ann_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        exact = exact_search(store, v)
        exact_ms.append((time.perf_counter() - started) * 1000)
        found.append(len(set(ann) & set(exact)) / 10)
        truths.append(set(exact))
    if grid:
        recall_sweep(settings, vectors, truths, grid)
    hybrid_search(store, embedder, qs[0], k)  # warm caches, as the server's first request does
    hybrid_ms = []
    for q in qs:
        started = time.perf_counter()
        hybrid_search(store, embedder, q, k)
        hybrid_ms.append((time.perf_counter() - started) * 1000)
    return {
        "recall": float(np.mean(found)),
        "vector_p50": percentile(ann_ms, 50),
        "exact_p50": percentile(exact_ms, 50),
        "hybrid_p50": percentile(hybrid_ms, 50),
        "hybrid_p95": percentile(hybrid_ms, 95),
    }


# -- 4. where the time goes: each stage alone, by 1..16 concurrent callers -------------------------

STAGES = ["embed", "fts", "vector", "fetch rows", "fusion", "hybrid search", "MCP layer", "serialise", "HTTP"]


def run_concurrently(fn: Callable[[Any], object], items: list, clients: int) -> list[float]:
    """Call `fn` on every item from `clients` threads at once; milliseconds per call. The process's CPU
    milliseconds per call (all threads, native ones included) are appended to CPU_MS: on a shared,
    loaded machine CPU time is the steadier figure, and on 2 cores it bounds queries/s."""
    cpu_started = time.process_time()
    times: list[float] = []
    lock = threading.Lock()
    todo = iter(items)

    def worker() -> None:
        while True:
            with lock:
                item = next(todo, None)
            if item is None:
                return
            started = time.perf_counter()
            fn(item)
            with lock:
                times.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    CPU_MS.append((time.process_time() - cpu_started) * 1000 / max(1, len(items)))
    return times


CPU_MS: list[float] = []


def tool_calls(env: dict[str, str], qs: list[str], k: int, clients: int) -> tuple[list[float], list[Any]]:
    """search_handbook through the MCP server object in this process (validation, tool, result conversion),
    `clients` calls at a time on one event loop as the server does, its query cache off; milliseconds per
    call and the results."""
    import anyio

    import thoth.app
    from thoth.app import Thoth
    from thoth.mcp.tools import build_mcp

    thoth.app.QUERY_CACHE_SIZE = 0  # every query embedded: the cost measured
    app = Thoth(Settings.from_env(env))
    app.warm_up(background=False)
    app.store.chunks.warm()  # and a large table's ranking columns, which the server reads beside its first calls
    mcp = build_mcp(app)
    logging.getLogger("thoth").setLevel(logging.WARNING)  # the SDK configured logging: no line per call
    times: list[float] = []
    results: list[Any] = []

    async def one(q: str) -> None:
        started = time.perf_counter()
        results.append(await mcp.call_tool("search_handbook", {"query": q, "num_results": k}))
        times.append((time.perf_counter() - started) * 1000)

    async def run_all() -> None:
        await one("warm up the tool")
        times.clear()
        cpu_started = time.process_time()
        limiter = anyio.Semaphore(clients)

        async def limited(q: str) -> None:
            async with limiter:
                await one(q)

        async with anyio.create_task_group() as tg:
            for q in qs:
                tg.start_soon(limited, q)
        CPU_MS.append((time.process_time() - cpu_started) * 1000 / len(qs))

    anyio.run(run_all)
    return times, results


def profile_stages(
    settings: Settings, env: dict[str, str], n: int, k: int, clients: int, text: str
) -> dict[str, float]:
    """p50 milliseconds of each stage of search_handbook, `clients` callers at a time (see the module doc).
    The store and embedder are configured as the server's (thoth.app.Thoth), its onnxruntime threads included."""
    from thoth.app import Thoth

    served = Thoth(Settings.from_env(env)).settings
    store, embedder = Store(served), get_embedder(served)  # the model itself: its LRU would answer nothing here
    depth = max(MIN_PREFETCH, k)
    qs = {stage: queries(n, seed=100 + i, kind=text) for i, stage in enumerate(STAGES)}
    vectors = dict(zip(qs["vector"], embedder.embed(qs["vector"]), strict=True))
    vectors |= dict(zip(qs["fetch rows"], embedder.embed(qs["fetch rows"]), strict=True))
    late = store.count_of(Chunk) >= chunks.LATE_READ_ROWS  # searches read ids first, then the hits kept whole

    def fts(q: str) -> list[Hit]:  # the list as hybrid search gets it, unread
        words, phrases = keyword_query(q)
        return store.keyword_candidates(store.search_reading(vector=False), words, phrases, depth).result()

    def vector(q: str) -> list[Hit]:
        return store.vector_candidates(store.search_reading(vector=True), vectors[q], depth)

    def kept(q: str) -> list[Hit]:  # the k hits a search_handbook call keeps, as the searches return them
        weight = DEFAULT_RANKING.vector_weight
        return fuse_lists({"vector": (weight, vector(q)), "keyword": (1 - weight, fts(q))}, k)

    def complete(hits: list[Hit]) -> list[Hit]:  # what the store does with the hits kept on a large table
        return store.completed(store.search_reading(vector=True), hits)

    lists = [(q, vector(q), fts(q)) for q in qs["vector"]]
    to_fill = [kept(q) for q in qs["fetch rows"]] if late else []
    CPU_MS.clear()
    p50 = {
        "embed": run_concurrently(lambda q: embedder.embed([q]), qs["embed"], clients),
        "fts": run_concurrently(fts, qs["fts"], clients),
        "vector": run_concurrently(vector, qs["vector"], clients),
        # late: the k hits kept read whole; a smaller table's searches read their rows (fts, vector)
        "fetch rows": run_concurrently(complete, to_fill, clients) if late else [0.0],
        "fusion": run_concurrently(lambda item: fuse([(0.5, item[1]), (0.5, item[2])], k), lists, clients),
        "hybrid search": run_concurrently(
            lambda q: hybrid_search(store, embedder, q, k, documents=True).hits, qs["hybrid search"], clients
        ),
    }
    if not late:
        CPU_MS.insert(3, 0.0)
    out = {name: percentile(times, 50) for name, times in p50.items()}
    cpu = dict(zip(p50, CPU_MS, strict=True))
    # The tool call on the hybrid stage's own queries, its query cache off: at 1M chunks one query's BM25
    # costs several times another's, so a difference over two query sets was mostly the queries' own.
    tool_ms, results = tool_calls(env, qs["hybrid search"], k, clients)
    out["tool call"], cpu["tool call"] = percentile(tool_ms, 50), CPU_MS[-1]
    out["MCP layer"] = max(0.0, out["tool call"] - out["hybrid search"])
    cpu["MCP layer"] = max(0.0, cpu["tool call"] - cpu["hybrid search"])
    dump = run_concurrently(lambda r: r.model_dump_json(by_alias=True, exclude_none=True), results, clients)
    out["serialise"], cpu["serialise"] = percentile(dump, 50), CPU_MS[-1]
    out["cpu"] = cpu  # type: ignore[assignment]
    return out


def print_profile(profiles: dict[int, dict[str, float]], http: dict[int, dict[str, float]]) -> None:
    levels = list(profiles)
    print("where the time goes: p50 ms of each stage alone, by concurrent callers (search_handbook)")
    head = f"{'stage':16}{'CPU ms, 1st':>12}" + "".join(f"{f'{c} client' + ('s' if c > 1 else ''):>12}" for c in levels)
    print(head)
    print("-" * len(head))
    for stage in STAGES:
        cpu = profiles[levels[0]]["cpu"].get(stage, float("nan"))  # type: ignore[union-attr]
        if stage == "HTTP":  # the server's CPU per request, less what the tool call and serialising took here
            cpu = (
                http[levels[0]]["cpu_ms"]
                - profiles[levels[0]]["cpu"]["tool call"]
                - profiles[levels[0]]["cpu"]["serialise"]
            )
        cells = [f"{cpu:>12.1f}"]
        for c in levels:
            prof = profiles[c]
            if stage == "HTTP":
                value = http[c]["p50"] - prof["tool call"] - prof["serialise"] if c in http else float("nan")
            else:
                value = prof[stage]
            cells.append(f"{value:>12.1f}")
        print(f"{stage:16}" + "".join(cells))
    total = [http[c]["p50"] if c in http else float("nan") for c in levels]
    server_cpu = http[levels[0]]["cpu_ms"] if levels[0] in http else float("nan")
    print(f"{'= over HTTP':16}{server_cpu:>12.1f}" + "".join(f"{value:>12.1f}" for value in total))
    print("(embed, fts, vector and fetch rows make up hybrid search, with fusion; MCP layer = tool call less it;")
    print(" CPU ms: the process's CPU time per call at the first concurrency level, all threads)")


# -- 3. search_handbook over HTTP, concurrent clients ---------------------------------------


def start_server(
    env: dict[str, str], workers: int = 1, patches: dict[str, object] | None = None
) -> tuple[subprocess.Popen, str]:
    """The server on a free port: `python -m thoth.mcp.server`, with `workers` > 1 a supervisor and
    that many worker processes (THOTH_WORKERS), each with its own model and tables. `patches`: module
    constants set first (tests/patched.py), for one worker."""
    port = free_port()
    command = [sys.executable, "-m", "thoth.mcp.server"]
    if patches:
        command = [sys.executable, "-m", "tests.patched", json.dumps(patches), "thoth.mcp.server:main"]
    server = subprocess.Popen(command, env={**checkout_env(env), "PORT": str(port), "THOTH_WORKERS": str(workers)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=5).json().get("embedder") == "ready":
                break
        except (httpx.HTTPError, ValueError):
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise RuntimeError("the server did not become ready")
        time.sleep(0.2)
    # A large table's ranking columns are read beside the first searches (0.4 s at 1M here): warm up
    # past that, so every level measures the steady state.
    with httpx.Client(timeout=120) as client:
        for q in queries(WARM_UP_CALLS, seed=999):
            call(client, url, q, 5)
    return server, url


def checkout_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a child Python that must import thoth from the checkout its PYTHONPATH names: `-m` and
    `-c` put the working directory first on sys.path, so without PYTHONSAFEPATH a bench run from one
    checkout would import that checkout's thoth for every other one too."""
    return {**env, "PYTHONSAFEPATH": "1"} if env.get("PYTHONPATH") else env


def call(client: httpx.Client, url: str, query: str, k: int) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_handbook", "arguments": {"query": query, "num_results": k}},
    }
    response = client.post(f"{url}/mcp", json=body)
    response.raise_for_status()
    if response.json()["result"]["isError"]:
        raise RuntimeError(response.text)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (all its threads)."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def stat_cpu_seconds(stat: Path) -> float:
    """User + system CPU seconds from a /proc stat file: a process's, or one thread's (/proc/PID/task/TID/stat)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """cpu_seconds of a process and its running children together (a supervisor and its workers)."""
    return sum(cpu_seconds(one) for one in process_tree(pid))


def time_concurrent(url: str, qs: list[str], k: int, clients: int, pid: int | None = None) -> dict[str, float]:
    """`clients` threads, each with its own connection, share the queries; latency per request and total rate,
    with the server's `pid` its CPU milliseconds per request, and this process's (the load generator's, which
    shares the machine's cores with the server)."""
    times: list[float] = []
    lock = threading.Lock()
    todo = iter(qs)

    def client_loop() -> None:
        with httpx.Client(timeout=120) as client:
            call(client, url, qs[0], k)  # connection set up, not counted
            while True:
                with lock:
                    q = next(todo, None)
                if q is None:
                    return
                started = time.perf_counter()
                call(client, url, q, k)
                with lock:
                    times.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    started, cpu = time.perf_counter(), tree_cpu_seconds(pid) if pid else 0.0
    client_cpu = time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    cpu_ms = (tree_cpu_seconds(pid) - cpu) * 1000 / len(times) if pid else float("nan")  # incl. `clients` warm-ups
    client_ms = (time.process_time() - client_cpu) * 1000 / len(times)
    return {
        "p50": percentile(times, 50),
        "p95": percentile(times, 95),
        "qps": len(times) / wall,
        "cpu_ms": cpu_ms,
        "client_cpu_ms": client_ms,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="chunks in the table")
    parser.add_argument("--index", default="IVF_RQ", help="comma-separated: none, IVF_RQ")
    parser.add_argument("--queries", type=int, default=100, help="queries per concurrency level")
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument("--clients", default="1,4,16", help="concurrency levels over HTTP")
    parser.add_argument("--k", type=int, default=5, help="num_results per search")
    parser.add_argument("--embed-sample", type=int, default=2_000, help="chunks embedded with the real model")
    parser.add_argument("--db", help="keep the table in this folder (reused when it already holds --n chunks)")
    parser.add_argument("--text", choices=KINDS, default="natural", help="generated text: see bench/text.py")
    parser.add_argument("--reuse-index", action="store_true", help="keep an existing IVF_RQ index")
    parser.add_argument("--sweep", default="", help="nprobes:refine pairs to sweep recall over, e.g. 32:10,64:20")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True, help="per-stage profile")
    parser.add_argument("--workers", type=int, default=1, help="server processes (THOTH_WORKERS) over HTTP")
    parser.add_argument(
        "--set", action="append", default=[], metavar="THOTH_NAME=VALUE", help="a setting for the server and profile"
    )
    args = parser.parse_args(argv)
    kinds = [s.strip().upper() for s in args.index.split(",") if s.strip()]
    levels = [int(c) for c in args.clients.split(",") if c.strip()]

    tmp = None if args.db else tempfile.TemporaryDirectory(prefix="thoth-bench-")
    db = Path(args.db) if args.db else Path(tmp.name) / "db"
    base = Settings.from_env()
    cache_dir = str(Path(base.cache_dir).expanduser().resolve())
    settings = Settings.from_env(db_uri=str(db), read_consistency_seconds=-1, cache_dir=cache_dir)
    grid = [(int(a), int(b)) for a, b in (pair.split(":") for pair in args.sweep.split(",") if pair.strip())]
    load_start = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load_start:.1f}; backend {settings.embed_backend}")
    try:
        store = Store(settings)
        built = {}
        have, text = chunk_count(store), args.text
        if have:
            text = store.metadata.get(TEXT_SETTING) or "narrow"  # tables of before bench.text held narrow text
            if (have, text) != (args.n, args.text):
                sys.exit(f"{db} holds {have:,} chunks of {text} text, not {args.n:,} of {args.text}: use another --db")
            print(f"reusing the {args.n:,}-chunk table ({text} text) in {db}")
            ensure_documents(store, args.n)
        else:
            built = build_table(settings, args.n, args.embed_sample, text)
        qs, recall_qs = queries(args.queries, kind=text), queries(args.recall_queries, seed=4, kind=text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
        env |= {"THOTH_DB_URI": str(db), "THOTH_CACHE_DIR": cache_dir, "THOTH_LOG_LEVEL": "WARNING"}
        for pair in args.set:
            name, _, value = pair.partition("=")
            if not name.startswith("THOTH_") or not value:
                parser.error(f"--set wants THOTH_NAME=VALUE, got {pair!r}")
            env[name] = value
        rows = []
        for kind in kinds:
            store = Store(settings)
            existing = store.indexes.vector_index()
            build_s = float("nan")
            if kind not in ("NONE", "IVF_RQ"):
                parser.error(f"--index takes none or IVF_RQ (the one type Thoth builds), got {kind}")
            if not (args.reuse_index and kind != "NONE" and existing and is_current(existing)):
                drop_vector_index(store)
                build_s = 0.0
                if kind != "NONE":
                    info = store.indexes.ensure_vector(min_rows=1)
                    build_s = info.seconds if info else 0.0
            print(f"{kind.lower()}:")
            local = measure_index(settings, qs, recall_qs, args.k, grid)
            server, url = start_server(env, args.workers)
            try:
                # fresh queries per level: a query cache must not answer the 4- and 16-client runs
                http = {
                    c: time_concurrent(url, queries(len(qs) * min(c, 2), seed=10 + c, kind=text), args.k, c, server.pid)
                    for c in levels
                }
                memory = rss_mb(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=30)
            profiles = {}
            if args.profile:
                profiles = {c: profile_stages(settings, env, len(qs), args.k, c, text) for c in levels}
            rows.append((kind, build_s, local, http, memory, profiles))
    finally:
        if tmp is not None:
            tmp.cleanup()

    print()
    if built:
        print(
            f"table: {args.n:,} chunks; {args.embed_sample} embedded in {built['embed']:.0f} s, written in "
            f"{built['write']:.0f} s, FTS index {built['fts']:.0f} s"
        )
    print(f"search constants: nprobes {chunks.NPROBES}, refine factor {chunks.REFINE_FACTOR}")
    head = (
        f"{'index':12}{'build s':>8}{'recall@10':>10}{'vector ms':>10}{'exact ms':>9}{'hybrid p50':>11}"
        f"{'RSS MB anon/total':>19}"
    )
    print(head)
    print("-" * len(head))
    for kind, build_s, local, _, memory, _ in rows:
        print(
            f"{kind.lower():12}{build_s:>8.1f}{local['recall']:>10.3f}{local['vector_p50']:>10.1f}"
            f"{local['exact_p50']:>9.1f}{local['hybrid_p50']:>11.1f}{memory['anon']:>11.0f} / {memory['rss']:<6.0f}"
        )
    print()
    print(f"search_handbook over HTTP (hybrid, num_results={args.k}, {args.workers} server process(es)):")
    head = (
        f"{'index':12}{'clients':>8}{'p50 ms':>9}{'p95 ms':>9}{'queries/s':>11}{'p50 / in-process':>18}"
        f"{'CPU ms server / client':>24}"
    )
    print(head)
    print("-" * len(head))
    for kind, _, local, http, _, _ in rows:
        for c, r in http.items():
            ratio = r["p50"] / local["hybrid_p50"]
            print(
                f"{kind.lower():12}{c:>8}{r['p50']:>9.1f}{r['p95']:>9.1f}{r['qps']:>11.1f}{ratio:>17.2f}x"
                f"{r['cpu_ms']:>15.1f} / {r['client_cpu_ms']:<6.1f}"
            )
    print("(CPU ms a request: the server's, all its threads; the client's, this process's threads sending them)")
    print()
    for kind, _, _, http, _, profiles in rows:
        if profiles:
            print(f"{kind.lower()}: ", end="")
            print_profile(profiles, http)
            print()
    print("targets: recall@10 >= 0.95 with an index; server RSS <= 600 MB at 1M chunks (anonymous memory)")
    print("issue 17: at 1M chunks p50 <= 30 ms (1 client), <= 60 ms (4), >= 40 queries/s and p95 <= 3x p50 (16);")
    print("          at 25 chunks p50 <= 10 ms (1 client)")
    print(f"load average (1 min): {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
