"""The RAPTOR tools' bodies called directly (no HTTP): each returns its output model, built from records."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import tree_settings
from thoth.app import Thoth
from thoth.config import Settings
from thoth.mcp.outputs.raptor import Answer, DatasetList, Hits, Node, NodeList, Session
from thoth.mcp.toolsets import raptor
from thoth.records import Session as SessionRecord
from thoth.retrieval import tree


@pytest.fixture(scope="module")
def app(topic_index: Settings) -> Thoth:
    return Thoth(topic_index)


def test_list_datasets_shows_the_topic_tree(app: Thoth) -> None:
    data = raptor.list_datasets(app)
    assert isinstance(data, DatasetList)
    topics = next(d for d in data.datasets if d.id == "topics")
    assert topics.has_tree and topics.tree_levels >= 1 and topics.chunks > 0
    assert data.render().startswith("Available datasets:\n- topics (") and "summary nodes in" in data.render()


def test_retrieval_hits_are_numbered_nodes_with_uris(app: Thoth) -> None:
    hits = raptor.rag_retrieve(app, "topics", "telescopes and galaxies", top_k=6)
    assert isinstance(hits, Hits) and hits.mode == "collapsed"
    assert [h.rank for h in hits.results] == list(range(1, 7))
    for hit in hits.results:
        assert hit.uri == f"raptor://topics/nodes/{hit.node_id}" and hit.dataset_id == "topics"
        if hit.level == 0:  # a chunk: its chunk id, document and page
            assert hit.chunk_id == hit.node_id and hit.doc_id and hit.source
        else:  # a summary: none of a chunk's fields
            assert hit.chunk_id is None and hit.source is None and hit.children
    walked = raptor.retrieve_documents(app, "topics", "telescopes and galaxies", mode="traversal", top_k=4)
    assert walked.mode == "traversal" and len(walked.results) == 4
    assert walked.render().startswith("Retrieved documents:\n\n1. ")


def test_navigation_from_a_chunk_up_to_the_root_and_back_down(app: Thoth) -> None:
    chunk = next(h for h in raptor.rag_retrieve(app, "topics", "honey bees", top_k=10).results if h.level == 0)
    node = raptor.rag_node_get(app, chunk.node_id)
    assert isinstance(node, Node) and node.level == 0 and node.text == chunk.text
    path = raptor.rag_path_to_root(app, chunk.node_id)
    assert isinstance(path, NodeList) and path.relation == "path_to_root"
    assert [n.level for n in path.nodes] == list(range(len(path.nodes))) and len(path.nodes) >= 2
    assert path.render().startswith(f"Path to root: level 0 {chunk.node_id} -> level 1 ")
    parent = raptor.rag_node_navigation(app, chunk.node_id, "parent").nodes[0]
    assert parent.node_id == path.nodes[1].node_id
    kids = raptor.rag_node_children(app, parent.node_id)
    assert chunk.node_id in {k.node_id for k in kids.nodes} and kids.render().startswith("Child nodes:\n- chunk ")
    siblings = raptor.rag_node_navigation(app, chunk.node_id, "siblings")
    assert {n.node_id for n in siblings.nodes} == {k.node_id for k in kids.nodes} - {chunk.node_id}


def test_answer_cites_the_passages_it_quotes(app: Thoth) -> None:
    data = raptor.answer_question(app, "topics", "how do telescopes observe galaxies", top_k=5)
    assert isinstance(data, Answer) and data.answer_type == "extractive" and data.citations
    assert [c.number for c in data.citations] == list(range(1, len(data.citations) + 1))
    assert all(c.uri == f"raptor://topics/nodes/{c.node_id}" for c in data.citations)
    assert data.render().startswith("Answer (extractive): ") and "\n\nContext:\n[1] " in data.render()


def test_summarise_names_the_nodes_it_read(app: Thoth) -> None:
    ids = [h.node_id for h in raptor.rag_retrieve(app, "topics", "compilers", top_k=3).results]
    data = raptor.rag_summarize(app, ids + ids[:1])  # a repeated id is read once
    assert data.node_ids == ids and data.summary and data.render() == data.summary


def test_unknown_ids_are_errors_that_name_them(app: Thoth) -> None:
    with pytest.raises(tree.NotFound, match="unknown node_id 'nope'"):
        raptor.rag_node_get(app, "nope")
    with pytest.raises(tree.NotFound, match="unknown dataset_id 'nope'"):
        raptor.retrieve_documents(app, "nope", "anything")


def test_a_session_is_a_stored_record_of_its_owner(topic_index: Settings, tmp_path) -> None:
    db = tmp_path / "lancedb"
    shutil.copytree(topic_index.db_uri, db)
    app = Thoth(tree_settings(db))
    data = raptor.create_chat_session(app, "topics", "  Bees  ", owner="me")
    assert isinstance(data, Session) and data.title == "Bees" and data.dataset_id == "topics"
    stored = app.store.first(SessionRecord, {"session_id": data.session_id})
    assert isinstance(stored, SessionRecord) and stored.source_id == "topics" and stored.owner == "me"
    assert data.render() == f"Successfully created chat session {data.session_id} for dataset topics with title 'Bees'"
