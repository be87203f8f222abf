"""Tree retrieval for broad questions: pages named by summaries, per-page diversity, hybrid traversal that
keeps the branches of good chunks, answers composed from several pages."""

from __future__ import annotations

import re
from collections import Counter

from thoth.embedders import get_embedder
from thoth.records import Chunk, TreeNode
from thoth.retrieval import tree
from thoth.retrieval.answer import MAX_CANDIDATES, MAX_PAGES, PER_PASSAGE, _candidates, answer_question
from thoth.retrieval.search import hybrid_search
from thoth.retrieval.tree_index import TreeIndex
from thoth.store import Store

BROAD = "telescopes, galaxies and the night sky, and how compilers parse and generate code"


def leaves(store: Store, node: TreeNode) -> list[str]:
    """The chunk ids below `node`, walked down its children."""
    if node.level == 0:
        return [node.node_id]
    return [leaf for child in tree.children(store, node.node_id)[1] for leaf in leaves(store, child)]


def test_summary_hits_name_the_pages_they_cover(topic_index) -> None:
    store = Store(topic_index)
    keys = {c.key for c in store.find(Chunk, {"source_id": "topics"}, fields=["key"])}
    hits = tree.retrieve(store, get_embedder(topic_index), "topics", "astronomy observatory telescope", top_k=20)
    summaries = [h for h in hits if h.level > 0]
    assert summaries, "the topic tree's summaries should match a topic-wide question"
    for hit in summaries:
        assert hit.pages and set(hit.pages) <= keys and len(hit.pages) <= 3
        below = Counter(c.key for c in store.find(Chunk, {"chunk_id": leaves(store, hit.node)}, fields=["key"]))
        assert hit.pages[0] == sorted(below.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]  # its main page first


def test_result_lists_hold_at_most_two_chunks_of_a_page_while_others_remain(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    for mode in tree.MODES:
        hits = tree.retrieve(store, embedder, "topics", BROAD, mode=mode, top_k=8)
        per_page = Counter(h.key for h in hits if h.level == 0)
        assert len(hits) == 8 and max(per_page.values()) <= tree.PER_PAGE, (mode, per_page)
    uncapped = tree.collapsed(store, embedder, "topics", BROAD, 8, per_page=0)
    capped = tree.collapsed(store, embedder, "topics", BROAD, 8)
    pages = {h.key for h in capped if h.level == 0}
    assert len(pages) >= len({h.key for h in uncapped if h.level == 0})


def test_traversal_keeps_the_branches_of_the_best_chunks(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    query = "Astronomers measure the redshift of a galaxy"
    flat = hybrid_search(store, embedder, query, 3, match={"source_id": "topics"}).hits
    hits = tree.retrieve(store, embedder, "topics", query, mode="traversal", top_k=10, expand_k=1)
    reached = {h.node_id for h in hits}
    assert flat[0].chunk_id in reached  # even with one node kept per level, the best chunk's branch stays
    assert all(h.level == 0 or h.node.children for h in hits)


def test_answer_question_is_composed_from_several_pages_citing_each(topic_index) -> None:
    store = Store(topic_index)
    result = answer_question(store, get_embedder(topic_index), topic_index, "topics", BROAD, top_k=10)
    assert result.answer_type == "extractive"
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", result.answer)}
    by_number = {c.number: c for c in result.citations}
    pages = [by_number[n].pages[0] for n in cited]
    assert len(pages) >= 2 and len(set(pages)) == len(pages)  # one sentence per page, several pages
    assert all(c.pages for c in result.citations)


def _named(hits: list[tree.NodeHit]) -> set[str]:
    """The pages a result list names: a chunk its page, a summary the pages it covers."""
    return {p for h in hits for p in ([h.key] if h.level == 0 else h.pages)}


QUESTIONS = [
    BROAD,
    "Astronomers measure the redshift of a galaxy",
    "how does a compiler parse source code into a syntax tree",
    "telescope mirrors and observatories",
]


def test_tree_retrieval_names_every_page_flat_hybrid_search_finds(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    for query in QUESTIONS:
        flat = {h.chunk.key for h in hybrid_search(store, embedder, query, 6, match={"source_id": "topics"}).hits}
        for expand_k in (1, 3):  # one node kept per level prunes most branches: the flat pages stay
            hits = tree.retrieve(store, embedder, "topics", query, mode="traversal", top_k=6, expand_k=expand_k)
            assert flat <= _named(hits), (query, expand_k)
        chunks_only = {h.key for h in tree.collapsed(store, embedder, "topics", query, 6, levels_cap=0, per_page=0)}
        assert chunks_only <= _named(tree.retrieve(store, embedder, "topics", query, top_k=6)), query


def _hit(node_id: str, level: int, page: str | None = None) -> tree.NodeHit:
    chunk = Chunk(node_id, key=page) if page else None
    return tree.NodeHit(TreeNode(node_id, level=level, chunk=chunk))


def test_diverse_keeps_room_for_the_pages_it_must_name() -> None:
    hits = [_hit(f"{page}{n}", 0, page) for page, n in ["a1", "b1", "a2", "b2", "c1", "d1"]]
    assert [h.node_id for h in tree.diverse(hits, 3, None)] == ["a1", "b1", "a2"]
    assert [h.node_id for h in tree.diverse(hits, 3, None, must=["d"])] == ["a1", "b1", "d1"]
    assert [h.node_id for h in tree.diverse(hits, 3, None, per_page=1, must=["d", "z"])] == ["a1", "b1", "d1"]
    assert [h.node_id for h in tree.diverse(hits, 2, None, must=["c", "d"])] == ["c1", "d1"]


def test_answer_quotes_a_sentence_of_each_cited_page_from_its_best_matching_sentences(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    result = answer_question(store, embedder, topic_index, "topics", BROAD, top_k=10)
    candidates = _candidates(BROAD, list(result.citations))
    per_citation = Counter(number for number, _, _ in candidates)
    assert max(per_citation.values()) <= PER_PASSAGE and len(candidates) <= MAX_CANDIDATES
    quoted = re.findall(r"(.+?) \[(\d+)\]\s*", result.answer)
    assert quoted
    for sentence, number in quoted:  # each quoted sentence is one of its passage's candidates
        assert (int(number), sentence.strip()) in {(n, s) for n, _, s in candidates}
    cited = [next(c.pages[0] for c in result.citations if str(c.number) == n) for _, n in quoted]
    assert 3 <= len(cited) <= MAX_PAGES and len(set(cited)) == len(cited)  # one sentence from each of several pages


def _page_order(hits: list[tree.NodeHit], index) -> list[str]:
    return list(dict.fromkeys(p for h in hits for p in ([h.key] if h.level == 0 else index.named_pages(h.node_id))))


def test_collapsed_keeps_the_flat_ranking_and_its_first_pages(topic_index) -> None:
    """Summaries are merged into the flat hybrid ranking without reordering its chunks, and name no new
    page before the flat ranking's first PROTECTED_PAGES pages: single-fact questions lose nothing."""
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    index = tree.tree_index_of(store, "topics")
    summaries = 0
    for query in QUESTIONS:
        found = hybrid_search(store, embedder, query, 20, match={"source_id": "topics"}).hits
        flat = [tree.NodeHit(tree.chunk_node(h.chunk), h.score) for h in found]
        hits = tree.collapsed(store, embedder, "topics", query, 20, per_page=0)
        summaries += sum(h.level > 0 for h in hits)
        chunks = [h.node_id for h in hits if h.level == 0]
        assert chunks == [h.node_id for h in flat[: len(chunks)]], query
        first = _page_order(flat, index)[: tree.PROTECTED_PAGES]
        named = _page_order(hits, index)
        reached = min(len(first), len(named))  # a list of few pages may stop before the flat ranking's fifth
        assert named[:reached] == first[:reached], query
    assert summaries, "summaries should still enter the lists after the flat ranking's first pages"


def test_summaries_naming_new_pages_wait_for_the_protected_pages() -> None:
    index = TreeIndex(parent={}, pages={"s": [("x", 2)], "t": [("a", 3)]})
    hits = [
        _hit("a1", 0, "a"),
        _hit("s", 1),  # names x, a page not yet named: waits until a and b are named
        _hit("t", 1),  # names a, already named: stays where it is
        _hit("b1", 0, "b"),
        _hit("c1", 0, "c"),
    ]
    order = [h.node_id for h in tree._protect_pages(hits, ["a", "b"], index)]
    assert order == ["a1", "t", "b1", "s", "c1"]
