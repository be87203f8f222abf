"""RAPTOR trees updated in place: invariants after insert and delete, add-then-remove gives the tree back,
an event touches only its object's path, deleted text is never served, drift and forced rebuilds."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from ingest.__main__ import main as ingest_main
from tests.conftest import TREE_TUNING, tree_settings, write_topic_corpus
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Chunk, TreeNode, to_row
from thoth.retrieval import tree as reading
from thoth.retrieval.sources import listing
from thoth.store import Store
from thoth.writes.source_files import SourceObject
from thoth.writes.tree_update import node_id
from thoth.writes.writer import Writer

BREAD = (
    "# Bread\n\nKnead the dough for ten minutes until it is smooth and elastic. Let the dough rise in a warm "
    "place for an hour. Bake the loaf at two hundred degrees until the crust is golden.\n"
)
COMET = "# Comets\n\nA comet's tail always points away from the Sun, pushed by the solar wind.\n"


def current_nodes(store: Store, source_id: str = "topics") -> list[dict]:
    pointer = store.tree_pointer(source_id)
    nodes = store.find(TreeNode, {"source_id": source_id, "tree_version": pointer.version})
    return [to_row(n) for n in nodes]


def check_invariants(store: Store, source_id: str = "topics") -> list[dict]:
    """Every tree invariant; returns the nodes."""
    pointer = store.tree_pointer(source_id)
    nodes = current_nodes(store, source_id)
    by_id = {n["node_id"]: n for n in nodes}
    assert len(by_id) == len(nodes) == pointer.nodes
    chunk_ids = [c.chunk_id for c in store.find(Chunk, {"source_id": source_id}, fields=[])]
    # each chunk under exactly one level-1 node
    under = Counter(c for n in nodes if n["level"] == 1 for c in n["children"])
    assert set(under) == set(chunk_ids) and set(under.values()) == {1}
    # levels contiguous, root unique
    levels = sorted({n["level"] for n in nodes})
    assert levels == list(range(1, len(levels) + 1)) == list(range(1, pointer.levels + 1))
    top = [n for n in nodes if n["level"] == levels[-1]]
    assert len(top) == 1 and top[0]["parent"] is None
    assert [sum(1 for n in nodes if n["level"] == lv) for lv in levels] == list(pointer.layer_sizes)[1:]
    # parents and children agree, each node has one parent, ids are the hash of the children
    held = Counter(c for n in nodes if n["level"] > 1 for c in n["children"])
    for node in nodes:
        assert node["node_id"] == node_id(source_id, node["level"], list(node["children"]))
        assert node["children"] and node["text"]
        if node["level"] > 1:
            kids = [by_id[c] for c in node["children"]]
            assert all(k["level"] == node["level"] - 1 and k["parent"] == node["node_id"] for k in kids)
            assert node["leaf_count"] == sum(k["leaf_count"] for k in kids)
        else:
            assert node["leaf_count"] == len(node["children"])
        if node["parent"] is not None:
            assert held[node["node_id"]] == 1 and node["node_id"] in by_id[node["parent"]]["children"]
    return nodes


def snapshot(store: Store) -> set[tuple]:
    return {
        (n["node_id"], n["level"], n["text"], tuple(n["children"]), n["parent"], n["leaf_count"])
        for n in current_nodes(store)
    }


def ancestors(nodes: list[dict], leaves: set[str]) -> set[str]:
    """Node ids above any of `leaves` in a tree given as its nodes."""
    parent_of = {c: n["node_id"] for n in nodes for c in n["children"]}
    out: set[str] = set()
    for leaf in leaves:
        node = parent_of.get(leaf)
        while node is not None and node not in out:
            out.add(node)
            node = parent_of.get(node)
    return out


@pytest.fixture()
def copy(tmp_path: Path, topic_index: Settings) -> tuple[Path, Settings]:
    """A writable copy of the topic index and its corpus."""
    root = write_topic_corpus(tmp_path / "corpus")
    shutil.copytree(topic_index.db_uri, tmp_path / "db")
    return root, tree_settings(tmp_path / "db")


def test_a_full_build_keeps_every_invariant(topic_index: Settings) -> None:
    check_invariants(Store(topic_index))


def test_insert_updates_in_place_and_keeps_unchanged_nodes(copy: tuple[Path, Settings]) -> None:
    root, settings = copy
    store = Store(settings)
    before = {n["node_id"]: n for n in current_nodes(store)}
    (root / "cooking").mkdir()
    (root / "cooking" / "bread.md").write_text(BREAD)
    (root / "astronomy" / "astronomy-9.md").write_text(COMET)
    summary = Writer(settings).run(str(root), name="topics")
    tree = summary.tree
    assert tree is not None and tree.mode == "incremental" and tree.inserted == 2 and tree.deleted == 0
    nodes = check_invariants(store)
    after = {n["node_id"]: n for n in nodes}
    assert 0 < tree.rewritten < len(before) and tree.kept == len(set(before) & set(after))
    for nid in set(before) & set(after):  # a node that stayed keeps its text
        assert after[nid]["text"] == before[nid]["text"]
    assert any("dough" in n["text"] for n in nodes)  # the new text is summarised somewhere
    pointer = store.tree_pointer("topics")
    assert pointer.drift_chunks == 2 and pointer.build_chunks == 72 and pointer.drift == pytest.approx(2 / 72, abs=1e-3)


def test_a_document_added_then_removed_leaves_the_tree_as_it_was(copy: tuple[Path, Settings]) -> None:
    root, settings = copy
    store = Store(settings)
    original = snapshot(store)
    (root / "cooking").mkdir()
    (root / "cooking" / "bread.md").write_text(BREAD)
    (root / "astronomy" / "astronomy-9.md").write_text(COMET)
    Writer(settings).run(str(root), name="topics")
    assert snapshot(store) != original
    shutil.rmtree(root / "cooking")
    (root / "astronomy" / "astronomy-9.md").unlink()
    summary = Writer(settings).run(str(root), name="topics")
    assert summary.tree is not None and summary.tree.mode == "incremental" and summary.tree.deleted == 2
    check_invariants(store)
    assert snapshot(store) == original


def _obj(key: str, text: str) -> SourceObject:
    data = text.encode()
    return SourceObject(key=key, uri=key, size=len(data), read=lambda: data)


def test_events_touch_only_their_objects_path_and_deleted_text_is_not_served(copy: tuple[Path, Settings]) -> None:
    root, settings = copy
    store = Store(settings)
    ingestor = Writer(settings)
    uri = str(root.resolve())
    old = current_nodes(store)
    # a new object (as a finalize event does): only the new chunks' paths change
    key = "astronomy/astronomy-9.md"
    ingestor.write_keys("topics", [_obj(key, COMET)], {key}, name="topics", uri=uri)
    result = ingestor.update_tree("topics", policy="event")
    assert result is not None and result.mode == "incremental"
    new = check_invariants(store)
    comet = {c.chunk_id for c in store.find(Chunk, {"key": "astronomy/astronomy-9.md"}, fields=[])}
    path = ancestors(new, comet)
    old_ids = {n["node_id"] for n in old}
    assert {n["node_id"] for n in new} - old_ids <= path  # every new or renamed node is on the new chunk's path
    assert len(old_ids - {n["node_id"] for n in new}) <= len(path)  # the nodes renamed: at most one per level

    # the delete event: the comet's text leaves every summary, in place
    before = current_nodes(store)
    ingestor.write_keys("topics", [], {key}, name="topics", uri=uri)
    result = ingestor.update_tree("topics", policy="event")
    assert result is not None and result.mode == "incremental" and result.deleted == len(comet)
    after = check_invariants(store)
    assert not any("solar wind" in n["text"] for n in after)
    changed = {n["node_id"] for n in before} - {n["node_id"] for n in after}
    assert changed <= ancestors(before, comet) | {
        n["node_id"] for n in before if n["parent"] in ancestors(before, comet)
    }
    hits = reading.collapsed(store, get_embedder(settings), "topics", "comet tail solar wind", 20)
    assert not any("solar wind" in h.node.text for h in hits)


def test_a_tree_that_cannot_be_updated_in_place_is_marked_stale_and_not_served(copy: tuple[Path, Settings]) -> None:
    root, _ = copy
    # built with another summariser budget: the event path cannot continue that tree
    settings = tree_settings(Path(copy[1].db_uri), tree_summary_tokens=50)
    store = Store(settings)
    summary_id = next(n["node_id"] for n in current_nodes(store) if n["level"] == 1)
    ingestor = Writer(settings)
    ingestor.write_keys("topics", [], {"astronomy/astronomy-1.md"}, name="topics", uri=str(root.resolve()))
    result = ingestor.update_tree("topics", policy="event")
    assert result is not None and result.mode == "stale" and "stale" in result.render()
    assert store.tree_pointer("topics").stale
    hits = reading.collapsed(store, get_embedder(settings), "topics", "telescope galaxies", 20)
    assert hits and all(h.level == 0 for h in hits)  # chunks only: no summary of deleted text
    with pytest.raises(reading.NotFound):
        reading.get_node(store, summary_id)
    assert not next(d for d in listing(store) if d.source_id == "topics").has_tree
    # the next run rebuilds it
    summary = Writer(settings).run(str(root), name="topics")
    assert summary.tree is not None and summary.tree.mode == "full"
    assert not store.tree_pointer("topics").stale
    check_invariants(store)


def test_drift_past_the_threshold_rebuilds_in_the_run(
    copy: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, settings = copy
    (root / "astronomy" / "astronomy-9.md").write_text(COMET)
    monkeypatch.setattr("thoth.writes.tree.DRIFT_MAX", 0.001)
    tight = tree_settings(Path(settings.db_uri))
    summary = Writer(tight).run(str(root), name="topics")
    assert summary.tree is not None and summary.tree.mode == "full" and "drift" in summary.tree.reason
    pointer = Store(tight).tree_pointer("topics")
    assert pointer.drift_chunks == 0 and pointer.build_chunks == 73


def test_rebuild_trees_command_forces_a_full_build(copy: tuple[Path, Settings], capsys) -> None:
    root, settings = copy
    store = Store(settings)
    before = store.tree_pointer("topics")
    assert ingest_main(["--rebuild-trees", "--db", settings.db_uri], **TREE_TUNING) == 0
    out = capsys.readouterr().out
    assert "tree topics: built (forced)" in out
    after = store.tree_pointer("topics")
    assert after.version != before.version and after.fingerprint == before.fingerprint
    check_invariants(store)
