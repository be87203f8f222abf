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

import pytest
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR

from tests.conftest import LOOPBACK, LiveServer
from thoth.citation_urls import CitationUrlError
from thoth.config import ConfigError, Settings
from thoth.embed import EmbedderUnavailable
from thoth.errors import ClientError, NotFound, ServerFault, UpstreamError
from thoth.llm import LLMError
from thoth.mcp.correlation import correlation
from thoth.mcp.failures import Surface, to_client
from thoth.retrieval import tree
from thoth.retrieval.paging import CursorError
from thoth.retrieval.workshops import ScopeError
from thoth.source_ref import SourceRefError
from thoth.store import IndexMissing, ModelMismatch, StoreError
from thoth.ui.views import BadArgument
from thoth.writes.objects import SourceError


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
    response = LOOPBACK.get(f"{broken_server.url}/health")
    assert response.status_code == 503
    assert "chunks" in response.json()["reason"] and "cannot be read" in response.json()["reason"]

    db = tmp_path / "lancedb"
    shutil.copytree(indexed.db_uri, db)
    data_file = max((db / "documents.lance" / "data").iterdir(), key=lambda p: p.stat().st_size)
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    with LiveServer(replace(indexed, db_uri=str(db))) as live:
        truncated = LOOPBACK.get(f"{live.url}/health")
        assert truncated.status_code == 503 and "documents" in truncated.json()["reason"]


def test_health_hides_the_database_uri_when_auth_is_on(indexed: Settings) -> None:
    token = "reader-token-0123456789abcdef"
    with LiveServer(replace(indexed, auth_mode="tokens", auth_tokens=(token,))) as live:
        body = LOOPBACK.get(f"{live.url}/health").json()
        assert body["status"] == "ok" and "db_uri" not in body and indexed.db_uri not in str(body)


def test_get_mcp_answers_405_at_once(server: LiveServer) -> None:
    response = LOOPBACK.get(f"{server.url}/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert server.rpc("tools/list").status_code == 200  # POST still reaches the MCP endpoint


# -- the one mapping (thoth.mcp.failures.to_client): each class of thoth.errors -> what a client gets -------------


def test_every_error_class_sits_under_the_hierarchy_with_the_bases_callers_rely_on() -> None:
    clients = (
        CursorError, SourceRefError, CitationUrlError, ScopeError,
        BadArgument, NotFound,
    )  # fmt: skip
    assert all(issubclass(c, ClientError) and issubclass(c, ValueError) for c in clients)
    assert tree.NotFound is NotFound
    faults = (StoreError, IndexMissing, ModelMismatch, EmbedderUnavailable, SourceError)
    assert all(issubclass(c, ServerFault) and issubclass(c, RuntimeError) for c in faults)
    assert issubclass(LLMError, UpstreamError) and issubclass(LLMError, RuntimeError)
    assert issubclass(ConfigError, ValueError) and not issubclass(ConfigError, ClientError | ServerFault)
    mistake = ClientError("limit must be between 1 and 50, got 99", argument="limit")
    assert mistake.argument == "limit" and str(mistake) == "limit must be between 1 and 50, got 99"


@pytest.mark.parametrize(
    ("error", "surface", "expected"),
    [
        (ClientError("limit must be between 1 and 50", argument="limit"), "tool", ToolError),
        (ClientError("limit must be between 1 and 50", argument="limit"), "jsonrpc", ToolError),
        (ClientError("limit must be between 1 and 50", argument="limit"), "resource", ResourceError),
        (NotFound("dataset_id 'nope' is not indexed"), "tool", ToolError),
        (NotFound("dataset_id 'nope' is not indexed"), "jsonrpc", ToolError),
        (NotFound("dataset_id 'nope' is not indexed"), "resource", ResourceNotFoundError),
        (UpstreamError("the LLM answered HTTP 503"), "tool", ToolError),
        (UpstreamError("the LLM answered HTTP 503"), "jsonrpc", ToolError),
    ],
)
def test_a_callers_error_is_its_message_and_logs_no_fault(
    error: Exception, surface: Surface, expected: type, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="thoth.tools"):
        failure = to_client("some_tool", error, surface)
    assert type(failure) is expected and str(failure) == str(error)
    assert not caplog.records


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (IndexMissing("no index at /data/lancedb yet: run the ingest job"), "no index at /data/lancedb yet"),
        (EmbedderUnavailable("the model cannot be loaded"), "the model cannot be loaded"),
        (KeyError("secret-column"), "an internal error (KeyError)"),  # a bug: its message stays in the log
    ],
)
@pytest.mark.parametrize("surface", ["tool", "jsonrpc", "resource"])
def test_a_server_fault_is_the_server_fault_shape_with_the_correlation_id_logged_once(
    error: Exception, reason: str, surface: Surface, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="thoth.tools"), correlation(None) as cid:
        failure = to_client("some_tool", error, surface)
    assert str(failure).startswith(f"some_tool failed: {reason}")
    assert str(failure).endswith(f"; correlation id {cid} (the server log has the details)")
    assert "secret-column" not in str(failure)
    if surface == "tool":
        assert type(failure) is ToolError
    else:  # Qurio's tools and resources: JSON-RPC -32603, the id in `data` too
        assert type(failure) is MCPError and failure.error.code == INTERNAL_ERROR
        assert failure.error.data == {"correlationId": cid}
    assert [r.levelname for r in caplog.records] == ["ERROR"] and cid in caplog.records[0].getMessage()


def test_what_is_already_in_the_clients_words_passes_through() -> None:
    for already in (ToolError("x"), ResourceNotFoundError("y"), MCPError(INTERNAL_ERROR, "z")):
        assert to_client("some_tool", already, "jsonrpc") is already


def test_each_kind_of_failure_over_http(server: LiveServer) -> None:
    # a client error on the JSON-RPC surface (Qurio) stays a tool error naming the argument
    bad_cursor = server.rpc(
        "tools/call", {"name": "qurio_list_pages", "arguments": {"source_id": "handbook", "cursor": "bogus"}}
    ).json()["result"]
    assert bad_cursor["isError"] and "cursor" in bad_cursor["content"][0]["text"]
    # not found: a tool error there too, and -32602 on resources/read
    unknown = server.rpc("tools/call", {"name": "qurio_read_page", "arguments": {"url": "https://nowhere.test/x"}})
    assert unknown.json()["result"]["isError"] and "nowhere.test" in unknown.json()["result"]["content"][0]["text"]
    missing = server.rpc("resources/read", {"uri": "doc://handbook/no/such.md"}).json()["error"]
    assert missing["code"] == -32602 and "no/such.md" in missing["message"]
    # a client error on resources/list: -32602, the cursor named
    listed = server.rpc("resources/list", {"cursor": "bogus"}).json()["error"]
    assert listed["code"] == -32602 and "cursor" in listed["message"]


def test_a_server_fault_on_resources_read_is_minus_32603_with_the_correlation_id(
    broken_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="thoth.tools"):
        body = broken_server.rpc(
            "resources/read", {"uri": "chunk://handbook/any"}, headers={"X-Correlation-Id": "res-3"}
        ).json()
    assert body["error"]["code"] == -32603 and body["error"]["data"] == {"correlationId": "res-3"}
    assert body["error"]["message"].startswith("chunk failed: ") and "correlation id res-3" in body["error"]["message"]
    assert sum("res-3" in r.getMessage() for r in caplog.records) == 1
