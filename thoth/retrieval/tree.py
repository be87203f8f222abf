"""Reading RAPTOR trees: datasets, nodes, navigation, and the two retrieval modes (docs/raptor.md).

A dataset is a source. Its tree's nodes are the source's chunks (level 0, node id = chunk id) and
the summary nodes in `tree_nodes` (level >= 1) of the tree version its pointer names, so a reader
never mixes two builds. `levels_cap` is the highest level either mode looks at (0: chunks only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from thoth.embed import Embedder
from thoth.errors import ClientError, NotFound, check_choice
from thoth.records import AtMost, Chunk, Contains, Match, Source, TreeNode, TreePointer
from thoth.retrieval.search import MIN_PREFETCH, explained_search, hybrid_search, rrf
from thoth.retrieval.tree_index import TreeIndex, tree_index
from thoth.store import Store

MODES = ("collapsed", "traversal")
PER_PAGE = 2  # chunks of one page in a result list, before other pages' get their turn (docs/raptor.md)
PROTECTED_PAGES = 5  # the flat ranking's first pages: summaries name no other page before them (docs/raptor.md)
DIRECTIONS = ("parent", "siblings")


@dataclass(frozen=True)
class NodeHit:
    """A tree node a retrieval found: its rank score, and (a summary) the pages it covers."""

    node: TreeNode
    score: float = 0.0
    pages: tuple[str, ...] = ()  # a summary: the pages most of its chunks come from
    keyword_rank: int | None = None  # a chunk: its rank in the keyword search (collapsed's merge)

    @property
    def node_id(self) -> str:
        return self.node.node_id

    @property
    def level(self) -> int:
        return self.node.level

    @property
    def key(self) -> str | None:
        return self.node.key

    @property
    def similarity(self) -> float | None:
        return self.node.similarity


# -- datasets -----------------------------------------------------------------------------------------


def get_dataset(store: Store, source_id: str) -> Source:
    source = store.first(Source, {"source_id": source_id})
    if source is None:
        known = sorted(s.source_id for s in store.find(Source, fields=["source_id"]))
        listed = ", ".join(known[:20]) + (" …" if len(known) > 20 else "")
        raise NotFound(f"unknown dataset_id {source_id!r}; known datasets: {listed or '(none: run the ingest job)'}")
    return source


def _node_match(store: Store, source_id: str) -> Match | None:
    """The Match of the current tree's summary nodes of a source, or None if it has none."""
    return _scope(source_id, store.tree_pointer(source_id))


def _scope(source_id: str, pointer: TreePointer | None) -> Match | None:
    """_node_match of a tree pointer already read."""
    if not pointer or not pointer.nodes or pointer.stale:
        return None  # a stale tree may quote deleted text: not served until the next run rebuilds it
    return {"source_id": source_id, "tree_version": pointer.version}


# -- nodes ----------------------------------------------------------------------------------------------


def chunk_node(chunk: Chunk, similarity: float | None = None) -> TreeNode:
    """A chunk as a level-0 node of its source's tree (node id = chunk id)."""
    return TreeNode(
        node_id=chunk.chunk_id, source_id=chunk.source_id, level=0, text=chunk.text, similarity=similarity, chunk=chunk
    )


def _nodes(store: Store, source_id: str, ids: list[str]) -> list[TreeNode]:
    """Nodes of one source's current tree by id (chunks or summaries), in the order of `ids`."""
    if not ids:
        return []
    found: dict[str, TreeNode] = {}
    scope = _node_match(store, source_id)
    if scope:
        for node in store.find(TreeNode, {**scope, "node_id": ids}):
            found[node.node_id] = node
    rest = [i for i in ids if i not in found]
    if rest:
        for chunk in store.find(Chunk, {"source_id": source_id, "chunk_id": rest}):
            found[chunk.chunk_id] = chunk_node(chunk)
    return [found[i] for i in ids if i in found]


def _vectors(store: Store, nodes: list[TreeNode]) -> dict[str, Any]:
    """The embedding of each node: a summary's from the tree, a chunk's from the chunks."""
    summaries = [n.node_id for n in nodes if n.level > 0]
    chunks = [n.node_id for n in nodes if n.level == 0]
    return {**store.vectors(TreeNode, summaries), **store.vectors(Chunk, chunks)}


def get_node(store: Store, node_id: str, source_id: str | None = None) -> TreeNode:
    """A node by id: a summary node of a current tree, or a chunk (level 0)."""
    if not node_id or not node_id.strip():
        raise ClientError("node_id must be a non-empty string")
    for node in store.find(TreeNode, {"node_id": node_id, "source_id": source_id}):
        pointer = store.tree_pointer(node.source_id)
        if pointer and node.tree_version == pointer.version and not pointer.stale:
            return node
    chunk = store.first(Chunk, {"chunk_id": node_id, "source_id": source_id})
    if chunk is not None:
        return chunk_node(chunk)
    scope = f" in dataset {source_id!r}" if source_id else ""
    raise NotFound(f"unknown node_id {node_id!r}{scope}: no chunk or summary node has that id")


def children(store: Store, node_id: str) -> tuple[TreeNode, list[TreeNode]]:
    node = get_node(store, node_id)
    return node, _nodes(store, node.source_id, list(node.children))


def _cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))


def parents(store: Store, node: TreeNode) -> list[TreeNode]:
    """The nodes one level up that hold `node` (soft clustering: possibly several); the main one first."""
    scope = _node_match(store, node.source_id)
    if not scope:
        return []
    found = store.find(TreeNode, {**scope, "level": node.level + 1, "children": Contains(node.node_id)})
    if len(found) > 1:
        if node.parent:  # a summary node records its main parent
            found.sort(key=lambda n: (n.node_id != node.parent, n.node_id))
        else:  # a chunk: the parent whose summary is closest to it
            vectors = _vectors(store, [node, *found])
            me = vectors[node.node_id]
            found.sort(key=lambda n: (-_cosine(me, vectors[n.node_id]), n.node_id))
    return found


def navigate(store: Store, node_id: str, direction: str) -> tuple[TreeNode, list[TreeNode]]:
    """(the node, its parents or its siblings)."""
    check_choice("direction", direction, DIRECTIONS)
    node = get_node(store, node_id)
    ups = parents(store, node)
    if direction == "parent":
        return node, ups
    if ups:
        ids = list(dict.fromkeys(c for parent in ups for c in parent.children if c != node_id))
        return node, _nodes(store, node.source_id, ids)
    scope = _node_match(store, node.source_id)
    if node.level == 0 or not scope:  # a chunk of a source without a tree: no siblings
        return node, []
    tops = store.find(TreeNode, {**scope, "level": node.level})  # the top layer
    return node, [n for n in sorted(tops, key=lambda n: n.node_id) if n.node_id != node_id]


def path_to_root(store: Store, node_id: str) -> list[TreeNode]:
    """The node, its main parent, that one's main parent, … up to a top-layer node."""
    path = [get_node(store, node_id)]
    while True:
        ups = parents(store, path[-1])
        if not ups:
            return path
        path.append(ups[0])


# -- retrieval ------------------------------------------------------------------------------------------


def _with_similarity(store: Store, vector: np.ndarray, hits: list[NodeHit]) -> list[NodeHit]:
    """Give every hit its cosine similarity to the query (keyword-only hits lack it)."""
    vectors = _vectors(store, [h.node for h in hits if h.similarity is None])
    return [
        dataclasses.replace(h, node=dataclasses.replace(h.node, similarity=_cosine(vector, vectors[h.node_id])))
        if h.similarity is None and h.node_id in vectors
        else h
        for h in hits
    ]


def tree_index_of(store: Store, source_id: str) -> TreeIndex | None:
    """The in-memory index of a source's current tree (None without one): parents and named pages."""
    return tree_index(store, source_id, _node_match(store, source_id))


def _hit_pages(hit: NodeHit, index: TreeIndex | None) -> list[str]:
    if hit.level == 0:
        return [hit.key] if hit.key else []
    return index.named_pages(hit.node_id) if index else []


def diverse(
    hits: list[NodeHit], top_k: int, index: TreeIndex | None, per_page: int = PER_PAGE, must: list[str] | None = None
) -> list[NodeHit]:
    """The best `top_k` of a ranked list with at most `per_page` chunks of one page, so that a broad
    question sees several pages; the passed-over ones fill up what is left, in order.

    `must`: pages the list must name when the hits hold them (those of the flat hybrid search's top
    `top_k`): a hit naming none of them is passed over while the slots left are needed for them."""
    out: list[NodeHit] = []
    later: list[NodeHit] = []
    seen: dict[str, int] = {}
    held = {p for hit in hits for p in _hit_pages(hit, index)}
    missing = {p for p in must or () if p in held}
    for hit in hits:
        pages = _hit_pages(hit, index)
        needed = bool(missing.intersection(pages))
        if not needed and (
            (hit.level == 0 and pages and seen.get(pages[0], 0) >= per_page) or top_k - len(out) <= len(missing)
        ):
            later.append(hit)
            continue
        for page in pages[:1]:
            seen[page] = seen.get(page, 0) + 1
        missing.difference_update(pages)
        out.append(hit)
        if len(out) == top_k:
            return out
    return (out + later)[:top_k]


def _flat_pages(flat: list[NodeHit], top_k: int) -> list[str]:
    """The pages of a flat search's best `top_k` chunks, in order."""
    return list(dict.fromkeys(h.key for h in flat[:top_k] if h.key))


def collapsed(
    store: Store,
    embedder: Embedder,
    source_id: str,
    query: str,
    top_k: int,
    *,
    levels_cap: int | None = None,
    alpha: float | None = None,  # None: hybrid search's own weighting (search.Ranking)
    per_page: int | None = None,
) -> list[NodeHit]:
    """Chunks ranked by the flat hybrid search, with the summary nodes merged in where they beat chunks
    on both signals (`_merge_summaries`) but never naming a new page before the flat ranking's first
    `PROTECTED_PAGES` pages (`_protect_pages`), then at most `per_page` chunks of one page (PER_PAGE by
    default; 0: no cap). With the cap, the list names every page that the flat ranking names in its
    top `top_k`: summaries add pages, they never push out a page flat hybrid search finds."""
    depth = max(MIN_PREFETCH, 3 * top_k)
    found = explained_search(store, embedder, query, depth, alpha=alpha, match={"source_id": source_id}, as_if=top_k)
    flat = [NodeHit(chunk_node(h.chunk, h.similarity), h.score, keyword_rank=h.keyword_rank) for h in found.hits]
    must = _flat_pages(flat, top_k)
    vector = embedder.embed_queries([query])[0]
    scope = _node_match(store, source_id)
    index = tree_index(store, source_id, scope)  # the scope names the version: no second pointer read
    ranked = flat
    if scope and index is not None and levels_cap != 0:
        match = {**scope, "level": None if levels_cap is None else AtMost(levels_cap)}
        summaries = store.node_vector_search(vector, depth, match)
        merged = _merge_summaries(flat, summaries, index, alpha)
        ranked = _protect_pages(merged, _flat_pages(flat, len(flat))[: min(top_k, PROTECTED_PAGES)], index)
    cap = PER_PAGE if per_page is None else per_page
    best = diverse(ranked, top_k, index, cap, must=must) if cap else ranked[:top_k]
    return _with_similarity(store, vector, [dataclasses.replace(h, keyword_rank=None) for h in best])


def _protect_pages(ranked: list[NodeHit], protected: list[str], index: TreeIndex) -> list[NodeHit]:
    """`ranked` with every summary that would name a page not yet named moved to just after the hit
    that names the last of the `protected` pages (the flat ranking's first pages, in order). So the
    list's first pages are the flat ranking's, in its order: a summary adds pages after them, and a
    single-fact question finds its page where flat hybrid search puts it."""
    out: list[NodeHit] = []
    held: list[NodeHit] = []
    named: set[str] = set()
    waiting = set(protected)
    for hit in ranked:
        pages = _hit_pages(hit, index)
        if waiting and hit.level > 0 and not named.issuperset(pages):
            held.append(hit)
            continue
        out.append(hit)
        named.update(pages)
        waiting.difference_update(pages)
        if not waiting and held:
            out += held
            held = []
    return out + held


def _merge_summaries(
    flat: list[NodeHit], summaries: list[TreeNode], index: TreeIndex, alpha: float | None
) -> list[NodeHit]:
    """The flat chunk ranking with each summary node placed after every chunk it does not beat on both
    signals: cosine to the query (vector), and keyword evidence, the best BM25 rank of a chunk below
    it against the chunk's own BM25 rank (a signal with weight 0 is left out). So a summary never
    outranks a chunk that matches the query better in either way; the chunks keep their flat order.
    A summary takes the score of the chunk it is placed before (the last chunk's at the end)."""
    keyword: dict[str, int] = {}  # node id -> best keyword rank of a chunk below it
    for hit in flat:
        if hit.keyword_rank is not None:
            for node in index.ancestors(hit.node_id):
                keyword[node] = min(keyword.get(node, hit.keyword_rank), hit.keyword_rank)
    no_rank = len(flat) + 10**6  # below every ranked item

    def beats(summary: TreeNode, chunk: NodeHit) -> bool:
        by_vector = alpha == 0 or (summary.similarity or 0.0) > (chunk.similarity or -1.0)
        chunk_words = chunk.keyword_rank or no_rank
        by_words = alpha == 1 or keyword.get(summary.node_id, no_rank) < chunk_words
        return by_vector and by_words

    slots: dict[int, list[NodeHit]] = {}
    for summary in sorted(summaries, key=lambda s: (-(s.similarity or 0.0), s.node_id)):
        after = max((i for i, chunk in enumerate(flat) if not beats(summary, chunk)), default=-1)
        if after < len(flat) - 1:  # placed before the chunk at after + 1
            slots.setdefault(after + 1, []).append(NodeHit(summary, flat[after + 1].score))
    out: list[NodeHit] = []
    for i, chunk in enumerate(flat):
        out += slots.get(i, [])
        out.append(chunk)
    return out


def traversal(
    store: Store,
    embedder: Embedder,
    source_id: str,
    query: str,
    top_k: int,
    *,
    expand_k: int = 3,
    levels_cap: int | None = None,
) -> list[NodeHit]:
    """Top-down through the tree, scoring every level by keyword and vector evidence together.

    A node's vector evidence is its cosine to the query; its keyword evidence is the best rank,
    in the flat hybrid search (`hybrid_search`), of a chunk below it. Each level keeps
    its best `expand_k` nodes by the two fused, and never drops a node holding one of the flat
    search's best `top_k` chunks (a branch whose chunks score well on their own). The nodes kept and
    the chunks reached are ranked by the same fusion, at most PER_PAGE chunks of one page, and name
    every page the flat search's best `top_k` chunks name: traversal finds what flat search finds.
    """
    vector = embedder.embed_queries([query])[0]
    depth = max(MIN_PREFETCH, 3 * top_k)
    found = hybrid_search(store, embedder, query, depth, match={"source_id": source_id})
    flat = [NodeHit(chunk_node(h.chunk, h.similarity), h.score) for h in found.hits]
    must = _flat_pages(flat, top_k)
    pointer = store.tree_pointer(source_id)
    scope = _scope(source_id, pointer)
    level = min(pointer.levels if pointer else 0, levels_cap if levels_cap is not None else 10**6) if scope else 0
    index = tree_index(store, source_id, scope)  # the scope names the version: no second pointer read
    if scope is None or level == 0 or index is None:  # no tree (or chunks only): the flat hybrid ranking
        return _with_similarity(store, vector, diverse(flat, top_k, index, must=must))
    # keyword (and flat hybrid) evidence of a node: the best flat rank among the chunks below it
    evidence: dict[str, int] = {}
    for rank, hit in enumerate(flat, start=1):
        for node in index.ancestors(hit.node_id):
            evidence.setdefault(node, rank)
    protected = {node for hit in flat[:top_k] for node in index.ancestors(hit.node_id)}
    layer = store.find(TreeNode, {**scope, "level": level})
    kept: list[TreeNode] = []
    while layer:
        vectors = _vectors(store, layer)
        layer = [dataclasses.replace(n, similarity=_cosine(vector, vectors[n.node_id])) for n in layer]
        if layer[0].level == 0:
            kept += layer
            break
        ranked = [h.node for h in _fused_nodes(layer, evidence)]
        best = ranked[:expand_k] + [n for n in ranked[expand_k:] if n.node_id in protected]
        kept += best
        ids = list(dict.fromkeys(c for n in best for c in n.children))
        layer = _nodes(store, source_id, ids)
    for rank, hit in enumerate(flat, start=1):
        evidence.setdefault(hit.node_id, rank)
    return diverse(_fused_nodes(kept, evidence), top_k, index, must=must)


def _fused_nodes(nodes: list[TreeNode], evidence: dict[str, int]) -> list[NodeHit]:
    """Nodes ranked by reciprocal rank fusion of their cosine ranking and their keyword-evidence ranking,
    weighed the same."""
    by_cosine = sorted(nodes, key=lambda n: (-(n.similarity or 0.0), n.node_id))
    with_words = [n for n in nodes if n.node_id in evidence]
    by_words = sorted(with_words, key=lambda n: (evidence[n.node_id], n.node_id))
    lists = [(0.5, by_cosine)] + ([(0.5, by_words)] if by_words else [])
    return [NodeHit(node, score) for node, score in rrf(lists, len(nodes), lambda n: n.node_id)]


def retrieve(
    store: Store,
    embedder: Embedder,
    source_id: str,
    query: str,
    *,
    mode: str = "collapsed",
    top_k: int = 5,
    expand_k: int = 3,
    levels_cap: int | None = None,
    reranker: bool = False,
    score_threshold: float | None = None,
) -> list[NodeHit]:
    """The best nodes of a dataset for `query`, each with `score` (its rank score) and `similarity` (cosine).

    `reranker`: re-order the candidates by their cosine similarity to the query (an embedding rerank;
    no cross-encoder ships with Thoth). `score_threshold`: drop hits whose similarity is below it.
    """
    if not query or not query.strip():
        raise ClientError("query must be a non-empty string")
    check_choice("mode", mode, MODES)
    get_dataset(store, source_id)
    want = top_k * 3 if reranker else top_k
    if mode == "collapsed":
        hits = collapsed(store, embedder, source_id, query, want, levels_cap=levels_cap)
    else:
        hits = traversal(store, embedder, source_id, query, want, expand_k=expand_k, levels_cap=levels_cap)
    if reranker:
        hits = sorted(hits, key=lambda h: (-(h.similarity or 0.0), h.node_id))
    if score_threshold is not None:
        hits = [h for h in hits if (h.similarity or 0.0) >= score_threshold]
    index = tree_index_of(store, source_id) if any(h.level > 0 for h in hits) else None
    if index is not None:  # a summary names the pages it covers, so that it leads to them
        hits = [dataclasses.replace(h, pages=tuple(index.named_pages(h.node_id))) if h.level else h for h in hits]
    return hits[:top_k]


def nodes_by_id(store: Store, node_ids: list[str]) -> list[TreeNode]:
    """Nodes in the order asked; an unknown id is an error naming it."""
    if not node_ids:
        raise ClientError("node_ids must name at least one node")
    return [get_node(store, node_id) for node_id in dict.fromkeys(node_ids)]


# -- browsing a tree level by level ------------------------------------------------------------------


def level_sizes(store: Store, source_id: str) -> list[int]:
    """Nodes per level of a dataset's current tree, level 0 (its chunks) first; [chunks] without a tree."""
    get_dataset(store, source_id)
    pointer = store.tree_pointer(source_id)
    if pointer and _scope(source_id, pointer):
        return list(pointer.layer_sizes)
    return [store.count_of(Chunk, {"source_id": source_id})]


def level_nodes(store: Store, source_id: str, level: int, limit: int, offset: int = 0) -> tuple[int, list[TreeNode]]:
    """(how many nodes the level has, `limit` of them from `offset` in node id order); level 0 is the chunks."""
    get_dataset(store, source_id)
    if level < 0:
        raise ClientError(f"level must be 0 or more, got {level}")
    if level == 0:
        ids = sorted(c.chunk_id for c in store.find(Chunk, {"source_id": source_id}, fields=["chunk_id"]))
    else:
        scope = _node_match(store, source_id)
        if not scope:
            raise NotFound(f"dataset {source_id!r} has no tree: level {level} does not exist (build it with ingest)")
        ids = sorted(n.node_id for n in store.find(TreeNode, {**scope, "level": level}, fields=["node_id"]))
        if not ids:
            raise NotFound(f"dataset {source_id!r} has no level {level}")
    return len(ids), _nodes(store, source_id, ids[offset : offset + limit])
