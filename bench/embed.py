"""Embedding throughput: sentence-transformers on torch against ONNX fp32 and int8, in one process.

    python -m bench.embed [--n 512] [--batch 64] [--words 200] [--cache-dir .thoth]

The same generated ~200-word texts go through each backend. ONNX runs first, before anything has
imported torch, so its import time is its own; the export (if missing) runs in a subprocess first.
A second, mixed-length set (10-400 words) shows what sorting texts by length before padding buys.

Last, the compute: the model's matrix multiplications per text (from its config.json and the
texts' real lengths) times each backend's rate gives the GFLOP/s it reaches, set against a GEMM
ceiling measured here and now: numpy's BLAS multiplying the model's feed-forward shape (its
largest matrix product) on every core. No backend's whole model can beat that ceiling, so it bounds
what any fp32 runtime can gain over another on this CPU.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from thoth.config import Settings
from thoth.embed import (
    BUNDLED_MODEL,
    available_cpus,
    resolve_model,
)
from thoth.embedders.local import OnnxEmbedder, SentenceTransformerEmbedder
from thoth.embedders.onnx_export import onnx_path

_WORDS = (
    "the of and to in a is that for it as was with be by on not this are or from at which but have an they "
    "were there one all we their been has when who will more no if out so what up its about into than them "
    "can only other new some could time these two may then do first any now such like our over even most "
    "made after also did many before must through back years where much way well down should because each "
    "just those people how too little state good very make world still own see work long get here between "
    "both life being under never day same another know while last might great old year off come since "
    "against go came right used take three index query vector search chunk table source document page "
    "section heading citation summary cluster layer tree node embedding model token server client request "
    "response error cache build deploy bucket storage schema column filter ranking fusion keyword hybrid "
    "retrieval workshop exercise problem solution step diff handbook paper report author abstract result "
    "method experiment dataset baseline measured faster slower memory latency throughput batch thread"
).split()


def make_texts(n: int, words: int | tuple[int, int], seed: int = 0) -> list[str]:
    """Deterministic pseudo-English: Zipf-ish word choice, sentences of 8-20 words."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(_WORDS))]
    texts = []
    for _ in range(n):
        count = words if isinstance(words, int) else rng.randint(*words)
        out: list[str] = []
        while len(out) < count:
            sentence = rng.choices(_WORDS, weights, k=min(rng.randint(8, 20), count - len(out)))
            sentence[0] = sentence[0].capitalize()
            sentence[-1] += rng.choice(".....?!;")
            if rng.random() < 0.1:
                sentence.insert(rng.randrange(len(sentence)), f"{rng.randint(1, 9999)}")
            out.extend(sentence)
        texts.append(" ".join(out[:count]))
    return texts


def _rate(embed, texts: list[str], batch: int) -> tuple[float, np.ndarray]:
    embed(texts[:batch])  # warm-up: first-run allocations, not counted
    t0 = time.perf_counter()
    vectors = embed(texts)
    return len(texts) / (time.perf_counter() - t0), vectors


def _cos(a: np.ndarray, b: np.ndarray) -> str:
    c = (a * b).sum(axis=1)
    return f"{c.mean():.4f} / {c.min():.4f}"


def encoder_flops(config: dict, pieces: list[int]) -> float:
    """Floating-point operations of the matrix products of one BERT-style encoder pass over texts of
    `pieces` word pieces each (2 per multiply-add; layer norms, softmax and GELU left out)."""
    h, ff, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    per_token = 4 * h * h + 2 * h * ff  # the Q, K, V and output projections; the feed-forward pair
    return 2.0 * layers * sum(n * per_token + 2 * n * n * h for n in pieces)  # + scores and weighted sum


def gemm_ceiling(rows: int, h: int, ff: int, seconds: float = 2.0) -> float:
    """GFLOP/s of numpy's BLAS (all cores, float32) on the model's feed-forward product."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, h), dtype=np.float32)
    b = rng.standard_normal((h, ff), dtype=np.float32)
    a @ b  # warm-up: thread pool start, first-touch of the output
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        done += 1
    return 2.0 * rows * h * ff * done / (time.perf_counter() - t0) / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=512, help="texts per backend (default 512)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    parser.add_argument("--words", type=int, default=200, help="words per text (default 200)")
    parser.add_argument("--cache-dir", default=None, help="where the ONNX export lives (default THOTH_CACHE_DIR)")
    parser.add_argument("--no-mixed", action="store_true", help="skip the sorted/unsorted mixed-length run")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    cache_dir = args.cache_dir or settings.cache_dir
    model = resolve_model(BUNDLED_MODEL)
    fp32_file, int8_file = onnx_path(model, cache_dir), onnx_path(model, cache_dir, int8=True)
    if fp32_file.is_file() and int8_file.is_file():
        export_note = "cached"
    else:  # in a subprocess: the export imports torch, and this process must not have it yet
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "thoth.embedders.onnx_export", "--int8", "--cache-dir", str(cache_dir)]
        subprocess.run(cmd, check=True, capture_output=True)
        export_note = f"{time.perf_counter() - t0:.1f} s (fp32 + int8, in a subprocess, once)"

    texts = make_texts(args.n, args.words)
    print(
        f"{args.n} texts x {args.words} words, batch {args.batch}, {available_cpus()} CPU(s); "
        f"ONNX export: {export_note}"
    )
    rows = []

    t0 = time.perf_counter()
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    onnx_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    fp32 = OnnxEmbedder(model, fp32_file, batch_size=args.batch)
    fp32_load = time.perf_counter() - t0
    pieces = [len(e.ids) for e in fp32._tok.encode_batch(texts)]
    print(f"word pieces per text (incl. [CLS]/[SEP], cut at 256): mean {np.mean(pieces):.0f}, max {max(pieces)}")
    rate, v_fp32 = _rate(fp32.embed, texts, args.batch)
    rows.append(["onnx fp32", onnx_import, fp32_load, rate])

    t0 = time.perf_counter()
    int8 = OnnxEmbedder(model, int8_file, batch_size=args.batch)
    int8_load = time.perf_counter() - t0
    rate, v_int8 = _rate(int8.embed, texts, args.batch)
    rows.append(["onnx int8", 0.0, int8_load, rate])
    torch_free = "torch" not in sys.modules

    mixed_line = ""
    if not args.no_mixed:
        mixed = make_texts(max(args.n // 2, args.batch), (10, 400), seed=1)
        random.Random(2).shuffle(mixed)
        unsorted = OnnxEmbedder(model, fp32_file, batch_size=args.batch, sort_by_length=False)
        r_unsorted, v_unsorted = _rate(unsorted.embed, mixed, args.batch)
        r_sorted, v_sorted = _rate(fp32.embed, mixed, args.batch)
        diff = float(np.abs(v_sorted - v_unsorted).max())
        mixed_line = (
            f"onnx fp32, {len(mixed)} mixed-length texts (10-400 words): sorted by length {r_sorted:.1f}/s, "
            f"unsorted {r_unsorted:.1f}/s (x{r_sorted / r_unsorted:.2f}); max |difference| {diff:.1e}"
        )

    t0 = time.perf_counter()
    import sentence_transformers  # noqa: F401  (and torch, transformers)

    torch_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    st = SentenceTransformerEmbedder(model, batch_size=args.batch)
    torch_load = time.perf_counter() - t0
    rate, v_torch = _rate(st.embed, texts, args.batch)
    rows.insert(0, ["torch (sentence-transformers)", torch_import, torch_load, rate])

    base = rows[0][3]
    cos_to_torch = {"onnx fp32": _cos(v_fp32, v_torch), "onnx int8": _cos(v_int8, v_torch)}
    head = f"{'backend':31s} {'import s':>8s} {'load s':>7s} {'chunks/s':>9s} {'x torch':>8s}  "
    head += "cosine to torch mean / min"
    print()
    print(head)
    print("-" * len(head))
    for name, imp, load, rate in rows:
        cos = cos_to_torch.get(name, "")
        imp_s = f"{imp:8.2f}" if imp else f"{'(same)':>8s}"
        print(f"{name:31s} {imp_s} {load:7.2f} {rate:9.1f} {rate / base:8.2f}  {cos}")
    print()
    print(f"int8 vs fp32 cosine mean / min: {_cos(v_int8, v_fp32)}")
    print(f"onnx fp32 vs torch max |difference|: {np.abs(v_fp32 - v_torch).max():.1e}")
    print(f"torch imported during the ONNX runs: {'no' if torch_free else 'YES'}")
    if mixed_line:
        print(mixed_line)
    sizes = [Path(f).stat().st_size / 1e6 for f in (fp32_file, int8_file)]
    print(f"ONNX files: {sizes[0]:.1f} MB fp32, {sizes[1]:.1f} MB int8")

    config = json.loads((model.path / "config.json").read_text())
    per_text = encoder_flops(config, pieces) / len(pieces)
    ceiling = gemm_ceiling(args.batch * int(np.mean(pieces)), config["hidden_size"], config["intermediate_size"])
    print()
    print(f"compute: {per_text / 1e9:.2f} GFLOP of matrix products per text; fp32 GEMM ceiling {ceiling:.0f} GFLOP/s")
    for name, _, _, rate in rows:
        gflops = rate * per_text / 1e9
        note = " (integer arithmetic: the fp32 ceiling does not bound it)" if "int8" in name else ""
        print(f"  {name:31s} {gflops:6.0f} GFLOP/s  {gflops / ceiling:5.0%} of the ceiling{note}")
    need = 2 * base * per_text / 1e9
    print(f"  2x torch would need {need:.0f} GFLOP/s ({need / ceiling:.0%} of the ceiling)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
