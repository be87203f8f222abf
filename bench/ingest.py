"""Ingest throughput: the pipeline end to end against the raw model on the same texts, ONNX against torch.

    python -m bench.ingest [--chunks 1000] [--passes 2] [--int8] [--rss 10000,100000] [--rss-embedder onnx|stub]

In one run, on the same generated Markdown folder (about 3.5 chunks a file of ~540 words):
1. raw ONNX: the chunk texts the pipeline will embed, embedded alone (the CPU limit);
2. ONNX pipeline: `Writer.run` end to end (plan, parse, chunk, embed, write, FTS index);
3. torch pipeline: the same with sentence-transformers on torch, into a fresh database;
4. with `--int8`: raw and pipeline with the dynamically quantised int8 ONNX model.
Ratios: ONNX pipeline / raw ONNX (target >= 0.8) and ONNX pipeline / torch pipeline (target >= 2).
The runs repeat `--passes` times, every other pass in reverse order, and the rates are totals over
passes: load from other processes on a shared machine then weighs on every run alike.

`--rss N,...` then ingests N-chunk folders, each in a fresh child process, and reports its peak RSS
(VmHWM): memory must stay bounded as the corpus grows. `--rss-embedder stub` swaps the model for a
hash-based stand-in (same dimension, no model memory, ~1000x faster) so that 100,000 chunks take
minutes, not hours; what grows with the corpus is the pipeline's memory, which it measures.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.text import TOPICS, passage
from thoth.config import Settings
from thoth.embed import BUNDLED_MODEL, Embedder, embed_batch, get_tokenizer, resolve_model
from thoth.embedders import get_embedder
from thoth.embedders.local import SentenceTransformerEmbedder
from thoth.store import Store, indexes
from thoth.writes.chunking import Chunker
from thoth.writes.parsers import parse
from thoth.writes.writer import Writer

CHUNKS_PER_FILE = 3.5  # what write_corpus's files chunk into at 200 word pieces


def write_corpus(folder: Path, files: int, seed: int = 1) -> None:
    """Markdown pages: front matter, a title, three sections of ~180 words each."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        body = "\n\n".join(f"## Part {p}\n\n{passage(rng, topic, 12)}" for p in range(3))
        sub = folder / f"{i // 1000:03d}"  # at most 1000 files a folder
        sub.mkdir(exist_ok=True)
        (sub / f"page-{i:06d}.md").write_text(f"---\ntitle: {topic.title()} {i}\n---\n# {topic.title()}\n\n{body}\n")


def chunk_texts(settings: Settings, folder: Path) -> list[str]:
    chunker = Chunker(get_tokenizer(settings), settings.chunk_tokens)
    texts = []
    for path in sorted(folder.rglob("*.md")):
        doc = parse(path.name, path.read_bytes())
        texts += [c.embed_text for c in chunker.chunk(doc.title, doc.sections)]
    return texts


class StubEmbedder(Embedder):
    """A stand-in for the model in the memory runs: unit vectors from a hash of each text."""

    model_name = "bench-stub"
    dim = 384
    max_tokens = 254

    def embed(self, texts: list[str]) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts]
        out = np.stack([np.random.default_rng(s).standard_normal(self.dim, dtype=np.float32) for s in seeds])
        return out / np.linalg.norm(out, axis=1, keepdims=True) if texts else np.zeros((0, self.dim), np.float32)


def timed_ingest(settings: Settings, folder: Path, embedder: object) -> tuple[int, float]:
    started = time.perf_counter()
    summary = Writer(settings, embedder=embedder).run(str(folder), name="bench")  # type: ignore[arg-type]
    return summary.chunks_written, time.perf_counter() - started


def peak_rss_child(chunks: int, embedder: str) -> None:
    """In a child process: write a folder of about `chunks` chunks, ingest it, print peak RSS in MB.

    The ANN index is built after the run, as ingest does at its end, so that its memory (it loads
    every vector to train) shows apart from the pipeline's: printed are chunks, seconds, RSS
    before, peak RSS of the ingest run, and peak RSS once the index is built.
    """
    with tempfile.TemporaryDirectory(prefix="thoth-bench-rss-") as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder, max(1, round(chunks / CHUNKS_PER_FILE)), seed=5)
        settings = Settings.from_env(db_uri=str(Path(tmp) / "db"), read_consistency_seconds=-1)
        model = StubEmbedder() if embedder == "stub" else get_embedder(settings)
        model.embed(["warm up"])
        before = own_status_mb("VmRSS")
        threshold, indexes.VECTOR_INDEX_MIN_ROWS = indexes.VECTOR_INDEX_MIN_ROWS, 0  # none during the ingest
        written, seconds = timed_ingest(settings, folder, model)
        ingest_peak = own_status_mb("VmHWM")
        Store(settings).indexes.ensure_vector(min_rows=threshold)
        print(f"{written} {seconds:.1f} {before:.0f} {ingest_peak:.0f} {own_status_mb('VmHWM'):.0f}")


def own_status_mb(key: str) -> float:
    """A memory field of this process's /proc status (VmRSS, VmHWM: the peak) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1000, help="chunks in the throughput runs (default 1000)")
    parser.add_argument("--rss", default="", help="comma-separated chunk counts for peak-RSS runs, e.g. 10000,100000")
    parser.add_argument("--rss-embedder", choices=["onnx", "stub"], default="onnx", help="model in the RSS runs")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch pipeline")
    parser.add_argument("--int8", action="store_true", help="also the int8 ONNX model (raw and pipeline)")
    parser.add_argument("--passes", type=int, default=2, help="passes over all runs (default 2; alternating order)")
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        peak_rss_child(args.rss_child, args.rss_embedder)
        return 0

    base = Settings.from_env()
    cache_dir = str(Path(base.cache_dir).expanduser().resolve())
    load_start = os.getloadavg()[0]
    totals: dict[str, list[float]] = {}  # run name -> [chunks, seconds], summed over passes
    with tempfile.TemporaryDirectory(prefix="thoth-bench-ingest-") as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder, max(1, round(args.chunks / CHUNKS_PER_FILE)))
        fp32_settings = Settings.from_env(embed_backend="onnx", cache_dir=cache_dir, read_consistency_seconds=-1)
        texts = chunk_texts(fp32_settings, folder)
        print(
            f"{os.cpu_count()} CPUs, load average {load_start:.1f}; {len(texts)} chunks in {folder}; "
            f"{args.passes} pass(es), every other one in reverse order"
        )
        models: dict[str, tuple[Settings, object]] = {"onnx fp32": (fp32_settings, get_embedder(fp32_settings))}
        if args.int8:
            int8_settings = replace(fp32_settings, embed_int8=True)
            models["onnx int8"] = (int8_settings, get_embedder(int8_settings))
        if not args.no_torch:
            torch_settings = replace(fp32_settings, embed_backend="torch")
            torch = SentenceTransformerEmbedder(resolve_model(BUNDLED_MODEL), batch_size=embed_batch(fp32_settings))
            models["torch"] = (torch_settings, torch)
        for _, model in models.values():
            model.embed(texts[:64])  # type: ignore[attr-defined]  # warm-up: first-run allocations, not counted

        def raw(model: object) -> tuple[int, float]:
            started = time.perf_counter()
            model.embed(texts)  # type: ignore[attr-defined]
            return len(texts), time.perf_counter() - started

        runs = []
        for label, (settings, model) in models.items():
            if label != "torch":
                runs.append((f"raw model, {label}", lambda m=model: raw(m)))
            runs.append((f"pipeline, {label}", lambda s=settings, m=model, name=label: ingest_run(s, m, name)))
        count = iter(range(10**6))

        def ingest_run(settings: Settings, model: object, name: str) -> tuple[int, float]:
            db = Path(tmp) / f"db-{name.replace(' ', '-')}-{next(count)}"  # a fresh database each pass
            written, seconds = timed_ingest(replace(settings, db_uri=str(db)), folder, model)
            assert written == len(texts), (written, len(texts))
            return written, seconds

        for n in range(args.passes):
            for name, run in runs if n % 2 == 0 else runs[::-1]:
                chunks, seconds = run()
                total = totals.setdefault(name, [0, 0.0])
                total[0] += chunks
                total[1] += seconds
    raw_onnx = totals["raw model, onnx fp32"][0] / totals["raw model, onnx fp32"][1]
    rows = [(name, int(c), s) for name, (c, s) in totals.items()]

    print()
    head = f"{'run':24}{'chunks':>8}{'seconds':>9}{'chunks/s':>10}{'x raw onnx':>12}"
    print(head)
    print("-" * len(head))
    rates = {}
    for name, chunks, seconds in rows:
        rates[name] = chunks / seconds
        print(f"{name:24}{chunks:>8}{seconds:>9.1f}{rates[name]:>10.1f}{rates[name] / raw_onnx:>11.2f}x")
    print()
    pipeline = rates["pipeline, onnx fp32"]
    print(f"onnx pipeline / raw onnx: {pipeline / raw_onnx:.2f}x (target >= 0.8)")
    if "pipeline, torch" in rates:
        print(f"onnx pipeline / torch pipeline: {pipeline / rates['pipeline, torch']:.2f}x (target >= 2)")
    if "pipeline, onnx int8" in rates:
        int8_rate = rates["pipeline, onnx int8"]
        print(f"onnx int8 pipeline / raw onnx int8: {int8_rate / rates['raw model, onnx int8']:.2f}x")
        if "pipeline, torch" in rates:
            print(f"onnx int8 pipeline / torch pipeline: {int8_rate / rates['pipeline, torch']:.2f}x")
    print(f"load average (1 min): {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end")

    sizes = [int(s) for s in args.rss.split(",") if s.strip()]
    if sizes:
        print()
        print(f"peak RSS, each in a fresh process ({args.rss_embedder} embedder):")
        head = f"{'chunks':>8}{'seconds':>9}{'RSS before MB':>15}{'peak, ingest MB':>17}{'peak, + ANN index MB':>22}"
        print(head)
        print("-" * len(head))
        for size in sizes:
            cmd = [sys.executable, "-m", "bench.ingest", "--rss-child", str(size), "--rss-embedder", args.rss_embedder]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
            print(
                f"{int(out[0]):>8}{float(out[1]):>9.1f}{float(out[2]):>15.0f}{float(out[3]):>17.0f}{float(out[4]):>22.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
