"""The RAPTOR tool surface over HTTP: every tool, the node resource, and the errors."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.conftest import LiveServer, call, tree_settings
from thoth.config import Settings
from thoth.records import Session
from thoth.store import Store


@pytest.fixture(scope="module")
def raptor(topic_index: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server over a copy of the topic index (ingest_document and sessions write to it)."""
    db = tmp_path_factory.mktemp("raptor") / "lancedb"
    shutil.copytree(topic_index.db_uri, db)
    with LiveServer(tree_settings(db)) as live:
        yield live


def ok(server: LiveServer, name: str, arguments: dict) -> dict:
    result = call(server, name, arguments)
    assert not result.get("isError"), result["content"][0]["text"]
    return result


def error(server: LiveServer, name: str, arguments: dict) -> str:
    result = call(server, name, arguments)
    assert result["isError"], result
    return result["content"][0]["text"]


def _top_node(server: LiveServer) -> dict:
    hits = ok(server, "rag_retrieve", {"dataset_id": "topics", "query": "honey bees", "levels_cap": 20, "top_k": 50})
    nodes = hits["structuredContent"]["results"]
    return max(nodes, key=lambda n: n["level"])


def test_tools_are_listed_with_schemas(raptor: LiveServer) -> None:
    tools = {t["name"]: t for t in raptor.rpc("tools/list").json()["result"]["tools"]}
    expected = {
        "list_datasets", "create_chat_session", "ingest_document", "answer_question", "retrieve_documents",
        "rag_retrieve", "rag_node_get", "rag_node_children", "rag_node_navigation", "rag_path_to_root",
        "rag_summarize",
    }  # fmt: skip
    assert expected <= set(tools)
    assert tools["rag_node_navigation"]["inputSchema"]["properties"]["direction"]["enum"] == ["parent", "siblings"]
    assert tools["rag_retrieve"]["annotations"]["readOnlyHint"] is True
    assert tools["ingest_document"]["annotations"]["readOnlyHint"] is False
    templates = raptor.rpc("resources/templates/list").json()["result"]["resourceTemplates"]
    assert "raptor://{dataset_id}/nodes/{node_id}" in [t["uriTemplate"] for t in templates]


def test_list_datasets(raptor: LiveServer) -> None:
    result = ok(raptor, "list_datasets", {})
    (topics,) = [d for d in result["structuredContent"]["datasets"] if d["id"] == "topics"]
    assert topics["has_tree"] and topics["tree_levels"] >= 2 and topics["documents"] == 16
    assert topics["summariser"] == "extractive-v1"
    assert "topics" in result["content"][0]["text"]


def test_create_chat_session_is_persisted(raptor: LiveServer) -> None:
    result = ok(raptor, "create_chat_session", {"dataset_id": "topics", "title": "Bees"})
    data = result["structuredContent"]
    assert data["title"] == "Bees" and data["dataset_id"] == "topics"
    assert f"Successfully created chat session {data['session_id']} for dataset topics" in result["content"][0]["text"]
    store: Store = raptor.server.config.app.state.thoth.store
    assert store.first(Session, {"session_id": data["session_id"]}).title == "Bees"
    default = ok(raptor, "create_chat_session", {"dataset_id": "topics"})["structuredContent"]
    assert default["title"] == "New Chat Session" and default["session_id"] != data["session_id"]
    assert "unknown dataset_id 'nope'" in error(raptor, "create_chat_session", {"dataset_id": "nope"})


@pytest.mark.parametrize("mode", ["collapsed", "traversal"])
def test_retrieve_documents_finds_the_topic(raptor: LiveServer, mode: str) -> None:
    args = {"dataset_id": "topics", "query": "how are container ships unloaded in the port", "mode": mode}
    result = ok(raptor, "retrieve_documents", args)
    hits = result["structuredContent"]["results"]
    assert hits and len(hits) <= 5
    best = hits[0]
    assert "harbour" in (best["source"] or "") or any(w in best["text"] for w in ("harbour", "ship", "port"))
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    if mode == "traversal":  # walked down from the top: summaries and chunks both kept
        assert {h["level"] for h in hits} and max(h["level"] for h in hits) >= 0
    assert result["content"][0]["text"].startswith("Retrieved documents:")


def test_rag_retrieve_returns_node_resources(raptor: LiveServer) -> None:
    result = ok(raptor, "rag_retrieve", {"dataset_id": "topics", "query": "telescopes and galaxies", "top_k": 4})
    content = result["content"]
    assert 1 <= len(content) <= 4 and all(c["type"] == "resource" for c in content)
    first = content[0]["resource"]
    assert first["uri"].startswith("raptor://topics/nodes/") and first["mimeType"] == "text/plain"
    meta = first["_meta"]
    assert set(meta) >= {"score", "chunk_id", "doc_id"}
    chunk = next(c["resource"] for c in content if c["resource"]["_meta"]["chunk_id"])
    assert chunk["_meta"]["doc_id"] and chunk["uri"].endswith(chunk["_meta"]["chunk_id"])
    assert any(w in first["text"].lower() for w in ("galax", "telescope", "star"))

    chunks_only = ok(raptor, "rag_retrieve", {"dataset_id": "topics", "query": "telescopes", "levels_cap": 0})
    assert all(c["resource"]["_meta"]["level"] == 0 for c in chunks_only["content"])

    walked = ok(raptor, "rag_retrieve", {"dataset_id": "topics", "query": "telescopes", "expand_k": 2, "top_k": 20})
    assert walked["structuredContent"]["mode"] == "traversal"
    levels = [r["level"] for r in walked["structuredContent"]["results"]]
    assert 0 in levels and max(levels) >= 2  # the walk kept nodes on the way down to the chunks

    strict = ok(raptor, "rag_retrieve", {"dataset_id": "topics", "query": "telescopes", "score_threshold": 0.99})
    assert strict["content"][0]["type"] == "text" and "No results" in strict["content"][0]["text"]
    reranked = ok(raptor, "rag_retrieve", {"dataset_id": "topics", "query": "telescopes", "reranker": True})
    sims = [r["similarity"] for r in reranked["structuredContent"]["results"]]
    assert sims == sorted(sims, reverse=True)


def test_node_get_children_navigation_and_path(raptor: LiveServer) -> None:
    top = _top_node(raptor)
    node = ok(raptor, "rag_node_get", {"node_id": top["node_id"]})["structuredContent"]
    assert node["level"] == top["level"] and node["children"] and node["summariser"] == "extractive-v1"

    kids = ok(raptor, "rag_node_children", {"node_id": top["node_id"]})["structuredContent"]["nodes"]
    assert [k["node_id"] for k in kids] == node["children"]
    assert all(k["level"] == node["level"] - 1 for k in kids)

    # down to a chunk, then back up
    current = node
    while current["level"] > 0:
        current = ok(raptor, "rag_node_children", {"node_id": current["node_id"]})["structuredContent"]["nodes"][0]
    chunk = current
    assert chunk["chunk_id"] == chunk["node_id"] and chunk["doc_id"] and chunk["source"].endswith(".md")
    assert ok(raptor, "rag_node_children", {"node_id": chunk["node_id"]})["structuredContent"]["nodes"] == []

    parents = ok(raptor, "rag_node_navigation", {"node_id": chunk["node_id"], "direction": "parent"})
    ups = parents["structuredContent"]["nodes"]
    assert ups and ups[0]["level"] == 1 and chunk["node_id"] in ups[0]["children"]
    assert parents["content"][0]["text"].startswith("Parent:")

    siblings = ok(raptor, "rag_node_navigation", {"node_id": chunk["node_id"], "direction": "siblings"})
    sibling_ids = {s["node_id"] for s in siblings["structuredContent"]["nodes"]}
    assert chunk["node_id"] not in sibling_ids
    assert sibling_ids <= {c for up in ups for c in up["children"]}

    path = ok(raptor, "rag_path_to_root", {"node_id": chunk["node_id"]})
    steps = path["structuredContent"]["nodes"]
    assert [s["level"] for s in steps] == list(range(len(steps)))
    assert steps[0]["node_id"] == chunk["node_id"] and steps[-1]["parent"] is None
    assert path["content"][0]["text"].startswith("Path to root:")


def test_resources_read(raptor: LiveServer) -> None:
    top = _top_node(raptor)
    uri = f"raptor://topics/nodes/{top['node_id']}"
    contents = raptor.rpc("resources/read", {"uri": uri}).json()["result"]["contents"]
    assert contents == [{"uri": uri, "mimeType": "text/plain", "text": top["text"]}]
    chunk = top
    while chunk["level"] > 0:
        chunk = ok(raptor, "rag_node_children", {"node_id": chunk["node_id"]})["structuredContent"]["nodes"][0]
    chunk_uri = f"raptor://topics/nodes/{chunk['node_id']}"
    assert raptor.rpc("resources/read", {"uri": chunk_uri}).json()["result"]["contents"][0]["text"] == chunk["text"]

    missing = raptor.rpc("resources/read", {"uri": "raptor://topics/nodes/nope"}).json()
    assert missing["error"]["code"] == -32602 and "nope" in missing["error"]["message"]
    other = raptor.rpc("resources/read", {"uri": f"raptor://elsewhere/nodes/{top['node_id']}"}).json()
    assert "error" in other and "elsewhere" in other["error"]["message"]


def test_rag_summarize(raptor: LiveServer) -> None:
    top = _top_node(raptor)
    kids = ok(raptor, "rag_node_children", {"node_id": top["node_id"]})["structuredContent"]["nodes"]
    result = ok(raptor, "rag_summarize", {"node_ids": [k["node_id"] for k in kids]})
    data = result["structuredContent"]
    assert data["summariser"] == "extractive-v1" and data["summary"]
    assert data["summary"] == result["content"][0]["text"]
    assert any(sentence[:40] in " ".join(k["text"] for k in kids) for sentence in data["summary"].split(". "))
    assert "node_ids" in error(raptor, "rag_summarize", {"node_ids": []})
    assert "unknown node_id 'nope'" in error(raptor, "rag_summarize", {"node_ids": [top["node_id"], "nope"]})


def test_answer_question_extractive_with_citations(raptor: LiveServer) -> None:
    args = {"dataset_id": "topics", "query": "What do beekeepers treat varroa mites with?"}
    result = ok(raptor, "answer_question", args)
    data = result["structuredContent"]
    assert data["answer_type"] == "extractive" and data["model"] is None
    assert "oxalic acid" in data["answer"] and "[" in data["answer"]
    numbers = {c["number"] for c in data["citations"]}
    cited = {int(n) for n in __import__("re").findall(r"\[(\d+)\]", data["answer"])}
    assert cited and cited <= numbers
    assert result["content"][0]["text"].startswith("Answer (extractive):")
    walked = ok(raptor, "answer_question", {**args, "mode": "traversal"})["structuredContent"]
    assert walked["mode"] == "traversal" and walked["citations"]


def test_answer_question_says_when_nothing_is_relevant(raptor: LiveServer) -> None:
    args = {"dataset_id": "topics", "query": "What is the VAT rate on restaurant invoices in Portugal?"}
    data = ok(raptor, "answer_question", args)["structuredContent"]
    assert data["answer_type"] == "no_context" and data["citations"] == []
    assert "No passage" in data["answer"]


def test_ingest_document_creates_a_dataset_and_updates_its_tree(raptor: LiveServer) -> None:
    text = "\n\n".join(
        f"Paragraph {i}. The lighthouse keeper trims the lamp wick at dusk and logs passing ships in the ledger."
        f" Storms in the autumn of year {1900 + i} flooded the lower room of the lighthouse."
        for i in range(12)
    )
    args = {"dataset_id": "lighthouse", "file_content": text, "source": "notes/keeper.md", "tags": ["history"]}
    result = ok(raptor, "ingest_document", args)
    data = result["structuredContent"]
    assert data["status"] == "ingested" and data["chunks"] >= 2 and data["key"] == "notes/keeper.md"
    assert result["content"][0]["text"].startswith(
        f"Successfully ingested document into dataset lighthouse. Document ID: {data['doc_id']}, Chunks:"
    )
    datasets = {d["id"]: d for d in ok(raptor, "list_datasets", {})["structuredContent"]["datasets"]}
    assert datasets["lighthouse"]["documents"] == 1 and datasets["lighthouse"]["has_tree"]
    assert datasets["lighthouse"]["kind"] == "text"
    hits = ok(raptor, "rag_retrieve", {"dataset_id": "lighthouse", "query": "lamp wick", "levels_cap": 0})
    assert "wick" in hits["content"][0]["resource"]["text"]

    again = ok(raptor, "ingest_document", args)["structuredContent"]
    assert again["status"] == "unchanged" and again["doc_id"] == data["doc_id"]
    second = ok(raptor, "ingest_document", {"dataset_id": "lighthouse", "file_content": "A second note on fog horns."})
    assert second["structuredContent"]["key"].startswith("documents/")
    datasets = {d["id"]: d for d in ok(raptor, "list_datasets", {})["structuredContent"]["datasets"]}
    assert datasets["lighthouse"]["documents"] == 2


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("rag_node_get", {"node_id": "nope"}, "unknown node_id 'nope'"),
        ("rag_node_children", {"node_id": "nope"}, "unknown node_id"),
        ("rag_path_to_root", {"node_id": "nope"}, "unknown node_id"),
        ("rag_node_navigation", {"node_id": "x", "direction": "up"}, "direction"),
        ("rag_node_navigation", {"node_id": "nope", "direction": "parent"}, "unknown node_id"),
        ("rag_retrieve", {"dataset_id": "nope", "query": "x"}, "unknown dataset_id 'nope'"),
        ("rag_retrieve", {"dataset_id": "topics", "query": "x", "top_k": 0}, "top_k"),
        ("rag_retrieve", {"dataset_id": "topics", "query": ""}, "query"),
        ("retrieve_documents", {"dataset_id": "topics", "query": "x", "mode": "sideways"}, "mode"),
        ("answer_question", {"dataset_id": "topics", "query": "x", "temperature": 3}, "temperature"),
        ("answer_question", {"dataset_id": "nope", "query": "bees"}, "unknown dataset_id"),
        ("ingest_document", {"dataset_id": "topics", "file_content": "x"}, "synced from"),
        ("ingest_document", {"dataset_id": "Bad Id!", "file_content": "x"}, "dataset_id"),
        ("ingest_document", {"dataset_id": "fresh", "file_content": "   "}, "file_content"),
        ("rag_summarize", {"node_ids": "abc"}, "node_ids"),
    ],
)
def test_errors_name_the_problem(raptor: LiveServer, tool: str, arguments: dict, named: str) -> None:
    assert named in error(raptor, tool, arguments)


def test_document_keys() -> None:
    from thoth.writes.documents import document_key

    assert document_key(b"x", "notes/a.md") == "notes/a.md"
    assert document_key(b"x", "https://example.com/blog/post") == "example.com/blog/post.txt"
    assert document_key(b"x", "../../etc/passwd") == "etc/passwd.txt"
    assert document_key(b"x", None).startswith("documents/") and document_key(b"x", None) == document_key(b"x", "")
