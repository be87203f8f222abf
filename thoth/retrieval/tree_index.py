"""The shape of one source's current tree, held in memory: who holds whom, and which pages a node covers.

Tree retrieval needs, per query, the parent of a chunk (to credit the branch a good chunk sits in)
and the pages a summary node covers (so a summary names its pages and leads to them). Both come
from the tree's structure and the chunks' keys, which change only when the tree's version does;
so they are read once per (database, source, tree version) and kept.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from thoth.records import Chunk, Match, TreeNode
from thoth.store import Store

PAGES_NAMED = 3  # pages a summary node names: the ones most of its chunks come from
_CACHE_SIZE = 8


@dataclass
class TreeIndex:
    parent: dict[str, str]  # chunk or node id -> the node one level up holding it
    pages: dict[str, list[tuple[str, int]]]  # node id -> (page, chunks of it below the node), most first

    def named_pages(self, node_id: str) -> list[str]:
        return [page for page, _ in self.pages.get(node_id, [])[:PAGES_NAMED]]

    def ancestors(self, node_id: str) -> list[str]:
        out = []
        while node_id in self.parent:
            node_id = self.parent[node_id]
            out.append(node_id)
        return out


_lock = threading.Lock()
_cache: dict[tuple[str, str, str, bool], TreeIndex] = {}


def tree_index(store: Store, source_id: str, node_match: Match | None) -> TreeIndex | None:
    """The index of the tree of a source whose summary nodes `node_match` (with its `tree_version`) selects;
    None without a tree (no match)."""
    if node_match is None:
        return None
    # a caller who may not read the source builds (and is served) an empty index, never another caller's
    cache_key = (str(store.uri), source_id, str(node_match["tree_version"]), source_id in store.readable)
    with _lock:
        found = _cache.get(cache_key)
    if found is not None:
        return found
    nodes = store.find(TreeNode, node_match, fields=["level", "children"])
    keys: dict[str, str] = {}
    for batch in store.scan_of(Chunk, ["chunk_id", "key"], {"source_id": source_id}):
        keys.update(zip(batch.column("chunk_id").to_pylist(), batch.column("key").to_pylist(), strict=True))
    parent: dict[str, str] = {}
    counts: dict[str, Counter] = {}
    for node in sorted(nodes, key=lambda n: n.level):  # bottom-up: children's counts are ready
        counter: Counter = Counter()
        for child in node.children:
            parent[child] = node.node_id
            if node.level == 1:
                if child in keys:
                    counter[keys[child]] += 1
            else:
                counter.update(counts.get(child, Counter()))
        counts[node.node_id] = counter
    pages = {n: sorted(c.items(), key=lambda kv: (-kv[1], kv[0])) for n, c in counts.items()}
    index = TreeIndex(parent=parent, pages=pages)
    with _lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[cache_key] = index
    return index
