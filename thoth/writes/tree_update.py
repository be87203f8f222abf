"""Updating a RAPTOR tree in place, level by level from the chunks up (docs/raptor.md, "Updating trees in
place"): only the nodes on a changed chunk's path to the root are summarised again."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from thoth.embed import Tokenizer
from thoth.records import NodeWithVector
from thoth.summarise import Summariser
from thoth.writes.clustering import TreeParams, centroid, hard_clusters, merge_small

PLACE_CANDIDATES = 3  # nearest nodes an orphan tries before it opens a new cluster


@dataclass
class UpdateStats:
    inserted: int = 0  # chunks in
    deleted: int = 0  # chunks out
    kept: int = 0  # nodes whose id and text did not change
    rewritten: int = 0  # nodes summarised again (children changed) or new
    removed: int = 0  # old nodes gone (emptied, merged away, or above a lower root)
    layer_sizes: list[int] = field(default_factory=list)


@dataclass
class Layer:
    """One level of the tree as the level above sees it: ids, vectors, leaf counts, texts and tokens on demand."""

    ids: list[str]
    vectors: np.ndarray
    leaves: np.ndarray
    text: Callable[[list[int]], list[str]]
    tokens: Callable[[list[int]], np.ndarray]


def node_id(source_id: str, level: int, children: list[str]) -> str:
    return hashlib.sha256("\x1f".join([source_id, str(level), *children]).encode()).hexdigest()[:32]


def summary_node(
    source_id: str, level: int, children: list[str], text: str, vector: np.ndarray, leaf_count: int, by: Summariser
) -> NodeWithVector:
    """A new summary node over `children`, its id a hash of them."""
    node = NodeWithVector(node_id(source_id, level, children), source_id, level, text, tuple(children))
    return replace(node, leaf_count=leaf_count, summariser=by.name, vector=vector)


def layer_of(nodes: list[NodeWithVector], tokenizer: Tokenizer) -> Layer:
    """A layer of summary nodes as the level above sees it."""
    texts = [node.text for node in nodes]
    counts = np.asarray(tokenizer.count(texts), dtype=np.int64)
    return Layer(
        ids=[node.node_id for node in nodes],
        vectors=np.stack([np.asarray(node.vector, dtype=np.float32) for node in nodes]),
        leaves=np.array([node.leaf_count for node in nodes], dtype=np.int64),
        text=lambda idx: [texts[i] for i in idx],
        tokens=lambda idx: counts[np.asarray(idx, dtype=np.int64)] if len(idx) else np.zeros(0, np.int64),
    )


def set_parents(rows: list[NodeWithVector], at: int, groups: list[list[int]], parents: list[str]) -> None:
    """The layer whose rows start at `at`: each row's parent is the node of the group it is in."""
    for parent, members in zip(parents, groups, strict=True):
        for i in members:
            rows[at + i] = replace(rows[at + i], parent=parent)


def _place(
    groups: list[list[int]], orphans: list[int], below: Layer, limit: int
) -> tuple[list[list[int]], set[int], list[int]]:
    """Orphans into the nearest group they fit (radius and size); (groups, positions touched, unplaced)."""
    touched: set[int] = set()
    unplaced: list[int] = []
    if not groups:
        return groups, touched, list(orphans)
    centres = np.stack([centroid(below.vectors, g) for g in groups])
    radius = np.array([float(np.min(below.vectors[g] @ centres[n])) for n, g in enumerate(groups)])
    sizes: dict[int, int] = {}  # token sizes of the groups tried, counted on demand (a chunk layer is large)
    for o in orphans:
        v = below.vectors[o]
        sims = centres @ v
        need = int(below.tokens([o]).sum())
        for j in np.argsort(-sims, kind="stable")[:PLACE_CANDIDATES]:
            j = int(j)
            if sims[j] < radius[j]:
                continue
            if j not in sizes:
                sizes[j] = int(below.tokens(groups[j]).sum())
            if sizes[j] + need <= limit:
                groups[j].append(o)
                centres[j] = centroid(below.vectors, groups[j])
                radius[j] = float(np.min(below.vectors[groups[j]] @ centres[j]))
                sizes[j] += need
                touched.add(j)
                break
        else:
            unplaced.append(o)
    return groups, touched, unplaced


def update_nodes(
    source_id: str,
    old_rows: list[NodeWithVector],
    chunks: Layer,
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
    grow: Callable[[Layer, int, list[NodeWithVector]], list[int]],
) -> tuple[list[NodeWithVector], UpdateStats]:
    """The tree's rows after its chunks became `chunks`; `old_rows` are the current tree's (with vectors). `grow`
    builds the levels above a layer as a build does, appending rows and returning the layer sizes above."""
    stats = UpdateStats()
    by_level: dict[int, list[NodeWithVector]] = {}
    for row in old_rows:
        by_level.setdefault(int(row.level), []).append(row)
    old_leaves = {c for row in by_level.get(1, []) for c in row.children}
    current = set(chunks.ids)
    gone: set[str] = old_leaves - current
    stats.deleted, stats.inserted = len(gone), len(current - old_leaves)
    renamed: dict[str, str] = {}
    below = chunks
    rows: list[NodeWithVector] = []
    prev_at: int | None = None  # where the level below's rows (summary levels) start in `rows`
    stats.layer_sizes = [len(chunks.ids)]
    level = 1
    while True:
        olds = by_level.get(level, [])
        if not olds:  # above the old tree: grow as a build does
            stats.layer_sizes += grow(below, level - 1, rows)
            stats.rewritten += sum(1 for r in rows if r.level >= level)
            break
        index = {node: i for i, node in enumerate(below.ids)}
        groups: list[list[int]] = []
        origin: list[NodeWithVector | None] = []
        changed: set[int] = set()
        for row in olds:
            kids = [renamed.get(c, c) for c in row.children if c not in gone]
            if not kids:
                continue
            if kids != list(row.children):
                changed.add(len(groups))
            groups.append([index[c] for c in kids])
            origin.append(row)
        placed = {i for g in groups for i in g}
        orphans = [i for i in range(len(below.ids)) if i not in placed]
        groups, touched, unplaced = _place(groups, orphans, below, params.cluster_tokens)
        changed |= touched
        for members in hard_clusters(below.vectors[unplaced], below.tokens(unplaced), params) if unplaced else []:
            changed.add(len(groups))
            groups.append([unplaced[m] for m in members])
            origin.append(None)
        groups, moved = merge_small(groups, below.vectors, below.tokens, params, candidates=changed)
        origin = [origin[i] for i in sorted(moved)]
        # changed: new, or children not as they were (lost, gained, merged in, or renamed below)
        changed = {
            n for n, o in enumerate(origin) if o is None or [below.ids[i] for i in groups[n]] != list(o.children)
        }

        # write this level: unchanged nodes as they were, changed ones summarised and embedded again
        redo = sorted(changed)
        texts = [summariser.summarise(below.text(groups[n])) for n in redo]
        vectors = np.asarray(embed(texts), dtype=np.float32) if redo else np.zeros((0, below.vectors.shape[1]))
        fresh = dict(zip(redo, zip(texts, vectors, strict=True), strict=True))
        out: list[NodeWithVector] = []
        for n, members in enumerate(groups):
            old = origin[n]
            if n in fresh:
                kids, leaf_count = [below.ids[i] for i in members], int(below.leaves[members].sum())
                out.append(summary_node(source_id, level, kids, *fresh[n], leaf_count, summariser))
                stats.rewritten += 1
            elif old is not None:  # only new groups have no origin, and they are all in `fresh`
                out.append(replace(old, parent=None))  # as it was (its children, and so its id and leaves)
                stats.kept += 1
        if prev_at is not None:
            set_parents(rows, prev_at, groups, [node.node_id for node in out])
        kept_ids = {o.node_id for o in origin if o is not None}
        gone = {r.node_id for r in olds} - kept_ids
        renamed = {o.node_id: out[n].node_id for n, o in enumerate(origin) if o is not None}
        stats.removed += len(gone)
        prev_at = len(rows)
        rows += out
        stats.layer_sizes.append(len(out))
        below = layer_of(out, tokenizer)
        if len(out) == 1:  # the root: whatever the old tree had above goes
            stats.removed += sum(len(rs) for lv, rs in by_level.items() if lv > level)
            break
        level += 1
    return rows, stats
