"""Tree retrieval for broad questions: pages named by summaries, per-page diversity, hybrid traversal that
keeps the branches of good chunks, answers composed from several pages."""

from __future__ import annotations

import re
from collections import Counter

from thoth.embed import get_embedder
from thoth.retrieval import tree
from thoth.retrieval.answer import answer_question
from thoth.retrieval.search import hybrid_search
from thoth.store import Store

BROAD = "telescopes, galaxies and the night sky, and how compilers parse and generate code"


def test_summary_hits_name_the_pages_they_cover(topic_index) -> None:
    store = Store(topic_index)
    keys = {r["key"] for r in store.chunks("source_id = 'topics'", ["key"])}
    hits = tree.retrieve(store, get_embedder(topic_index), "topics", "astronomy observatory telescope", top_k=20)
    summaries = [h for h in hits if h["level"] > 0]
    assert summaries, "the topic tree's summaries should match a topic-wide question"
    for hit in summaries:
        assert hit["pages"] and set(hit["pages"]) <= keys and len(hit["pages"]) <= 3
        leaves = tree.leaf_ids(store, hit)
        below = Counter(r["key"] for r in store.chunks(f"chunk_id IN ({', '.join(repr(c) for c in leaves)})"))
        assert hit["pages"][0] == sorted(below.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]  # its main page first


def test_result_lists_hold_at_most_two_chunks_of_a_page_while_others_remain(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    for mode in tree.MODES:
        hits = tree.retrieve(store, embedder, "topics", BROAD, mode=mode, top_k=8)
        per_page = Counter(h["key"] for h in hits if h["level"] == 0)
        assert len(hits) == 8 and max(per_page.values()) <= tree.PER_PAGE, (mode, per_page)
    uncapped = tree.collapsed(store, embedder, "topics", BROAD, 8, per_page=0)
    capped = tree.collapsed(store, embedder, "topics", BROAD, 8)
    pages = {h["key"] for h in capped if h["level"] == 0}
    assert len(pages) >= len({h["key"] for h in uncapped if h["level"] == 0})


def test_traversal_keeps_the_branches_of_the_best_chunks(topic_index) -> None:
    store = Store(topic_index)
    embedder = get_embedder(topic_index)
    query = "Astronomers measure the redshift of a galaxy"
    flat = hybrid_search(store, embedder, query, 3, where="source_id = 'topics'")
    hits = tree.retrieve(store, embedder, "topics", query, mode="traversal", top_k=10, expand_k=1)
    reached = {h["node_id"] for h in hits}
    assert flat[0]["chunk_id"] in reached  # even with one node kept per level, the best chunk's branch stays
    assert all(h["level"] == 0 or h["children"] for h in hits)


def test_answer_question_is_composed_from_several_pages_citing_each(topic_index) -> None:
    store = Store(topic_index)
    result = answer_question(store, get_embedder(topic_index), topic_index, "topics", BROAD, top_k=10)
    assert result["answer_type"] == "extractive"
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", result["answer"])}
    by_number = {c["number"]: c for c in result["citations"]}
    pages = [by_number[n]["pages"][0] for n in cited]
    assert len(pages) >= 2 and len(set(pages)) == len(pages)  # one sentence per page, several pages
    assert all(c["pages"] for c in result["citations"])
