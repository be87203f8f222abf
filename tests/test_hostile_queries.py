"""Any text a person might type searches: every search tool, over HTTP, on the shared list of hostile queries.

Each answer is results, or a tool error that names `query`; never a JSON-RPC error, an HTTP 500 or
the SDK's bare "Error executing tool".
"""

from __future__ import annotations

import httpx
import pytest

from bench.hostile import HOSTILE_QUERIES
from tests.conftest import LiveServer

SEARCH_TOOLS = {
    "search_handbook": {"num_results": 3},
    "qurio_search": {"limit": 3},
    "search": {"top_k": 3},
    "rag_retrieve": {"dataset_id": "handbook", "top_k": 3},
    "retrieve_documents": {"dataset_id": "handbook", "top_k": 3},
    "answer_question": {"dataset_id": "handbook", "top_k": 3},
    "search_topic_context": {"limit": 3},
}


def ask(server: LiveServer, tool: str, query: str) -> httpx.Response:
    arguments = {**SEARCH_TOOLS[tool], "query": query}
    return server.rpc("tools/call", {"name": tool, "arguments": arguments})


@pytest.mark.parametrize("tool", sorted(SEARCH_TOOLS))
def test_every_search_tool_answers_any_text(library_server: LiveServer, tool: str) -> None:
    failures = []
    for query in HOSTILE_QUERIES:
        response = ask(library_server, tool, query)
        body = response.json() if response.status_code == 200 else {}
        result = body.get("result")
        if result is None:
            failures.append((query[:40], response.status_code, str(body.get("error") or response.text)[:200]))
            continue
        if result.get("isError"):
            message = result["content"][0]["text"]
            if "query" not in message or "Error executing tool" in message:
                failures.append((query[:40], "tool error", message[:200]))
    assert not failures, failures


def test_phrases_are_honoured(library_server: LiveServer) -> None:
    """A quoted phrase restricts keyword hits to chunks with those words in that order."""
    arguments = {"query": '"leave planner"', "alpha": 0.0, "limit": 5}
    response = library_server.rpc("tools/call", {"name": "qurio_search", "arguments": arguments})
    result = response.json()["result"]
    assert not result["isError"], result
    hits = result["structuredContent"]["results"]
    assert hits and all("leave planner" in h["content"].lower() for h in hits)
    reversed_ = {"query": '"planner leave"', "alpha": 0.0, "limit": 5}
    response = library_server.rpc("tools/call", {"name": "qurio_search", "arguments": reversed_})
    assert response.json()["result"]["structuredContent"]["results"] == []
