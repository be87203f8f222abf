"""RAPTOR trees: per source, the chunks clustered (clustering.py), each cluster summarised and embedded, and
again up to one root; updated in place when built the same way (tree_update.py). docs/raptor.md says how."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from thoth.embed import Embedder, Tokenizer
from thoth.records import Chunk, NodeWithVector, Source, TreeNode, TreePointer, field_names, from_row, to_row
from thoth.store import Store
from thoth.summarise import Summariser
from thoth.writes.clustering import TreeParams, hard_clusters
from thoth.writes.tree_update import Layer, UpdateStats, layer_of, set_parents, summary_node, update_nodes

log = logging.getLogger("thoth.tree")


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


# -- building ---------------------------------------------------------------------------------------------


def prints(chunk_ids: list[str], params: TreeParams, summariser: str, model: str) -> tuple[str, str]:
    """(fingerprint, config): what a tree covers and how it is built, and how it is built alone (an
    incremental update only continues a tree built the same way)."""
    digest = hashlib.sha256(f"{sorted(asdict(params).items())}|{summariser}|{model}".encode())
    config = digest.hexdigest()[:16]
    for chunk_id in sorted(chunk_ids):
        digest.update(chunk_id.encode())
    return digest.hexdigest(), config


def _grow(
    source_id: str,
    below: Layer,
    level: int,
    rows: list[NodeWithVector],
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
) -> list[int]:
    """Build the levels above `below` (at `level`), appending rows (`below`'s own, its last, get their `parent`);
    the sizes of the new layers. The top is one node: a layer that will not reduce further gets one root."""
    sizes: list[int] = []
    while len(below.ids) > 1 or (level == 0 and below.ids):
        everyone = list(range(len(below.ids)))
        groups = hard_clusters(below.vectors, below.tokens(everyone), params) if len(everyone) > 1 else [everyone]
        if len(groups) >= len(everyone) or level + 1 >= params.max_levels:
            groups = [everyone]  # will not reduce: one root over it all
        level += 1
        summaries = [summariser.summarise(below.text(g)) for g in groups]
        layer: list[NodeWithVector] = []
        for g, text, vector in zip(groups, summaries, np.asarray(embed(summaries), dtype=np.float32), strict=True):
            kids, leaves = [below.ids[i] for i in g], int(below.leaves[g].sum())
            layer.append(summary_node(source_id, level, kids, text, vector, leaves, summariser))
        if level > 1:  # the layer below is made of summary nodes: set their parent
            set_parents(rows, len(rows) - len(below.ids), groups, [node.node_id for node in layer])
        rows += layer
        below = layer_of(layer, tokenizer)
        sizes.append(len(layer))
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


def tree_rows(
    source_id: str,
    old_rows: list[NodeWithVector],
    chunk_ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    tokenizer: Tokenizer,
    summariser: Summariser,
    params: TreeParams,
) -> tuple[list[NodeWithVector], UpdateStats]:
    """The summary nodes over these chunks (in order), without `tree_version`: the tree `old_rows` updated in
    place (tree_update.py), or built when there is none."""
    chunks = _chunk_layer(list(texts), vectors, chunk_ids, tokenizer)

    def grow(below: Layer, level: int, rows: list[NodeWithVector]) -> list[int]:
        return _grow(source_id, below, level, rows, embed, tokenizer, summariser, params)

    if old_rows:
        return update_nodes(source_id, old_rows, chunks, embed, tokenizer, summariser, params, grow)
    rows: list[NodeWithVector] = []
    return rows, UpdateStats(layer_sizes=[len(chunk_ids), *grow(chunks, 0, rows)])


def _read_chunks(store: Store, source_id: str) -> tuple[list[str], list[str], np.ndarray]:
    """The source's chunks in reading order (key, then position): ids, texts and vectors."""
    columns = ["chunk_id", "key", "chunk_index", "text", "vector"]
    batches = list(store.scan_of(Chunk, columns, {"source_id": source_id}))
    if not batches:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    order = [("key", "ascending"), ("chunk_index", "ascending"), ("chunk_id", "ascending")]
    table = pa.Table.from_batches(batches).sort_by(order)
    width = table.schema.field("vector").type.list_size
    matrix = table["vector"].combine_chunks().flatten().to_numpy().reshape(-1, width)
    return table["chunk_id"].to_pylist(), table["text"].to_pylist(), matrix


def _chunk_ids(store: Store, source_id: str) -> list[str]:
    return [
        cid
        for batch in store.scan_of(Chunk, ["chunk_id"], {"source_id": source_id})
        for cid in batch.column("chunk_id").to_pylist()
    ]


POLICIES = ("run", "event", "document")
# The share of a tree's chunks changed in place since its last full build past which a batch run builds it
# again: in-place updates keep old clusters, and a quarter changed is a corpus the old layers no longer fit
DRIFT_MAX = 0.25


def mark_stale(store: Store, source_id: str, reason: str) -> bool:
    """Keep readers off a tree that no longer matches its chunks (tree retrieval skips a stale tree);
    the next run rebuilds it. False when the source has no tree."""
    pointer = store.tree_pointer(source_id)
    if not pointer:
        return False
    if pointer.stale != reason:
        store.metadata.set_tree_pointer(source_id, replace(pointer, stale=reason))
    return True


def _current_rows(store: Store, source_id: str, version: str) -> list[NodeWithVector]:
    match = {"source_id": source_id, "tree_version": version}
    columns = [name for name in field_names(NodeWithVector) if name not in ("similarity", "chunk")]
    nodes = [
        from_row(NodeWithVector, row) for batch in store.scan_of(TreeNode, columns, match) for row in batch.to_pylist()
    ]
    return sorted(nodes, key=lambda n: (n.level, n.node_id))


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
) -> TreeResult:
    """Bring the tree of one source in line with its chunks, in place when built the same way, else (or `force`)
    from scratch; `policy` says who asks (docs/raptor.md, "Who updates"). `embedder` is called only when work
    is needed, so an up-to-date tree costs no model load."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    started = time.perf_counter()
    chunk_ids = _chunk_ids(store, source_id) if store.has(Chunk) else []
    written_by = f"{summariser.name}/{getattr(summariser, 'budget', '')}"  # a new summary budget: a new tree
    print_, config = prints(chunk_ids, params, written_by, model_name)
    current = store.tree_pointer(source_id)
    if not force and current and current.fingerprint == print_ and not current.stale:
        return TreeResult(source_id, built=False, chunks=len(chunk_ids))
    if not chunk_ids:
        store.metadata.drop_tree(source_id)
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
        before = {c for node in old if node.level == 1 for c in node.children}
        change = len(before.symmetric_difference(ids))
        drift = (drift_chunks + change) / max(1, build_chunks)
        if policy == "run" and drift > DRIFT_MAX:
            old, result.reason = [], f"drift {drift:.1%} > {DRIFT_MAX:.0%}"
    else:
        result.reason = "forced" if force else ("no tree" if not current else "built differently")
    rows, stats = tree_rows(source_id, old, ids, texts, vectors, model.embed_documents, tokenizer, summariser, params)
    sizes = stats.layer_sizes
    if old:
        drift_chunks += stats.inserted + stats.deleted
        result.mode, result.inserted, result.deleted = "incremental", stats.inserted, stats.deleted
        result.rewritten, result.kept = stats.rewritten, stats.kept
    else:
        build_chunks, drift_chunks, result.mode = len(ids), 0, "full"
    result.drift = drift_chunks / max(1, build_chunks)
    version = hashlib.sha256(f"{print_}|{result.mode}|{current.version if current else None}".encode()).hexdigest()[:16]
    rows = [replace(node, tree_version=version) for node in rows]
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
    store.metadata.replace_tree(source_id, [to_row(node) for node in rows], pointer)
    _set_has_tree(store, source_id, bool(rows))
    result.seconds = time.perf_counter() - started
    log.info(result.render())
    return result


def _set_has_tree(store: Store, source_id: str, value: bool) -> None:
    if store.has(Source) and store.first(Source, {"source_id": source_id}, fields=[]) is not None:
        store.change(Source, {"source_id": source_id}, {"has_tree": value})
