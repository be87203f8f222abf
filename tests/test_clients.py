"""What MCP clients build their user experience on, over HTTP against the real server: titles and version,
prompts, completions, readable citations (resources, resource_link items), logging and progress."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import LOOPBACK, LiveServer, call, make_settings

JSON_AND_SSE = {"Accept": "application/json, text/event-stream"}


def result(server: LiveServer, method: str, params: dict | None = None) -> dict:
    response = server.rpc(method, params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    return body["result"]


def error(server: LiveServer, method: str, params: dict | None = None) -> dict:
    response = server.rpc(method, params)
    body = response.json()
    assert "error" in body, body
    return body["error"]


# -- names ---------------------------------------------------------------------------------------------


def test_every_tool_has_a_title(library_server: LiveServer) -> None:
    tools = result(library_server, "tools/list")["tools"]
    assert len(tools) > 30  # every surface is served
    untitled = [t["name"] for t in tools if not t.get("title")]
    assert not untitled, f"add these to their toolset's titles (thoth/mcp/toolsets): {untitled}"
    titles = {t["name"]: t["title"] for t in tools}
    assert titles["search_handbook"] == "Search the handbook"
    assert len(set(titles.values())) == len(titles), "two tools share a title"


def test_server_reports_the_package_version(library_server: LiveServer) -> None:
    init = result(
        library_server,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert init["serverInfo"]["version"] == importlib.metadata.version("thoth")
    capabilities = init["capabilities"]
    assert {"prompts", "resources", "tools", "completions", "logging"} <= set(capabilities)


# -- prompts ---------------------------------------------------------------------------------------------


def test_prompts_list_with_described_arguments(library_server: LiveServer) -> None:
    prompts = {p["name"]: p for p in result(library_server, "prompts/list")["prompts"]}
    assert {"handbook_question", "answer_with_citations", "quiz_me", "explain_topic", "docs_lookup"} <= set(prompts)
    for prompt in prompts.values():
        assert prompt["title"] and prompt["description"]
        assert all(arg["description"] for arg in prompt["arguments"]), prompt
    quiz = {a["name"]: a for a in prompts["quiz_me"]["arguments"]}
    assert quiz["workshop"]["required"] and not quiz["exerciseNumber"].get("required")


def test_prompt_get_steers_to_the_tools(library_server: LiveServer) -> None:
    got = result(
        library_server,
        "prompts/get",
        {"name": "quiz_me", "arguments": {"workshop": "caching-fundamentals", "exerciseNumber": "2"}},
    )
    text = got["messages"][0]["content"]["text"]
    assert got["messages"][0]["role"] == "user"
    assert 'retrieve_learning_context(workshop="caching-fundamentals", exerciseNumber=2)' in text
    cited = result(library_server, "prompts/get", {"name": "answer_with_citations", "arguments": {"question": "q?"}})
    assert "fetch_chunk_partition" in cited["messages"][0]["content"]["text"]


def test_prompt_get_unknown_name_or_missing_argument_is_invalid_params(library_server: LiveServer) -> None:
    unknown = error(library_server, "prompts/get", {"name": "no_such_prompt", "arguments": {}})
    assert unknown["code"] == -32602 and "no_such_prompt" in unknown["message"]
    missing = error(library_server, "prompts/get", {"name": "handbook_question", "arguments": {}})
    assert missing["code"] == -32602 and "question" in missing["message"]


# -- completions -----------------------------------------------------------------------------------------


def complete(server: LiveServer, ref: dict, name: str, value: str, context: dict | None = None) -> dict:
    params: dict = {"ref": ref, "argument": {"name": name, "value": value}}
    if context:
        params["context"] = {"arguments": context}
    return result(server, "completion/complete", params)["completion"]


def test_completes_prompt_arguments_by_prefix(library_server: LiveServer) -> None:
    quiz = {"type": "ref/prompt", "name": "quiz_me"}
    found = complete(library_server, quiz, "workshop", "CACH")  # case-insensitive
    assert found == {"values": ["caching-fundamentals"], "total": 1, "hasMore": False}
    everything = complete(library_server, {"type": "ref/prompt", "name": "answer_with_citations"}, "collection", "")
    assert everything["values"] == sorted(everything["values"])
    assert {"handbook", "docs", "caching-fundamentals", "hooks-mini"} <= set(everything["values"])
    assert everything["total"] == len(everything["values"])
    exercises = complete(library_server, quiz, "exerciseNumber", "", {"workshop": "hooks-mini"})
    assert exercises["values"] == ["1"]


def test_completes_resource_template_variables(library_server: LiveServer) -> None:
    page_template = {"type": "ref/resource", "uri": "doc://{collection}/{+key}#page={page}"}
    assert "handbook" in complete(library_server, page_template, "collection", "hand")["values"]
    keys = complete(library_server, page_template, "key", "reports/", {"collection": "handbook"})["values"]
    assert keys == ["reports/quarterly.pdf"]
    pages = complete(
        library_server, page_template, "page", "", {"collection": "handbook", "key": "reports/quarterly.pdf"}
    )
    assert pages["values"] == ["1", "2", "3"]
    raptor = {"type": "ref/resource", "uri": "raptor://{dataset_id}/nodes/{node_id}"}
    assert complete(library_server, raptor, "dataset_id", "DO")["values"] == ["docs"]


def test_unknown_prompt_or_template_completes_nothing(library_server: LiveServer) -> None:
    empty = {"values": [], "total": 0, "hasMore": False}
    assert complete(library_server, {"type": "ref/prompt", "name": "nope"}, "x", "a") == empty
    assert complete(library_server, {"type": "ref/resource", "uri": "nope://{x}"}, "x", "") == empty
    assert complete(library_server, {"type": "ref/prompt", "name": "handbook_question"}, "question", "how") == empty


# -- readable citations ----------------------------------------------------------------------------------


def read(server: LiveServer, uri: str) -> dict:
    contents = result(server, "resources/read", {"uri": uri})["contents"]
    assert len(contents) == 1 and contents[0]["uri"] == uri
    return contents[0]


def test_citations_of_search_hits_read_back(library_server: LiveServer) -> None:
    hit = call(library_server, "search_handbook", {"query": "forklift operators hired"})
    first = hit["structuredContent"]["results"][0]
    assert first["source_ref"] == "doc://handbook/reports/quarterly.pdf#page=2"
    page = read(library_server, first["source_ref"])
    assert "eleven forklift operators" in page["text"] and "harbour contract" not in page["text"]
    whole = read(library_server, "doc://handbook/reports/quarterly.pdf")
    assert "harbour contract" in whole["text"] and "Flooding" in whole["text"]
    section = read(library_server, "doc://handbook/people/time-off.md")["text"]
    assert "# Requesting time off" in section and "## Sick leave" in section


def test_chunk_resource_and_missing_citations(library_server: LiveServer) -> None:
    hits = call(library_server, "search", {"query": "sick leave", "collection": "handbook"})["structuredContent"]
    chunk_id = hits["hits"][0]["id"]
    text = read(library_server, f"chunk://handbook/{chunk_id}")["text"]
    assert "Sick leave" in text
    for uri in ("doc://handbook/no/such.md", "doc://handbook/reports/quarterly.pdf#page=9", "chunk://handbook/nope"):
        failure = error(library_server, "resources/read", {"uri": uri})
        assert failure["code"] == -32602, failure
    assert (
        "pages 1 to 3"
        in error(library_server, "resources/read", {"uri": "doc://handbook/reports/quarterly.pdf#page=9"})["message"]
    )


def test_resources_list_pages_with_a_cursor(library_server: LiveServer) -> None:
    seen, cursor = [], None
    while True:
        page = result(library_server, "resources/list", {"cursor": cursor} if cursor else {})
        seen += page["resources"]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    uris = [r["uri"] for r in seen]
    assert "doc://handbook/reports/quarterly.pdf" in uris and "doc://docs/go-client.md" in uris
    assert len(uris) == len(set(uris))
    quarterly = next(r for r in seen if r["uri"] == "doc://handbook/reports/quarterly.pdf")
    assert quarterly["title"] == "Quarterly Report"
    bad = error(library_server, "resources/list", {"cursor": "not-a-cursor"})
    assert bad["code"] == -32602


@pytest.mark.parametrize(
    "tool,arguments,hits",
    [("search_handbook", {"query": "time off"}, "results"), ("search", {"query": "deploy"}, "hits")],
)
def test_search_results_carry_resource_links(library_server: LiveServer, tool: str, arguments: dict, hits: str) -> None:
    found = call(library_server, tool, arguments)
    links = [c for c in found["content"] if c["type"] == "resource_link"]
    refs = {hit["source_ref"] for hit in found["structuredContent"][hits]}
    assert links and {link["uri"] for link in links} == refs
    assert found["content"][0]["type"] == "text"  # the readable rendering stays first
    for link in links:
        assert link["name"] and link["uri"].startswith("doc://")
        assert read(library_server, link["uri"])["text"]


# -- logging ---------------------------------------------------------------------------------------------


def test_logging_set_level(library_server: LiveServer) -> None:
    assert result(library_server, "logging/setLevel", {"level": "warning"}) == {}
    bad = error(library_server, "logging/setLevel", {"level": "loud"})
    assert bad["code"] == -32602


def sse_messages(response: httpx.Response) -> list[dict]:
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers
    return [
        json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()
    ]


def post(server: LiveServer, method: str, params: dict, accept: str = "application/json, text/event-stream"):
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return LOOPBACK.post(f"{server.url}/mcp", json=body, headers={"Accept": accept}, timeout=120)


def test_tool_calls_log_an_info_line_to_a_listening_client(library_server: LiveServer) -> None:
    params = {"name": "search_handbook", "arguments": {"query": "time off"}, "_meta": {"progressToken": "t1"}}
    messages = sse_messages(post(library_server, "tools/call", params))
    logs = [m["params"] for m in messages if m.get("method") == "notifications/message"]
    assert logs == [{"level": "info", "logger": "thoth", "data": logs[0]["data"]}]
    assert logs[0]["data"].startswith("search_handbook answered in ") and logs[0]["data"].endswith(": 5 results")
    assert messages[-1]["id"] == 7 and not messages[-1]["result"]["isError"]


def test_without_a_progress_token_the_answer_stays_plain_json(library_server: LiveServer) -> None:
    response = post(library_server, "tools/call", {"name": "search_handbook", "arguments": {"query": "time off"}})
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"]["results"]


# -- progress --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def writable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server over an index of its own (ingest_document writes), with small chunks: many of them."""
    with LiveServer(make_settings(Path(tmp_path_factory.mktemp("progress")) / "lancedb", chunk_tokens=40)) as live:
        yield live


def test_ingest_document_reports_progress(writable: LiveServer) -> None:
    text = "\n\n".join(
        f"Note {i}. The ferry to the island leaves at {6 + i % 12} o'clock and carries {i * 3} bicycles."
        for i in range(120)
    )
    params = {
        "name": "ingest_document",
        "arguments": {"dataset_id": "ferries", "file_content": text, "source": "timetable.md"},
        "_meta": {"progressToken": "ingest-1"},
    }
    messages = sse_messages(post(writable, "tools/call", params))
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    final = messages[-1]["result"]
    assert not final["isError"], final
    chunks = final["structuredContent"]["chunks"]
    assert chunks > 32  # more than one step of embedding
    assert all(p["progressToken"] == "ingest-1" for p in progress)
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)), "progress only increases"
    embedded = [p for p in progress if p.get("total") == chunks]
    assert embedded[-1]["progress"] == chunks and embedded[-1]["message"] == f"embedded {chunks} of {chunks} chunks"
    assert len(embedded) >= 2


def test_answer_question_and_rag_summarize_report_progress(writable: LiveServer) -> None:
    text = "High tide at the harbour comes twice a day. The tide table is posted at the ferry office every week."
    ingested = call(writable, "ingest_document", {"dataset_id": "tides", "file_content": text})
    assert not ingested["isError"], ingested

    def progress_of(name: str, arguments: dict) -> tuple[list[dict], dict]:
        params = {"name": name, "arguments": arguments, "_meta": {"progressToken": 5}}
        messages = sse_messages(post(writable, "tools/call", params))
        assert not messages[-1]["result"]["isError"], messages[-1]
        return [m["params"] for m in messages if m.get("method") == "notifications/progress"], messages[-1]["result"]

    steps, answered = progress_of("answer_question", {"dataset_id": "tides", "query": "when is high tide?"})
    assert steps == [{"progressToken": 5, "progress": 0, "total": 1, "message": "retrieving passages and answering"}]
    node = answered["structuredContent"]["citations"][0]["node_id"]
    steps, _ = progress_of("rag_summarize", {"node_ids": [node]})
    assert [(s["progress"], s["total"]) for s in steps] == [(0, 1), (1, 1)]
    assert steps[0]["message"].startswith("summarising 1 nodes")


def test_explain_topic_embeds_the_dataset_overview(writable: LiveServer) -> None:
    text = "\n\n".join(
        f"Lighthouse {i} guides ships past the reef with a lamp that turns every {i + 5} seconds." for i in range(30)
    )
    assert not call(writable, "ingest_document", {"dataset_id": "lights", "file_content": text})["isError"]
    got = result(
        writable, "prompts/get", {"name": "explain_topic", "arguments": {"topic": "lamps", "dataset": "lights"}}
    )
    *overview, instructions = got["messages"]
    assert overview and all(m["content"]["type"] == "resource" for m in overview)
    uri = overview[0]["content"]["resource"]["uri"]
    assert uri.startswith("raptor://lights/nodes/")
    assert read(writable, uri)["text"] == overview[0]["content"]["resource"]["text"]
    assert 'dataset_id="lights"' in instructions["content"]["text"]
