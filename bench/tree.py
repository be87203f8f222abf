"""RAPTOR tree build time for growing numbers of chunks, so the growth is visible.

    python -m bench.tree [--sizes 1000,4000,16000] [--reducer pca|umap] [--sample 256]

The chunks are generated: pseudo-English texts of 100-180 words (bench.embed.make_texts). Embedding
16,000 of them would take longer than the tree, so only `--sample` texts are embedded and every
chunk's vector is a sampled vector plus Gaussian noise (renormalised; cosine to its base about
0.85), which gives clusters of near-duplicates around real embeddings. Summaries are real: the
extractive summariser on the chunk texts, embedded by the configured model (THOTH_EMBED_BACKEND;
onnx recommended). Nothing is written to a database: this times `ingest.tree.build_nodes`.

Printed per size: layer sizes, seconds split into clustering, summarising and embedding summaries,
and the growth against the previous size (linear growth = the size ratio).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.embed import make_texts
from ingest.tree import TreeParams, build_nodes
from thoth.config import Settings
from thoth.embed import get_embedder, get_tokenizer
from thoth.retrieval.summarise import ExtractiveSummariser


class _Timed:
    """Wraps a callable and adds up the seconds spent in it."""

    def __init__(self, fn):
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, *args):
        started = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            self.seconds += time.perf_counter() - started


def synthetic_vectors(base: np.ndarray, n: int, noise: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), n)
    x = base[picks] + noise * rng.normal(size=(n, base.shape[1])).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tree", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000", help="comma-separated chunk counts")
    parser.add_argument(
        "--reducer", default=None, help="pca, umap, or pca,umap to time both per size (default: THOTH_TREE_REDUCER)"
    )
    parser.add_argument("--sample", type=int, default=256, help="texts actually embedded for leaf vectors")
    parser.add_argument("--noise", type=float, default=0.035, help="per-dimension noise added to sampled vectors")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    settings = Settings.from_env()
    embedder = get_embedder(settings)
    tokenizer = get_tokenizer(settings)
    params = TreeParams.from_settings(settings)
    reducers = [r.strip() for r in (args.reducer or params.reducer).split(",") if r.strip()]
    if set(reducers) - {"pca", "umap"}:
        parser.error(f"--reducer takes pca and/or umap, got {args.reducer!r}")
    texts_all = make_texts(max(sizes), (100, 180), seed=1)
    base = embedder.embed(texts_all[: args.sample])
    print(
        f"model {embedder.model_name} ({settings.embed_backend}), reducer {'/'.join(reducers)}, "
        f"summariser input limit {params.cluster_tokens} word pieces, summaries {settings.tree_summary_tokens}; "
        f"leaf vectors: {args.sample} embedded texts + noise {args.noise}"
    )
    print(
        f"{'reducer':<7} {'chunks':>7} {'layers':<30} {'nodes':>6} {'cluster':>8} {'summ.':>7} {'embed':>7} "
        f"{'total':>8} growth"
    )
    previous: dict[str, tuple[int, float]] = {}
    for n, reducer in ((n, r) for n in sizes for r in reducers):
        params = TreeParams(reducer=reducer, cluster_tokens=params.cluster_tokens)
        vectors = synthetic_vectors(base, n, args.noise)
        texts = texts_all[:n]
        ids = [f"c{i:06d}" for i in range(n)]
        summariser = ExtractiveSummariser(tokenizer, min(settings.tree_summary_tokens, tokenizer.max_tokens))
        summarise = _Timed(summariser.summarise)
        summariser.summarise = summarise  # type: ignore[method-assign]
        embed = _Timed(embedder.embed)
        started = time.perf_counter()
        rows, layers = build_nodes("bench", ids, texts, vectors, embed, tokenizer, summariser, params)
        total = time.perf_counter() - started
        cluster = total - summarise.seconds - embed.seconds
        growth = ""
        if reducer in previous:
            last_n, last_total = previous[reducer]
            growth = f"x{total / last_total:.2f} (lin x{n / last_n:.1f})"
        print(
            f"{reducer:<7} {n:>7} {' > '.join(map(str, layers)):<30} {len(rows):>6} {cluster:>7.1f}s "
            f"{summarise.seconds:>6.1f}s {embed.seconds:>6.1f}s {total:>7.1f}s {growth}",
            flush=True,
        )
        previous[reducer] = (n, total)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
