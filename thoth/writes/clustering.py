"""Clustering one layer of a RAPTOR tree (Sarthi et al., 2024, with the changes docs/raptor.md, "Building
trees", says: PCA, a strict tree, oversize clusters split again, BIC fitted on a sample). Seeded."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from thoth.config import Settings


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
        return cls(cluster_tokens=settings.tree_cluster_tokens)


def unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def centroid(vectors: np.ndarray, members: list[int]) -> np.ndarray:
    return unit(vectors[members].mean(axis=0))


def merge_small(
    groups: list[list[int]],
    vectors: np.ndarray,
    tokens: Callable[[list[int]], np.ndarray],
    params: TreeParams,
    candidates: set[int] | None = None,
) -> tuple[list[list[int]], dict[int, int]]:
    """Groups with fewer than `params.min_children` members, of those in `candidates` (positions; all when None),
    merge into their nearest group with room (the `tokens` of both within `params.cluster_tokens`); the groups
    left (in order; a receiver's members appended) and {old position: new position} for them."""
    groups = [list(g) for g in groups]
    alive = [True] * len(groups)
    for i in range(len(groups)):
        if len(groups[i]) >= params.min_children or (candidates is not None and i not in candidates):
            continue
        others = [j for j in range(len(groups)) if alive[j] and j != i]
        if not others:
            continue
        mine = centroid(vectors, groups[i])
        sims = np.array([float(centroid(vectors, groups[j]) @ mine) for j in others])
        need = int(tokens(groups[i]).sum())
        for k in np.argsort(-sims, kind="stable"):
            j = others[int(k)]
            if int(tokens(groups[j]).sum()) + need <= params.cluster_tokens:
                groups[j] += groups[i]
                alive[i] = False
                break
    kept = [i for i in range(len(groups)) if alive[i]]
    return [groups[i] for i in kept], {i: n for n, i in enumerate(kept)}


def _reduce(x: np.ndarray, dims: int, params: TreeParams, neighbours: int) -> np.ndarray:
    dims = max(1, min(dims, x.shape[0] - 2, x.shape[1]))
    if params.reducer == "umap":
        try:
            import umap
        except ImportError as exc:
            raise RuntimeError("the umap tree reducer needs umap-learn: pip install 'thoth[umap]'") from exc
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


def _best_model(z: np.ndarray, k_min: int, k_max: int, params: TreeParams) -> Any:
    """The mixture with the lowest BIC, searched upwards from k_min with early stopping; None for one cluster.
    Fitted on a fixed-size sample of the points, so one search costs the same for a hundred or a million."""
    from sklearn.mixture import GaussianMixture

    sample = z
    if len(z) > params.bic_sample:
        rng = np.random.default_rng(params.seed)
        sample = z[np.sort(rng.choice(len(z), params.bic_sample, replace=False))]
    k_max = max(k_min, min(k_max, len(sample) - 1))
    best, best_k, best_bic, since = None, k_min, math.inf, 0
    for k in range(k_min, k_max + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning on degenerate samples: BIC still ranks it
            gmm = GaussianMixture(k, random_state=params.seed, reg_covar=1e-4, max_iter=100, init_params="k-means++")
            model = gmm.fit(sample)
        bic = model.bic(sample)
        if bic < best_bic:
            best, best_k, best_bic, since = model, k, bic, 0
        else:
            since += 1
            if since >= params.bic_patience:
                break
    return None if best_k == 1 else best


def _split_by_order(x: np.ndarray, tokens: np.ndarray, limit: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Last resort for a group GMM will not split: cut it along its main direction into runs under the limit
    (clusters as `_cluster` gives them, every member primary)."""
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
    return [(g, np.ones(len(g), dtype=bool)) for g in groups]


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
        return _split_by_order(x, tokens, params.cluster_tokens)
    neighbours = int(math.sqrt(n - 1)) if depth == 0 else 10  # the paper: global sqrt(n), local 10
    z = _reduce(x, params.dims, params, neighbours)
    # An oversize group must split; by at most `split_clusters` at once (deeper steps split the rest),
    # since a mixture of hundreds of components on thousands of points is what makes clustering slow.
    split = min(max(2, math.ceil(total / params.cluster_tokens)), params.split_clusters)
    k_min = split if oversize and depth >= 1 else 1
    model = _best_model(z, min(k_min, n - 1), min(params.max_clusters, n - 1), params)
    if model is None:
        if depth >= 1 and oversize:  # BIC will not split it: cut it along its main direction
            return _split_by_order(x, tokens, params.cluster_tokens)
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
                out += _split_by_order(x, tokens, params.cluster_tokens)
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
    # machine cost far more than they save. Embedding, outside this, keeps its threads.
    with threadpool_limits(limits=1):
        clusters = _cluster(vectors, tokens, params)
    merged: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}  # by member set, in first-seen order
    for members, primary in clusters:
        order = np.argsort(members, kind="stable")
        members, primary = members[order], primary[order]
        key = tuple(members.tolist())
        if key in merged:
            primary = merged[key][1] | primary
        merged[key] = (members, primary)
    return list(merged.values())


def hard_clusters(vectors: np.ndarray, tokens: np.ndarray, params: TreeParams) -> list[list[int]]:
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
    merged, _ = merge_small(parts, vectors, lambda g: tokens[g], params)
    return merged
