"""Every failure says what went wrong: one shape for the server's own faults, on every surface, over HTTP.

A copy of the test index whose chunk data files are gone is a real server fault (the tables list, the
data cannot be read). Client mistakes stay tool errors in the words of the argument; neither echoes
more than a short prefix of an argument, in the answer or in the log.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from thoth.config import Settings


@pytest.fixture(scope="module")
def broken_server(indexed: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = tmp_path_factory.mktemp("broken") / "lancedb"
    shutil.copytree(indexed.db_uri, db)
    for data_file in (db / "chunks.lance" / "data").iterdir():
        data_file.unlink()
    with LiveServer(replace(indexed, db_uri=str(db))) as live:
        yield live


def test_a_server_fault_has_one_shape_with_a_correlation_id_in_the_log(
    broken_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"X-Correlation-Id": "fault-check-1"}
    with caplog.at_level(logging.ERROR, logger="thoth.tools"):
        response = broken_server.rpc(
            "tools/call", {"name": "search_handbook", "arguments": {"query": "time off"}}, headers=headers
        )
    result = response.json()["result"]
    message = result["content"][0]["text"]
    assert result["isError"] and message.startswith("search_handbook failed: ")
    assert "correlation id fault-check-1" in message and "Error executing tool" not in message
    assert any("fault-check-1" in r.getMessage() for r in caplog.records)

    # the JSON-RPC surface (qurio): -32603, the same message shape, the id in data too
    body = broken_server.rpc(
        "tools/call", {"name": "qurio_search", "arguments": {"query": "time off"}}, headers={"X-Correlation-Id": "q-2"}
    ).json()
    assert body["error"]["code"] == -32603
    assert (
        body["error"]["message"].startswith("qurio_search failed: ")
        and "correlation id q-2" in body["error"]["message"]
    )
    assert body["error"]["data"]["correlationId"] == "q-2"


def test_bad_arguments_are_named_without_their_values(server: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    huge = "x" * 1_000_000
    with caplog.at_level(logging.DEBUG):
        response = server.rpc("tools/call", {"name": "search_handbook", "arguments": {"query": huge}})
    result = response.json()["result"]
    message = result["content"][0]["text"]
    assert result["isError"] and message.startswith("invalid arguments: query:") and "2000" in message
    assert "xxxxxxxxxx" not in message and "Error executing tool" not in message
    assert "x" * 100 not in caplog.text
    unknown = server.rpc("tools/call", {"name": "no_such_tool", "arguments": {}}).json()
    text = unknown.get("result", {}).get("content", [{}])[0].get("text") or unknown["error"]["message"]
    assert "no_such_tool" in text and "Error executing tool" not in text


def test_client_mistakes_are_tool_errors_in_the_words_of_the_argument(server: LiveServer) -> None:
    result = server.rpc(
        "tools/call", {"name": "retrieve_documents", "arguments": {"dataset_id": "nope", "query": "x"}}
    ).json()["result"]
    assert result["isError"] and "nope" in result["content"][0]["text"]
    assert not result["content"][0]["text"].startswith("Error executing tool")


# -- /health and GET /mcp ---------------------------------------------------------------------------


def test_health_is_503_when_a_data_file_is_missing_or_truncated(
    broken_server: LiveServer, indexed: Settings, tmp_path: Path
) -> None:
    response = httpx.get(f"{broken_server.url}/health")
    assert response.status_code == 503
    assert "chunks" in response.json()["reason"] and "cannot be read" in response.json()["reason"]

    db = tmp_path / "lancedb"
    shutil.copytree(indexed.db_uri, db)
    data_file = max((db / "documents.lance" / "data").iterdir(), key=lambda p: p.stat().st_size)
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    with LiveServer(replace(indexed, db_uri=str(db))) as live:
        truncated = httpx.get(f"{live.url}/health")
        assert truncated.status_code == 503 and "documents" in truncated.json()["reason"]


def test_health_hides_the_database_uri_when_auth_is_on(indexed: Settings) -> None:
    token = "reader-token-0123456789abcdef"
    with LiveServer(replace(indexed, auth_mode="tokens", auth_tokens=(token,))) as live:
        body = httpx.get(f"{live.url}/health").json()
        assert body["status"] == "ok" and "db_uri" not in body and indexed.db_uri not in str(body)


def test_get_mcp_answers_405_at_once(server: LiveServer) -> None:
    response = httpx.get(f"{server.url}/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert server.rpc("tools/list").status_code == 200  # POST still reaches the MCP endpoint
