"""RAPTOR trees: per source, cluster the chunks, summarise each cluster, embed, repeat.

One layer (Sarthi et al., 2024, with the changes said here):
1. reduce the vectors' dimension: PCA by default (`THOTH_TREE_REDUCER=umap` for the paper's UMAP;
   docs/raptor.md has the measurements behind the default);
2. Gaussian-mixture clustering, the number of clusters chosen by BIC: globally, then locally
   inside each global cluster. Each point goes to its most likely cluster only (a strict tree: every
   node has one parent, which is what lets a change be applied along one path; the paper's soft
   membership is what `threshold` still governs inside `cluster_layer`), and a cluster of fewer
   than `min_children` points merges into its nearest cluster with room;
3. a cluster larger than the summariser's input limit (`cluster_tokens` word pieces) is clustered
   again, with at least as many clusters as the limit needs;
4. summarise each cluster, embed the summaries: they are the next layer.
Layers stop when one is down to a single node (the root); a layer that cannot be reduced further
gets one root over it all, so every tree has exactly one root.

The BIC search fits on a fixed-size sample of the points and stops once BIC has not improved for a
few cluster counts, so a layer costs about linear time in its size. Everything is seeded: the same
chunks give the same tree. Node ids are a hash of (source, level, children).

A source's tree changes only when its chunks (or the tree's parameters) changed: the chunks'
fingerprint is stored with the source's tree pointer. A tree built the same way is updated in place
(thoth/writes/tree_update.py) and records its drift, the chunks inserted and deleted since its last full
build over the chunks it was built on; past `THOTH_TREE_DRIFT_MAX` a batch run rebuilds it. Either
way the new tree replaces the old one in one pointer switch (see `Store.replace_tree`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from thoth.config import Settings
from thoth.embed import Embedder, Tokenizer
from thoth.records import Chunk, Source, TreeNode, TreePointer
from thoth.retrieval.summarise import Summariser
from thoth.store import Store
from thoth.store.db import NODE_COLUMNS
from thoth.writes.tree_update import Layer, UpdateStats, merge_small, update_nodes

log = logging.getLogger("thoth.tree")


@dataclass(frozen=True)
class TreeParams:
    reducer: str = "pca"  # pca | umap
    dims: int = 10  # reduced dimension (the paper's 10)
    cluster_tokens: int = 3500  # the summariser's input limit (the paper's max cluster length)
    threshold: float = 0.1  # soft membership probability (the paper's 0.1)
    max_clusters: int = 50  # largest cluster count BIC may pick in one step (the paper's 50)
    split_clusters: int = 8  # fewest clusters an oversize group is split into at once, at most
    bic_sample: int = 1500  # points the BIC search fits on
    bic_patience: int = 3  # cluster counts tried past the best BIC so far
    max_levels: int = 10
    seed: int = 224  # the paper's random state
    min_children: int = 2  # a smaller cluster merges into its nearest one with room

    @classmethod
    def from_settings(cls, settings: Settings) -> TreeParams:
        return cls(reducer=settings.tree_reducer, cluster_tokens=settings.tree_cluster_tokens)


@dataclass
class TreeResult:
    source_id: str
    built: bool  # False: the tree was up to date, marked stale, or the source has no chunks
    nodes: int = 0
    levels: int = 0
    chunks: int = 0
    seconds: float = 0.0
    summariser: str = ""
    layer_sizes: list[int] = field(default_factory=list)
    mode: str = ""  # full | incremental (when built); stale (marked stale, not built)
    inserted: int = 0  # incremental: chunks in and out, nodes summarised again and kept as they were
    deleted: int = 0
    rewritten: int = 0
    kept: int = 0
    drift: float = 0.0  # share of the tree changed in place since its last full build
    reason: str = ""  # why a full build, or why stale

    def render(self) -> str:
        if self.mode == "stale":
            return f"tree {self.source_id}: marked stale ({self.reason}); the next run rebuilds it"
        if not self.built:
            return f"tree {self.source_id}: up to date"
        how = (
            f"updated in place (+{self.inserted} -{self.deleted} chunks, {self.rewritten} nodes rewritten, "
            f"{self.kept} kept; drift {self.drift:.1%})"
            if self.mode == "incremental"
            else f"built ({self.reason})"
        )
        return (
            f"tree {self.source_id}: {how}: {self.nodes} nodes in {self.levels} levels over {self.chunks} chunks "
            f"(layers {' > '.join(map(str, self.layer_sizes))}) by {self.summariser} in {self.seconds:.1f}s"
        )


# -- clustering ---------------------------------------------------------------------------------------


def _reduce(x: np.ndarray, dims: int, params: TreeParams, neighbours: int) -> np.ndarray:
    dims = max(1, min(dims, x.shape[0] - 2, x.shape[1]))
    if params.reducer == "umap":
        try:
            import umap
        except ImportError as exc:
            raise RuntimeError("THOTH_TREE_REDUCER=umap needs umap-learn: pip install 'thoth[umap]'") from exc
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # n_jobs is 1 with a random_state; it says so
            reducer = umap.UMAP(
                n_neighbors=max(2, min(neighbours, x.shape[0] - 1)),
                n_components=dims,
                metric="cosine",
                random_state=params.seed,
            )
            return np.asarray(reducer.fit_transform(x), dtype=np.float64)
    from sklearn.decomposition import PCA

    return PCA(n_components=dims, random_state=params.seed, svd_solver="full").fit_transform(x.astype(np.float64))


def _gmm(k: int, params: TreeParams):
    from sklearn.mixture import GaussianMixture

    return GaussianMixture(
        n_components=k, random_state=params.seed, reg_covar=1e-4, max_iter=100, init_params="k-means++"
    )


def _best_model(z: np.ndarray, k_min: int, k_max: int, params: TreeParams) -> Any:
    """The mixture with the lowest BIC, searched upwards from k_min with early stopping; None for one cluster.

    Fitted on a fixed-size sample of the points (the model then scores all of them), so one search
    costs the same for a hundred points or a million.
    """
    sample = z
    if len(z) > params.bic_sample:
        rng = np.random.default_rng(params.seed)
        sample = z[np.sort(rng.choice(len(z), params.bic_sample, replace=False))]
    k_max = max(k_min, min(k_max, len(sample) - 1))
    best, best_k, best_bic, since = None, k_min, math.inf, 0
    for k in range(k_min, k_max + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning on degenerate samples: BIC still ranks it
            model = _gmm(k, params).fit(sample)
        bic = model.bic(sample)
        if bic < best_bic:
            best, best_k, best_bic, since = model, k, bic, 0
        else:
            since += 1
            if since >= params.bic_patience:
                break
    return None if best_k == 1 else best


def _split_by_order(x: np.ndarray, tokens: np.ndarray, limit: int) -> list[np.ndarray]:
    """Last resort for a group GMM will not split: cut it along its main direction into runs under the limit."""
    centred = x - x.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][0] if len(x) > 1 else np.zeros(x.shape[1])
    order = np.lexsort((np.arange(len(x)), centred @ direction))
    groups: list[np.ndarray] = []
    current: list[int] = []
    used = 0
    for i in order:
        if current and used + tokens[i] > limit:
            groups.append(np.array(sorted(current)))
            current, used = [], 0
        current.append(int(i))
        used += int(tokens[i])
    if current:
        groups.append(np.array(sorted(current)))
    return groups


def _cluster(
    x: np.ndarray, tokens: np.ndarray, params: TreeParams, depth: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Soft clusters of the rows of `x`: (member indices, which members belong here most) per cluster."""
    n = len(x)
    total = int(tokens.sum())
    oversize = total > params.cluster_tokens
    everyone = (np.arange(n), np.ones(n, dtype=bool))
    if n == 1 or (depth != 1 and not oversize):
        return [everyone]  # at the top: the whole layer fits one summary, so it gets one (the root)
    if n <= 3:  # too few points to fit a mixture
        if not oversize:
            return [everyone]
        return [(g, np.ones(len(g), dtype=bool)) for g in _split_by_order(x, tokens, params.cluster_tokens)]
    neighbours = int(math.sqrt(n - 1)) if depth == 0 else 10  # the paper: global sqrt(n), local 10
    z = _reduce(x, params.dims, params, neighbours)
    # An oversize group must split; by at most `split_clusters` at once (deeper steps split the rest),
    # since a mixture of hundreds of components on thousands of points is what makes clustering slow.
    split = min(max(2, math.ceil(total / params.cluster_tokens)), params.split_clusters)
    k_min = split if oversize and depth >= 1 else 1
    model = _best_model(z, min(k_min, n - 1), min(params.max_clusters, n - 1), params)
    if model is None:
        if depth >= 1 and oversize:  # BIC will not split it: cut it along its main direction
            return [(g, np.ones(len(g), dtype=bool)) for g in _split_by_order(x, tokens, params.cluster_tokens)]
        return [everyone] if depth >= 1 else _cluster(x, tokens, params, depth + 1)
    probs = model.predict_proba(z)
    best = probs.argmax(axis=1)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for c in range(probs.shape[1]):
        hard = np.flatnonzero(best == c)
        if not len(hard):
            continue
        if depth == 0 or tokens[hard].sum() > params.cluster_tokens:
            # Split further on hard members only: soft members at every step would compound copies.
            if len(hard) == n:  # no progress: cut along the main direction instead
                pieces = _split_by_order(x, tokens, params.cluster_tokens)
                out += [(p, np.ones(len(p), dtype=bool)) for p in pieces]
                continue
            out += [(hard[sub], primary) for sub, primary in _cluster(x[hard], tokens[hard], params, depth + 1)]
            continue
        # A final cluster: its hard members, then the soft ones (probability >= threshold) while they fit.
        used = int(tokens[hard].sum())
        extra = []
        for i in sorted(np.flatnonzero((probs[:, c] >= params.threshold) & (best != c)), key=lambda i: -probs[i, c]):
            if used + tokens[i] <= params.cluster_tokens:
                extra.append(int(i))
                used += int(tokens[i])
        members = np.concatenate([hard, np.array(extra, dtype=hard.dtype)])
        out.append((members, np.arange(len(members)) < len(hard)))
    return out


def cluster_layer(vectors: np.ndarray, tokens: np.ndarray, params: TreeParams) -> list[tuple[np.ndarray, np.ndarray]]:
    """Clusters of one layer, members sorted, duplicates (same member set) merged."""
    import sklearn.decomposition  # noqa: F401  (loaded before the BLAS limit below, so that it applies)
    import sklearn.mixture  # noqa: F401
    from threadpoolctl import threadpool_limits

    # One BLAS and OpenMP thread: the mixtures are small matrices, and threads spinning on them on a busy
    # 2-core machine made clustering 100 times slower. (Embedding, outside this, keeps its threads.)
    with threadpool_limits(limits=1):
        clusters = _cluster(vectors, tokens, params)
    seen: dict[tuple[int, ...], int] = {}
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for members, primary in clusters:
        order = np.argsort(members, kind="stable")
        members, primary = members[order], primary[order]
        key = tuple(members.tolist())
        if key in seen:
            prev = out[seen[key]]
            out[seen[key]] = (prev[0], prev[1] | primary)
        else:
            seen[key] = len(out)
            out.append((members, primary))
    return out


# -- building ---------------------------------------------------------------------------------------------


def node_id(source_id: str, level: int, children: list[str]) -> str:
    return hashlib.sha256("\x1f".join([source_id, str(level), *children]).encode()).hexdigest()[:32]


def fingerprint(chunk_ids: list[str], params: TreeParams, summariser: str, model: str) -> str:
    digest = hashlib.sha256(f"{sorted(asdict(params).items())}|{summariser}|{model}".encode())
    for chunk_id in sorted(chunk_ids):
        digest.update(chunk_id.encode())
    return digest.hexdigest()


def hard_clusters(
    vectors: np.ndarray, tokens: np.ndarray, params: TreeParams, *, merge: bool = True
) -> list[list[int]]:
    """One layer's clusters as a strict partition: each point in its most likely cluster only, and
    clusters of fewer than `min_children` merged into their nearest cluster with room."""
    if len(vectors) == 0:
        return []
    groups = [members[primary].tolist() for members, primary in cluster_layer(vectors, tokens, params)]
    seen: set[int] = set()
    parts: list[list[int]] = []
    for group in groups:  # cluster_layer can name a point primary twice (merged duplicate sets): keep the first
        mine = [int(i) for i in group if i not in seen]
        seen.update(mine)
        if mine:
            parts.append(mine)
    if not merge:
        return parts
    merged, _ = merge_small(parts, vectors, lambda g: int(tokens[g].sum()), params.cluster_tokens, params.min_children)
    return merged


def _grow(
    source_id: str,
    below: Layer,
    level: int,
    rows: list[dict],
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
) -> list[int]:
    """Build the levels above `below` (at `level`), appending rows; the sizes of the new layers.

    The last len(below.ids) rows are `below`'s own when level >= 1: their `parent` is set here.
    The top is always one node (the root): a layer that will not reduce further gets one over it.
    """
    sizes: list[int] = []
    ids, vectors, leaves = list(below.ids), below.vectors, below.leaves
    everyone = list(range(len(ids)))
    texts, tokens = below.text(everyone), below.tokens(everyone)
    while len(ids) > 1 or (level == 0 and ids):
        groups = hard_clusters(vectors, tokens, params) if len(ids) > 1 else [[0]]
        if len(groups) >= len(ids) or level + 1 >= params.max_levels:
            groups = [list(range(len(ids)))]  # will not reduce: one root over it all
        level += 1
        summaries = [summariser.summarise([texts[i] for i in g]) for g in groups]
        summary_vectors = np.asarray(embed(summaries), dtype=np.float32)
        new_ids = [node_id(source_id, level, [ids[i] for i in g]) for g in groups]
        if level > 1:  # the layer below is made of summary nodes: set their parent
            offset = len(rows) - len(ids)
            for c, g in enumerate(groups):
                for i in g:
                    rows[offset + i]["parent"] = new_ids[c]
        counts = [int(leaves[g].sum()) for g in groups]
        for c, g in enumerate(groups):
            rows.append(
                {
                    "node_id": new_ids[c],
                    "source_id": source_id,
                    "level": level,
                    "text": summaries[c],
                    "vector": summary_vectors[c],
                    "children": [ids[i] for i in g],
                    "parent": None,
                    "leaf_count": counts[c],
                    "summariser": summariser.name,
                }
            )
        ids, texts, vectors = new_ids, summaries, summary_vectors
        tokens = np.asarray(tokenizer.count(summaries), dtype=np.int64)
        leaves = np.asarray(counts, dtype=np.int64)
        sizes.append(len(ids))
    return sizes


def _chunk_layer(texts: list[str], vectors: np.ndarray, ids: list[str], tokenizer: Tokenizer) -> Layer:
    """The chunks as a layer; token counts on demand (an update needs only a few)."""
    counted: dict[int, int] = {}

    def tokens(idx: list[int]) -> np.ndarray:
        missing = [i for i in idx if i not in counted]
        if missing:
            counted.update(zip(missing, tokenizer.count([texts[i] for i in missing]), strict=True))
        return np.asarray([counted[i] for i in idx], dtype=np.int64)

    return Layer(
        ids=list(ids),
        vectors=np.asarray(vectors, dtype=np.float32),
        leaves=np.ones(len(ids), dtype=np.int64),
        text=lambda idx: [texts[i] for i in idx],
        tokens=tokens,
    )


def build_nodes(
    source_id: str,
    chunk_ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
) -> tuple[list[dict], list[int]]:
    """The summary nodes over these chunks (in order), as rows without `tree_version`; and layer sizes."""
    rows: list[dict] = []
    layer = _chunk_layer(list(texts), vectors, chunk_ids, tokenizer)
    sizes = [len(chunk_ids)] + _grow(source_id, layer, 0, rows, embed, tokenizer, summariser, params)
    return rows, sizes


def update_rows(
    source_id: str,
    old_rows: list[dict],
    chunk_ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
) -> tuple[list[dict], UpdateStats]:
    """The rows of the tree `old_rows` updated in place to cover exactly these chunks (thoth/writes/tree_update.py)."""
    return update_nodes(
        source_id,
        old_rows,
        _chunk_layer(list(texts), vectors, chunk_ids, tokenizer),
        embed,
        tokenizer,
        summariser,
        params,
        cluster=lambda v, t: hard_clusters(v, t, params),
        grow=lambda below, level, rows: _grow(source_id, below, level, rows, embed, tokenizer, summariser, params),
        node_id=node_id,
    )


def _read_chunks(store: Store, source_id: str) -> tuple[list[str], list[str], np.ndarray]:
    """The source's chunks in reading order (key, then position): ids, texts and vectors."""
    keyed: list[tuple[str, int, str, str]] = []
    vectors: list[np.ndarray] = []
    columns = ["chunk_id", "key", "chunk_index", "text", "vector"]
    for batch in store.scan_of(Chunk, columns, {"source_id": source_id}):
        data = batch.to_pydict()
        width = batch.schema.field("vector").type.list_size
        flat = batch.column("vector").values.to_numpy(zero_copy_only=False)
        block = flat.reshape(-1, width)
        for row in range(batch.num_rows):
            keyed.append((data["key"][row], data["chunk_index"][row], data["chunk_id"][row], data["text"][row]))
            vectors.append(block[row])
    order = sorted(range(len(keyed)), key=lambda i: keyed[i][:3])
    ids = [keyed[i][2] for i in order]
    texts = [keyed[i][3] for i in order]
    matrix = np.stack([vectors[i] for i in order]) if order else np.zeros((0, 0), dtype=np.float32)
    return ids, texts, matrix


def _chunk_ids(store: Store, source_id: str) -> list[str]:
    return [
        cid
        for batch in store.scan_of(Chunk, ["chunk_id"], {"source_id": source_id})
        for cid in batch.column("chunk_id").to_pylist()
    ]


POLICIES = ("run", "event", "document")


def config_print(params: TreeParams, summariser: str, model: str) -> str:
    """What a tree was built with: an incremental update only continues a tree built the same way."""
    return hashlib.sha256(f"{sorted(asdict(params).items())}|{summariser}|{model}".encode()).hexdigest()[:16]


def mark_stale(store: Store, source_id: str, reason: str) -> bool:
    """Keep readers off a tree that no longer matches its chunks (tree retrieval skips a stale tree);
    the next run rebuilds it. False when the source has no tree."""
    pointer = store.tree_pointer(source_id)
    if not pointer:
        return False
    if pointer.stale != reason:
        store.set_tree_pointer(source_id, replace(pointer, stale=reason))
    return True


def _current_rows(store: Store, source_id: str, version: str) -> list[dict]:
    match = {"source_id": source_id, "tree_version": version}
    rows = [row for batch in store.scan_of(TreeNode, NODE_COLUMNS + ["vector"], match) for row in batch.to_pylist()]
    return sorted(rows, key=lambda r: (r["level"], r["node_id"]))


def build_tree(
    store: Store,
    embedder: Callable[[], Embedder],
    tokenizer: Tokenizer,
    summariser: Summariser,
    source_id: str,
    params: TreeParams,
    model_name: str,
    *,
    force: bool = False,
    policy: str = "run",
    drift_max: float = 0.25,
) -> TreeResult:
    """Bring the tree of one source in line with its chunks; returns what was done.

    A tree built with the same parameters, summariser and model is updated in place; otherwise, or
    with `force`, it is built from scratch. `policy` says who asks:
    - run (the batch job): in place while the tree's drift stays within `drift_max`, else a full build;
    - event (a bucket event): in place only; a tree that cannot be updated in place is marked stale
      (readers skip it) for the next run to rebuild, and a source without a tree stays without one;
    - document (ingest_document): in place; a full build when there is no tree to update.
    Either way the new tree is written under a new version and readers switch to it in one write.
    `embedder` is called only when work is needed, so an up-to-date tree costs no model load.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    started = time.perf_counter()
    chunk_ids = _chunk_ids(store, source_id) if store.has(Chunk) else []
    written_by = f"{summariser.name}/{getattr(summariser, 'budget', '')}"  # a new summary budget: a new tree
    print_ = fingerprint(chunk_ids, params, written_by, model_name)
    config = config_print(params, written_by, model_name)
    current = store.tree_pointer(source_id)
    if not force and current and current.fingerprint == print_ and not current.stale:
        return TreeResult(source_id, built=False, chunks=len(chunk_ids))
    if not chunk_ids:
        store.drop_tree(source_id)
        _set_has_tree(store, source_id, False)
        return TreeResult(source_id, built=False)
    usable = bool(current and current.config == config and current.nodes and not current.stale)
    if policy == "event" and not usable:
        if current and mark_stale(store, source_id, "changed on the event path; needs a full build"):
            return TreeResult(source_id, built=False, mode="stale", reason=current.stale or "not updatable")
        return TreeResult(source_id, built=False, chunks=len(chunk_ids))

    model = embedder()
    store.ensure_tables(model.dim)
    ids, texts, vectors = _read_chunks(store, source_id)
    result = TreeResult(source_id, built=True, chunks=len(ids), summariser=summariser.name)
    old = _current_rows(store, source_id, current.version) if usable and not force and current else []
    build_chunks = current.build_chunks if current else 0
    drift_chunks = current.drift_chunks if current else 0
    if old:
        before = {c for r in old if r["level"] == 1 for c in r["children"]}
        change = len(before.symmetric_difference(ids))
        drift = (drift_chunks + change) / max(1, build_chunks)
        if policy == "run" and drift > drift_max:
            old, result.reason = [], f"drift {drift:.1%} > {drift_max:.0%}"
    else:
        result.reason = "forced" if force else ("no tree" if not current else "built differently")
    if old:
        rows, stats = update_rows(source_id, old, ids, texts, vectors, model.embed, tokenizer, summariser, params)
        sizes = stats.layer_sizes
        drift_chunks += stats.inserted + stats.deleted
        result.mode, result.inserted, result.deleted = "incremental", stats.inserted, stats.deleted
        result.rewritten, result.kept = stats.rewritten, stats.kept
    else:
        rows, sizes = build_nodes(source_id, ids, texts, vectors, model.embed, tokenizer, summariser, params)
        build_chunks, drift_chunks, result.mode = len(ids), 0, "full"
    result.drift = drift_chunks / max(1, build_chunks)
    version = hashlib.sha256(f"{print_}|{result.mode}|{current.version if current else None}".encode()).hexdigest()[:16]
    for row in rows:
        row["tree_version"] = version
    result.nodes, result.levels, result.layer_sizes = len(rows), len(sizes) - 1, sizes
    now = datetime.now(UTC).isoformat(timespec="seconds")
    pointer = TreePointer(
        version=version,
        fingerprint=print_,
        config=config,
        levels=result.levels,
        nodes=result.nodes,
        chunks=result.chunks,
        layer_sizes=tuple(sizes),
        summariser=summariser.name,
        reducer=params.reducer,
        built_at=now if result.mode == "full" or not current else (current.built_at or now),
        updated_at=now,
        build_chunks=build_chunks,  # chunks at the last full build
        drift_chunks=drift_chunks,  # chunks inserted or deleted in place since then
        drift=round(result.drift, 4),
    )
    store.replace_tree(source_id, rows, pointer)
    _set_has_tree(store, source_id, bool(rows))
    result.seconds = time.perf_counter() - started
    log.info(result.render())
    return result


def _set_has_tree(store: Store, source_id: str, value: bool) -> None:
    if store.has(Source) and store.first(Source, {"source_id": source_id}, fields=[]) is not None:
        store.change(Source, {"source_id": source_id}, {"has_tree": value})


__all__ = [
    "TreeParams",
    "TreeResult",
    "build_tree",
    "build_nodes",
    "update_rows",
    "mark_stale",
    "cluster_layer",
    "hard_clusters",
    "fingerprint",
]
