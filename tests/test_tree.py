"""RAPTOR tree building: structure, determinism, skipping unchanged sources, atomic replacement."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import TREE_TUNING, job_env, run_ingest, tree_settings, write_topic_corpus
from thoth.config import ConfigError, Settings
from thoth.embed import get_tokenizer
from thoth.embedders import get_embedder
from thoth.records import Chunk, Source, TreeNode, to_row
from thoth.store import Store
from thoth.store.schema import TREE_NODES
from thoth.summarise import ExtractiveSummariser, split_sentences
from thoth.writes.clustering import TreeParams, cluster_layer
from thoth.writes.tree import _read_chunks, tree_rows
from thoth.writes.writer import Writer


def _tree(settings: Settings, source_id: str = "topics") -> tuple[dict, list[dict], list[str]]:
    store = Store(settings)
    pointer = store.tree_pointer(source_id)
    nodes = [to_row(n) for n in store.find(TreeNode, {"source_id": source_id})]
    chunk_ids = [c.chunk_id for c in store.find(Chunk, fields=[])]
    return pointer, nodes, chunk_ids


def test_tree_covers_every_chunk_and_links_both_ways(topic_index: Settings) -> None:
    pointer, nodes, chunk_ids = _tree(topic_index)
    assert pointer.levels >= 2 and pointer.nodes == len(nodes)
    assert {n["tree_version"] for n in nodes} == {pointer.version}
    by_id = {n["node_id"]: n for n in nodes}
    level1 = [n for n in nodes if n["level"] == 1]
    assert set().union(*(n["children"] for n in level1)) == set(chunk_ids)  # every chunk under a summary
    top = max(n["level"] for n in nodes)
    for node in nodes:
        assert node["summariser"] == "extractive-v1" and node["text"]
        if node["level"] == top:
            assert node["parent"] is None
        else:
            parent = by_id[node["parent"]]
            assert parent["level"] == node["level"] + 1 and node["node_id"] in parent["children"]
        if node["level"] > 1:
            assert all(by_id[c]["level"] == node["level"] - 1 for c in node["children"])
            assert node["leaf_count"] >= max(by_id[c]["leaf_count"] for c in node["children"])
        else:
            assert node["leaf_count"] == len(node["children"])
    assert sum(1 for n in nodes if n["level"] == top) == pointer.layer_sizes[-1]
    source = Store(topic_index).first(Source, {"source_id": "topics"})
    assert source.has_tree is True


def test_summaries_fit_the_budget_and_quote_their_children(topic_index: Settings) -> None:
    _, nodes, _ = _tree(topic_index)
    tok = get_tokenizer(topic_index)
    counts = tok.count([n["text"] for n in nodes])
    assert max(counts) <= topic_index.tree_summary_tokens
    store = Store(topic_index)
    node = next(n for n in nodes if n["level"] == 1)
    children_text = " ".join(c.text for c in store.find(Chunk, {"chunk_id": node["children"]}, fields=["text"]))
    assert all(sentence in " ".join(children_text.split()) for sentence in split_sentences(node["text"]))


def test_clusters_stay_within_the_summariser_input_limit() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 64))
    x = centres[rng.integers(0, 6, 300)] + 0.3 * rng.normal(size=(300, 64))
    tokens = rng.integers(50, 150, 300)
    params = TreeParams(cluster_tokens=1000)
    clusters = cluster_layer(x.astype(np.float32), tokens, params)
    assert set(np.concatenate([m for m, _ in clusters]).tolist()) == set(range(300))
    assert all(tokens[m].sum() <= 1000 for m, _ in clusters)
    primary = np.concatenate([m[p] for m, p in clusters])
    assert sorted(primary.tolist()) == list(range(300))  # each point belongs most to exactly one cluster
    again = cluster_layer(x.astype(np.float32), tokens, params)
    assert [m.tolist() for m, _ in clusters] == [m.tolist() for m, _ in again]


@pytest.mark.parametrize("n", [3, 60])
def test_passages_no_mixture_tells_apart_are_cut_within_the_limit(n: int) -> None:
    """The same passage many times over (a footer on every page) is over the limit together, and no mixture
    splits identical points: they are cut in order, each cut within the limit, each point primary once."""
    x = np.tile(np.random.default_rng(1).normal(size=(1, 64)), (n, 1)).astype(np.float32)
    tokens = np.full(n, 400)
    clusters = cluster_layer(x, tokens, TreeParams(cluster_tokens=1000))
    assert sorted(np.concatenate([m[p] for m, p in clusters]).tolist()) == list(range(n))
    assert all(tokens[m].sum() <= 1000 for m, _ in clusters) and len(clusters) >= n * 400 / 1000


def test_the_same_chunks_give_the_same_tree(topic_index: Settings) -> None:
    store = Store(topic_index)
    ids, texts, vectors = _read_chunks(store, "topics")
    tok = get_tokenizer(topic_index)
    embedder = get_embedder(topic_index)
    params = TreeParams(cluster_tokens=topic_index.tree_cluster_tokens)
    runs = [
        tree_rows("topics", [], ids, texts, vectors, embedder.embed, tok, ExtractiveSummariser(tok, 60), params)
        for _ in range(2)
    ]
    first, second = ([(r.node_id, r.text, r.children, r.parent) for r in rows] for rows, _ in runs)
    assert first == second
    stored = {n.node_id for n in store.find(TreeNode, {"source_id": "topics"}, fields=[])}
    assert {r[0] for r in first} == stored  # same as the tree the ingest job built


def test_unchanged_source_is_not_rebuilt_and_changed_one_is_replaced(tmp_path: Path, topic_index: Settings) -> None:
    root = write_topic_corpus(tmp_path / "corpus")
    db = tmp_path / "db"
    shutil.copytree(topic_index.db_uri, db)
    settings = tree_settings(db)
    store = Store(settings)
    before = store.tree_pointer("topics")
    version = store.table(TREE_NODES).version
    old_ids = {n.node_id for n in store.find(TreeNode, {"source_id": "topics"}, fields=[])}

    summary = Writer(settings).run(str(root), name="topics")
    assert summary.changed == 0 and summary.tree is not None and not summary.tree.built
    assert store.table(TREE_NODES).version == version  # nothing written

    (root / "astronomy" / "astronomy-1.md").write_text("# Comets\n\nA comet's tail points away from the Sun.\n")
    summary = Writer(settings).run(str(root), name="topics")
    assert summary.tree is not None and summary.tree.built
    after = store.tree_pointer("topics")
    assert after.version != before.version and after.fingerprint != before.fingerprint
    nodes = [to_row(n) for n in store.find(TreeNode, {"source_id": "topics"})]
    assert {n["tree_version"] for n in nodes} == {after.version}  # the old tree is gone
    level1 = [n for n in nodes if n["level"] == 1]
    chunk_ids = {c.chunk_id for c in store.find(Chunk, fields=[])}
    assert set().union(*(n["children"] for n in level1)) == chunk_ids
    comet = {c.chunk_id for c in store.find(Chunk, {"key": "astronomy/astronomy-1.md"}, fields=[])}
    holders = {n["node_id"] for n in level1 if comet & set(n["children"])}
    assert holders and not holders & old_ids  # the changed file's chunks sit under rewritten summaries


def test_trees_can_be_switched_off(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nOne short page about bees and honey.\n")
    settings = tree_settings(tmp_path / "db", tree_build=False)
    summary = Writer(settings).run(str(root), name="tiny")
    assert summary.tree is None
    assert Store(settings).tree_pointer("tiny") is None


def test_extractive_summary_is_deterministic_deduplicated_and_within_budget(topic_index: Settings) -> None:
    tok = get_tokenizer(topic_index)
    texts = [
        "Bees make honey. The queen lays eggs in the comb. Bees make honey.",
        "The queen lays eggs in the comb. Workers collect pollen and nectar from flowers in the field.",
    ]
    summariser = ExtractiveSummariser(tok, budget=30)
    summary = summariser.summarise(texts)
    assert summary == summariser.summarise(texts)
    assert tok.count([summary])[0] <= 30
    assert summary.count("The queen lays eggs") <= 1
    long = "word " * 500
    assert tok.count([ExtractiveSummariser(tok, budget=20).summarise([long])])[0] <= 20


def test_tree_and_llm_settings() -> None:
    params = TreeParams.from_settings(Settings.from_env({}, tree_cluster_tokens=900))
    assert params.reducer == "pca" and params.cluster_tokens == 900
    with pytest.raises(ConfigError, match="THOTH_LLM_URL needs THOTH_LLM_MODEL"):
        Settings.from_env({"THOTH_LLM_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigError, match="THOTH_TREES=llm needs an LLM: set THOTH_LLM_MODEL"):
        Settings.from_env({"THOTH_TREES": "llm"})
    gemini = Settings.from_env({"THOTH_LLM_MODEL": "gemini-2.0-flash", "THOTH_TREES": "llm"})
    assert (gemini.llm_provider, gemini.tree_build, gemini.tree_summariser) == ("gemini", True, "llm")
    assert not Settings.from_env({"THOTH_TREES": "off"}).tree_build


def test_the_same_ingest_twice_keeps_the_tree(tmp_path: Path, onnx_cache: Path) -> None:
    """Two runs in a row over unchanged files, each in its own process (the second never loads the
    model, since nothing changed), then in this process with the model loaded: the tree is built once."""
    root = write_topic_corpus(tmp_path / "corpus", files_per_topic=2)
    db = tmp_path / "db"
    env = job_env()
    first = run_ingest("--source", str(root), "--db", str(db), env=env, **TREE_TUNING)
    assert first.returncode == 0, first.stderr
    settings = tree_settings(db, embed_backend="onnx", cache_dir=str(onnx_cache))
    store = Store(settings)
    pointer = store.tree_pointer("corpus")
    assert pointer and pointer.nodes > 0
    written = store.table(TREE_NODES).version

    second = run_ingest("--source", str(root), "--db", str(db), env=env, **TREE_TUNING)
    assert second.returncode == 0, second.stderr
    assert "up to date" in second.stdout + second.stderr
    for ingestor in (Writer(settings), Writer(settings, embedder=get_embedder(settings))):
        summary = ingestor.run(str(root))
        assert summary.tree is not None and not summary.tree.built, summary.render()
    assert store.tree_pointer("corpus") == pointer  # same version, same fingerprint, same times
    assert store.table(TREE_NODES).version == written  # no node re-summarised or written
