"""Search latency over HTTP against in-process, and ingest throughput against the raw model.

    python -m bench.search                # 10,000 generated chunks
    python -m bench.search --n 100000     # the large run

What it does, all in one run so the ratios compare like with like:
1. Ingest: writes `--ingest-files` generated Markdown files, ingests them with the real
   pipeline (parse, chunk, embed, write) and embeds the very same chunk texts with the raw
   model. Ratio = pipeline chunks/s / raw model chunks/s (target >= 0.7).
2. Index: builds a chunk table of `--n` generated chunks. `--embed-sample` of them are
   embedded with the real model; the rest reuse those vectors with small Gaussian noise
   (renormalised), so a 100k index builds in minutes on 2 cores. Text is generated from a
   fixed vocabulary, so BM25 has realistic term statistics.
3. Search: the same `--queries` queries through `search_handbook` over HTTP (a server
   subprocess, as deployed) and through `hybrid_search` in this process; p50/p95 of each and
   the ratio of medians (target: HTTP p50 <= 1.5x in-process).
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from ingest.chunking import Chunker
from ingest.parsers import parse
from ingest.pipeline import Ingestor
from thoth.config import Settings
from thoth.embed import get_embedder, get_tokenizer
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.store.schema import CHUNKS

TOPICS = [
    "deployment", "time off", "on-call", "security review", "expense reports", "hiring", "onboarding",
    "incident response", "database migration", "code review", "release notes", "performance review",
    "travel policy", "laptop setup", "access requests", "backups", "monitoring alerts", "customer escalation",
]
WORDS = (
    "team process request approve manager schedule document policy service index search model release "
    "owner ticket budget review access system handbook weekly quarterly incident runbook metric deploy "
    "rollback storage latency queue region contract vendor training mentor goal feedback calendar"
).split()


def sentence(rng: random.Random, topic: str) -> str:
    words = rng.sample(WORDS, 9)
    return f"For {topic}, the {words[0]} {words[1]} must {words[2]} the {words[3]} {words[4]} before {words[5]}."


def passage(rng: random.Random, topic: str, sentences: int) -> str:
    return " ".join(sentence(rng, topic) for _ in range(sentences))


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- 1. ingest throughput ---------------------------------------------------------


def bench_ingest(settings: Settings, workdir: Path, files: int) -> dict:
    rng = random.Random(1)
    folder = workdir / "corpus"
    folder.mkdir()
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        body = "\n\n".join(f"## Part {p}\n\n{passage(rng, topic, 12)}" for p in range(3))
        (folder / f"page-{i:04d}.md").write_text(f"---\ntitle: {topic.title()} {i}\n---\n# {topic.title()}\n\n{body}\n")
    embedder = get_embedder(settings)
    embedder.embed(["warm up"])
    ingest_settings = Settings.from_env(dict(settings.env), db_uri=str(workdir / "ingest-db"))
    started = time.perf_counter()
    summary = Ingestor(ingest_settings, embedder=embedder).run(str(folder), name="bench")
    pipeline_seconds = time.perf_counter() - started

    chunker = Chunker(get_tokenizer(settings), settings.chunk_tokens, settings.chunk_overlap_tokens)
    texts = []
    for path in sorted(folder.iterdir()):
        doc = parse(path.name, path.read_bytes())
        texts += [c.embed_text for c in chunker.chunk(doc.title, doc.partitions)]
    started = time.perf_counter()
    embedder.embed(texts)
    raw_seconds = time.perf_counter() - started
    return {
        "chunks": summary.chunks_written,
        "pipeline_cps": summary.chunks_written / pipeline_seconds,
        "raw_cps": len(texts) / raw_seconds,
    }


# -- 2. the index ------------------------------------------------------------------


def build_index(settings: Settings, n: int, embed_sample: int) -> None:
    rng = random.Random(2)
    np_rng = np.random.default_rng(2)
    embedder = get_embedder(settings)
    store = Store(settings)
    store.ensure_tables(embedder.dim)
    store.record_model(embedder.model_name, embedder.dim)
    sample_topics = [TOPICS[i % len(TOPICS)] for i in range(min(n, embed_sample))]
    sample_texts = [passage(rng, t, 8) for t in sample_topics]
    sample_vectors = embedder.embed(sample_texts)
    batch: list[dict] = []
    for i in range(n):
        j = i % len(sample_texts)
        if i < len(sample_texts):
            text, vector = sample_texts[j], sample_vectors[j]
        else:
            text = passage(rng, sample_topics[j], 8)
            vector = sample_vectors[j] + np_rng.normal(0, 0.03, embedder.dim).astype(np.float32)
            vector /= np.linalg.norm(vector)
        key = f"{sample_topics[j].replace(' ', '-')}/page-{i // 10}.md"
        batch.append(
            {
                "chunk_id": f"c{i:08d}", "doc_id": f"d{i // 10:07d}", "source_id": "bench", "partition_id": f"p{i}",
                "chunk_index": i % 10, "key": key, "title": sample_topics[j].title(), "section": sample_topics[j],
                "text": text, "search_text": f"{sample_topics[j]}\n{text}", "vector": vector,
                "content_type": "text", "language": "", "tags": [], "source_ref": f"doc://bench/{key}",
            }
        )
        if len(batch) == 20_000:
            store.add(CHUNKS, batch)
            batch = []
    store.add(CHUNKS, batch)
    store.ensure_fts_index()


# -- 3. search latency ---------------------------------------------------------------


def queries(count: int) -> list[str]:
    rng = random.Random(3)
    return [f"how do I handle {rng.choice(TOPICS)} {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(count)]


def time_in_process(settings: Settings, qs: list[str], k: int) -> list[float]:
    store, embedder = Store(settings), get_embedder(settings)
    hybrid_search(store, embedder, qs[0], k)  # warm caches, as the server's first request does
    times = []
    for q in qs:
        started = time.perf_counter()
        hybrid_search(store, embedder, q, k)
        times.append((time.perf_counter() - started) * 1000)
    return times


def time_over_http(settings: Settings, qs: list[str], k: int) -> list[float]:
    port = free_port()
    env = {**os.environ, "THOTH_DB_URI": settings.db_uri, "PORT": str(port), "THOTH_LOG_LEVEL": "WARNING"}
    server = subprocess.Popen([sys.executable, "-m", "thoth.mcp.server"], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).json().get("embedder") == "ready":
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not become ready")
            time.sleep(0.2)
        times = []
        with httpx.Client(timeout=60) as client:
            def call(q: str) -> None:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "search_handbook", "arguments": {"query": q, "num_results": k}}}
                response = client.post(f"{url}/mcp", json=body)
                response.raise_for_status()
                assert not response.json()["result"]["isError"], response.text

            call(qs[0])
            for q in qs:
                started = time.perf_counter()
                call(q)
                times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="chunks in the search index")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=5, help="num_results per search")
    parser.add_argument("--embed-sample", type=int, default=2_000, help="chunks embedded with the real model")
    parser.add_argument("--ingest-files", type=int, default=60, help="generated Markdown files for the ingest run")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="thoth-bench-") as tmp:
        workdir = Path(tmp)
        settings = Settings.from_env(db_uri=str(workdir / "db"), read_consistency_seconds=-1)
        print(f"machine: {os.cpu_count()} cores; backend {settings.embed_backend}; model {settings.embed_model}")
        ingest = bench_ingest(settings, workdir, args.ingest_files)
        started = time.perf_counter()
        build_index(settings, args.n, args.embed_sample)
        build_seconds = time.perf_counter() - started
        qs = queries(args.queries)
        local = time_in_process(settings, qs, args.k)
        remote = time_over_http(settings, qs, args.k)

    print()
    print(f"index: {args.n} chunks built in {build_seconds:.1f}s ({args.embed_sample} embedded, rest perturbed)")
    print(f"{'':28}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'hybrid search, in process':28}{percentile(local, 50):>10.1f}{percentile(local, 95):>10.1f}")
    print(f"{'search_handbook over HTTP':28}{percentile(remote, 50):>10.1f}{percentile(remote, 95):>10.1f}")
    ratio = statistics.median(remote) / statistics.median(local)
    print(f"HTTP / in-process p50: {ratio:.2f}x (target <= 1.5x)")
    print()
    print(f"ingest: {ingest['chunks']} chunks; pipeline {ingest['pipeline_cps']:.1f} chunks/s, "
          f"raw model {ingest['raw_cps']:.1f} chunks/s on the same texts")
    print(f"pipeline / raw model: {ingest['pipeline_cps'] / ingest['raw_cps']:.2f}x (target >= 0.7x)")


if __name__ == "__main__":
    main()
