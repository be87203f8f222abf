"""RAPTOR tree build time for growing numbers of chunks, and in-place updates against a fresh build.

    python -m bench.tree [--sizes 1000,4000,16000] [--reducer pca|umap] [--sample 256]
    python -m bench.tree --incremental [--base 3000] [--add 30] [--sample 256]
    python -m bench.tree --events DB_URI --dataset ID [--rebuild]

The chunks are generated: pseudo-English texts of 100-180 words (bench.embed.make_texts). Embedding
16,000 of them would take longer than the tree, so only `--sample` texts are embedded and every
chunk's vector is a sampled vector plus Gaussian noise (renormalised; cosine to its base about
0.85), which gives clusters of near-duplicates around real embeddings. Summaries are real: the
extractive summariser on the chunk texts, embedded by the configured model (THOTH_EMBED_PROVIDER;
onnx recommended). Nothing is written to a database: this times `thoth.writes.tree.tree_rows`.

Printed per size: layer sizes, seconds split into clustering, summarising and embedding summaries,
and the growth against the previous size (linear growth = the size ratio).

`--incremental`: a tree built on `--base` chunks gets `--add` more inserted in place
(thoth.writes.tree.tree_rows), which is compared with a fresh build on all of them; then `--add`
chunks picked at random are deleted in place from the updated tree (timed against the same fresh
build), and the inserted ones are deleted again (the tree must equal the first build). Printed: seconds (and the ratio
in-place / fresh build), nodes rewritten, and level-1 cluster quality over the same chunks: mean
cosine of a chunk to its cluster's centroid, and the silhouette (cosine) of the level-1 partition.

`--events DB_URI --dataset ID`: end to end through the store, on a copy of an existing index
(e.g. the one bench.quality builds): one new Markdown document ingested as a bucket event does
(`Writer.write_keys`, then the tree updated in place), then deleted the same way; each timed
whole (parse, embed, write, tree). `--rebuild` also times a full rebuild of the same tree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.embed import make_texts
from thoth.config import Settings
from thoth.embed import get_tokenizer
from thoth.embedders import get_embedder
from thoth.summarise import ExtractiveSummariser
from thoth.writes.clustering import TreeParams
from thoth.writes.tree import tree_rows


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


def level1_quality(rows: list[dict], ids: list[str], vectors: np.ndarray) -> tuple[float, float]:
    """(mean cosine of a chunk to its level-1 centroid, silhouette of the level-1 partition, cosine)."""
    from sklearn.metrics import silhouette_score

    index = {c: i for i, c in enumerate(ids)}
    labels = np.zeros(len(ids), dtype=np.int64)
    cosines = []
    for n, row in enumerate(r for r in rows if r.level == 1):
        members = [index[c] for c in row.children]
        labels[members] = n
        centre = vectors[members].mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-12)
        cosines += (vectors[members] @ centre).tolist()
    silhouette = silhouette_score(vectors, labels, metric="cosine") if len(set(labels.tolist())) > 1 else 0.0
    return float(np.mean(cosines)), float(silhouette)


def incremental(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    embedder = get_embedder(settings)
    tokenizer = get_tokenizer(settings)
    params = TreeParams.from_settings(settings)
    n, m = args.base, args.add
    texts = make_texts(n + m, (100, 180), seed=1)
    base = embedder.embed(texts[: args.sample])
    vectors = synthetic_vectors(base, n + m, args.noise)
    ids = [f"c{i:06d}" for i in range(n + m)]
    summariser = ExtractiveSummariser(tokenizer, min(settings.tree_summary_tokens, tokenizer.max_tokens))
    print(
        f"model {embedder.model_name} ({settings.embed_backend}), reducer {params.reducer}; {n} chunks, then "
        f"{m} inserted in place ({m / n:.1%}) against a fresh build on {n + m}, then {m} deleted in place"
    )

    def timed(fn):
        started = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - started

    (rows, _), t_base = timed(
        lambda: tree_rows("bench", [], ids[:n], texts[:n], vectors[:n], embedder.embed, tokenizer, summariser, params)
    )
    (fresh, _), t_fresh = timed(
        lambda: tree_rows("bench", [], ids, texts, vectors, embedder.embed, tokenizer, summariser, params)
    )
    (updated, stats), t_insert = timed(
        lambda: tree_rows("bench", rows, ids, texts, vectors, embedder.embed, tokenizer, summariser, params)
    )
    rng = np.random.default_rng(5)
    keep = np.sort(rng.choice(n + m, n, replace=False))  # m chunks out, anywhere in the tree
    kept_ids, kept_texts = [ids[i] for i in keep], [texts[i] for i in keep]
    (after, dstats), t_delete = timed(
        lambda: tree_rows(
            "bench", updated, kept_ids, kept_texts, vectors[keep], embedder.embed, tokenizer, summariser, params
        )
    )
    (back, _), t_back = timed(
        lambda: tree_rows(
            "bench", updated, ids[:n], texts[:n], vectors[:n], embedder.embed, tokenizer, summariser, params
        )
    )
    same = {(r.node_id, r.text) for r in back} == {(r.node_id, r.text) for r in rows}
    header = f"{'tree':<26} {'nodes':>6} {'rewritten':>9} {'seconds':>8} {'vs fresh':>8} {'mean cos':>8}"
    print(f"{header} {'silhouette':>10}")

    def line(name, nodes, seconds, fresh_seconds, rewritten, chunk_ids, chunk_vectors):
        cos, sil = level1_quality(nodes, chunk_ids, chunk_vectors)
        ratio = f"{seconds / fresh_seconds:>7.1%}" if fresh_seconds else ""
        print(
            f"{name:<26} {len(nodes):>6} {rewritten:>9} {seconds:>7.1f}s {ratio:>8} {cos:>8.3f} {sil:>10.3f}",
            flush=True,
        )

    line(f"build on {n}", rows, t_base, 0, len(rows), ids[:n], vectors[:n])
    line(f"fresh build on {n + m}", fresh, t_fresh, 0, len(fresh), ids, vectors)
    line(f"{n} + {m} in place", updated, t_insert, t_fresh, stats.rewritten, ids, vectors)
    line(f"then -{m} (random) in place", after, t_delete, t_fresh, dstats.rewritten, kept_ids, vectors[keep])
    print(f"removing the {m} inserted chunks again: {t_back:.1f}s; the tree equals the build on {n}: {same}")
    return 0


EVENT_DOC = """# Working across time zones

Team members spread over many time zones agree on a few overlap hours for meetings, record every
meeting for those who sleep through it, and write decisions down in the handbook so nobody has to
be awake to learn them. Managers check that on-call rotations follow the sun.
"""


def events(db_uri: str, dataset: str, rebuild: bool) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    from thoth.records import Source
    from thoth.writes.source_files import SourceObject
    from thoth.writes.writer import Writer

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "db"
        shutil.copytree(db_uri, copy)
        settings = Settings.from_env(db_uri=str(copy))
        ingestor = Writer(settings)
        source = ingestor.store.first(Source, {"source_id": dataset})
        if source is None:
            raise SystemExit(f"--dataset {dataset!r} is not in {db_uri}")
        ingestor.embedder.embed(["warm up"])  # the model load is a server's start, not an event's cost
        data = EVENT_DOC.encode()
        obj = SourceObject(key="bench/time-zones.md", uri="bench/time-zones.md", size=len(data), read=lambda: data)
        print(f"{dataset}: {source.chunk_count} chunks; one document in and out as bucket events do")
        started = time.perf_counter()
        ingestor.write_keys(dataset, [obj], {obj.key}, name=source.name, uri=source.uri)
        tree = ingestor.update_tree(dataset, policy="event")
        print(f"  insert event: {time.perf_counter() - started:.1f}s; {tree.render() if tree else 'no tree'}")
        started = time.perf_counter()
        ingestor.write_keys(dataset, [], {obj.key}, name=source.name, uri=source.uri)
        tree = ingestor.update_tree(dataset, policy="event")
        print(f"  delete event: {time.perf_counter() - started:.1f}s; {tree.render() if tree else 'no tree'}")
        if rebuild:
            started = time.perf_counter()
            tree = ingestor.update_tree(dataset, force=True)
            print(f"  full rebuild: {time.perf_counter() - started:.1f}s; {tree.render() if tree else 'no tree'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tree", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000", help="comma-separated chunk counts")
    parser.add_argument(
        "--reducer", default=None, help="pca, umap, or pca,umap to time both per size (default: TreeParams.reducer)"
    )
    parser.add_argument("--sample", type=int, default=256, help="texts actually embedded for leaf vectors")
    parser.add_argument("--noise", type=float, default=0.035, help="per-dimension noise added to sampled vectors")
    parser.add_argument("--incremental", action="store_true", help="in-place insert and delete against a fresh build")
    parser.add_argument("--base", type=int, default=3000, help="--incremental: chunks the first tree is built on")
    parser.add_argument("--add", type=int, default=30, help="--incremental: chunks inserted (then deleted) in place")
    parser.add_argument("--events", metavar="DB_URI", help="time bucket events end to end on a copy of this index")
    parser.add_argument("--dataset", help="--events: the dataset (source id) to change")
    parser.add_argument("--rebuild", action="store_true", help="--events: also time a full rebuild")
    args = parser.parse_args(argv)
    if args.events:
        if not args.dataset:
            parser.error("--events needs --dataset")
        return events(args.events, args.dataset, args.rebuild)
    if args.incremental:
        return incremental(args)
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
        rows, stats = tree_rows("bench", [], ids, texts, vectors, embed, tokenizer, summariser, params)
        layers = stats.layer_sizes
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
