"""The HTTP server over a real index: the seed's curl sequence, the SDK clients, errors, health."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import LOOPBACK, LiveServer, make_settings
from thoth.store import Store
from thoth.store.schema import META_EMBED_MODEL

CURL_ACCEPT = {"Accept": "application/json, text/event-stream"}


def tool_call(server: LiveServer, name: str, arguments: dict) -> dict:
    response = server.rpc("tools/call", {"name": name, "arguments": arguments}, id=3)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_seed_curl_sequence(server: LiveServer) -> None:
    # initialize, exactly as the seed sends it
    init = server.rpc(
        "initialize",
        {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1.0"}},
        headers=CURL_ACCEPT,
    )
    assert init.status_code == 200
    assert init.json()["result"]["serverInfo"]["name"] == "thoth"

    # tools/list with no Accept header and no session id, as the seed sends it
    listed = LOOPBACK.post(
        f"{server.url}/mcp",
        content=json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 2}),
        headers={"Content-Type": "application/json", "Accept": ""},
    )
    assert listed.status_code == 200, listed.text
    tools = {tool["name"]: tool for tool in listed.json()["result"]["tools"]}
    assert {"search_handbook", "list_topics", "list_tools"} <= set(tools)
    schema = tools["search_handbook"]["inputSchema"]["properties"]["num_results"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 20, 5)
    # the research surface stores its default collection in the index; RAPTOR creates sessions and ingests text
    writes = {"set_default_collection", "create_chat_session", "ingest_document"}
    writes |= {"add_source", "refresh_source", "remove_source", "cancel_run"}  # the sources surface (issue 52)
    assert all(tool["annotations"]["readOnlyHint"] for name, tool in tools.items() if name not in writes)
    assert all(tools[name]["annotations"]["readOnlyHint"] is False for name in writes & set(tools))

    result = tool_call(server, "search_handbook", {"query": "how to request time off", "num_results": 3})
    assert not result["isError"]
    hits = result["structuredContent"]["results"]
    assert len(hits) == 3
    assert hits[0]["source"] == "people/time-off.md"
    assert hits[0]["section"].startswith("Requesting time off")
    assert 0 < hits[0]["score"] <= 1 and hits[0]["similarity"] > 0.3
    assert "leave planner" in result["content"][0]["text"]


def test_keyword_match_on_exact_code(server: LiveServer) -> None:
    hits = tool_call(server, "search_handbook", {"query": "THOTH-E1042"})["structuredContent"]["results"]
    assert hits[0]["source"] == "engineering/errors.mdx"
    assert "THOTH-E1042" in hits[0]["content"]


def test_pdf_hits_cite_their_page(server: LiveServer) -> None:
    hits = tool_call(server, "search_handbook", {"query": "forklift operators hired"})["structuredContent"]["results"]
    assert hits[0]["source"] == "reports/quarterly.pdf"
    assert hits[0]["page"] == 2
    assert hits[0]["source_ref"] == "doc://handbook/reports/quarterly.pdf#page=2"


def test_list_topics(server: LiveServer) -> None:
    data = tool_call(server, "list_topics", {})["structuredContent"]
    assert data["unique_files"] == 5
    topics = {t["topic"]: t for t in data["topics"]}
    assert set(topics) == {"engineering", "people", "reports", "(top level)"}
    assert topics["engineering"]["files"] == 2
    assert data["total_documents"] == sum(t["chunks"] for t in data["topics"])
    counts = [t["chunks"] for t in data["topics"]]
    assert counts == sorted(counts, reverse=True)


def test_list_tools_tool(server: LiveServer) -> None:
    result = tool_call(server, "list_tools", {})
    names = sorted(t["name"] for t in result["structuredContent"]["tools"])
    listed = sorted(t["name"] for t in server.rpc("tools/list").json()["result"]["tools"])
    assert names == listed  # every enabled toolset's tools (all by default)
    assert {"list_tools", "list_topics", "search_handbook"} <= set(names)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"query": "x", "num_results": 21}, "num_results"),
        ({"query": "x", "num_results": 0}, "num_results"),
        ({"query": "x", "num_results": "many"}, "num_results"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": 42}, "query"),
    ],
)
def test_bad_arguments_are_tool_errors_naming_the_argument(server: LiveServer, arguments: dict, named: str) -> None:
    result = tool_call(server, "search_handbook", arguments)
    assert result["isError"]
    assert named in result["content"][0]["text"]


@pytest.mark.parametrize("query", ['"(:*AND OR', "'; DROP TABLE chunks; --", "???", "a" * 2000])
def test_odd_queries_do_not_break_search(server: LiveServer, query: str) -> None:
    result = tool_call(server, "search_handbook", {"query": query})
    assert not result["isError"], result


def test_protocol_errors_are_not_500(server: LiveServer) -> None:
    url = f"{server.url}/mcp"
    bad_json = LOOPBACK.post(url, content="{bad json", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == -32700
    unknown = server.rpc("no/such/method")
    assert unknown.json()["error"]["code"] == -32601
    not_a_request = LOOPBACK.post(url, content="[1, 2]", headers={"Content-Type": "application/json"})
    assert not_a_request.status_code < 500
    wrong_type = LOOPBACK.post(url, content="x", headers={"Content-Type": "text/plain"})
    assert 400 <= wrong_type.status_code < 500
    unknown_tool = tool_call(server, "no_such_tool", {})
    assert unknown_tool["isError"] and "no_such_tool" in unknown_tool["content"][0]["text"]


def test_health(server: LiveServer) -> None:
    for path in ("/", "/health"):
        response = LOOPBACK.get(server.url + path)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok"
        assert body["tables"]["chunks"] > 0 and body["tables"]["documents"] == 5
        assert body["index_model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_sdk_streamable_http_client(server: LiveServer) -> None:
    async def run() -> None:
        async with streamable_http_client(f"{server.url}/mcp") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert "search_handbook" in {t.name for t in tools.tools}
            result = await session.call_tool("search_handbook", {"query": "sick leave", "num_results": 2})
            assert not result.is_error
            assert result.structured_content["results"][0]["section"].endswith("Sick leave")

    anyio.run(run)


def test_sdk_legacy_sse_client(server: LiveServer) -> None:
    async def run() -> None:
        async with sse_client(f"{server.url}/mcp/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search_handbook", {"query": "deployments on Tuesday"})
            assert result.structured_content["results"][0]["source"] == "engineering/deploy.md"

    anyio.run(run)


def test_health_503_without_an_index(tmp_path: Path) -> None:
    with LiveServer(make_settings(tmp_path / "empty")) as live:
        response = LOOPBACK.get(f"{live.url}/health")
        assert response.status_code == 503
        assert "ingest" in response.json()["reason"]
        result = live.rpc("tools/call", {"name": "search_handbook", "arguments": {"query": "x"}}).json()["result"]
        assert result["isError"] and "ingest" in result["content"][0]["text"]


def test_health_503_on_a_corrupt_table(tmp_path: Path) -> None:
    db = tmp_path / "db"
    (db / "chunks.lance").mkdir(parents=True)
    (db / "chunks.lance" / "_versions").mkdir()
    (db / "chunks.lance" / "_versions" / "1.manifest").write_bytes(b"not a manifest")
    with LiveServer(make_settings(db)) as live:
        response = LOOPBACK.get(f"{live.url}/health")
        assert response.status_code == 503
        assert response.json()["status"] == "unavailable"


def test_model_mismatch_refuses_to_search(tmp_path: Path, indexed) -> None:
    import shutil

    db = tmp_path / "db"
    shutil.copytree(indexed.db_uri, db)
    settings = make_settings(db)
    Store(settings).metadata.set({META_EMBED_MODEL: "intfloat/e5-small-v2"})  # as if another model built it
    with LiveServer(settings) as live:
        result = live.rpc("tools/call", {"name": "search_handbook", "arguments": {"query": "time off"}}).json()
        assert result["result"]["isError"]
        message = result["result"]["content"][0]["text"]
        assert "intfloat/e5-small-v2" in message and "all-MiniLM-L6-v2" in message
        health = LOOPBACK.get(f"{live.url}/health")
        assert health.status_code == 503 and "intfloat/e5-small-v2" in health.json()["reason"]


def test_a_client_gone_mid_body_is_an_info_line(server: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 40: no ERROR traceback and no "POST /mcp 500" for a body that never came in full."""
    caplog.set_level(logging.INFO)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head.encode() + b'{"jsonrpc"')
    deadline = time.monotonic() + 10
    while not any("client went away" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
        time.sleep(0.05)
    gone = [r for r in caplog.records if "client went away" in r.getMessage()]
    assert gone and gone[0].levelno == logging.INFO
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text
    assert " 500 " not in caplog.text and "POST /mcp 499" in caplog.text, caplog.text
    assert server.rpc("tools/list").status_code == 200  # and the server serves on
