"""Cloud Run log lines: JSON that parses, the trace from X-Cloud-Trace-Context, no tokens, no document text."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.conftest import LOOPBACK, LiveServer
from thoth.config import Settings
from thoth.logs import TRACE_KEY, JsonFormatter, TextFormatter, request_context, setup_logging

TOKEN = "static-token-for-log-test-0123456789"
TRACE = "105445aa7843bc8bf206b12000100000"
QUERY = "how to request time off"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Every log line of the process, formatted as on Cloud Run."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def lines(buffer: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


def test_json_lines_carry_the_trace_and_never_tokens_or_text(indexed: Settings, captured: io.StringIO) -> None:
    settings = replace(indexed, auth_mode="tokens", auth_tokens=(TOKEN,), gcp_project="demo-project")
    with LiveServer(settings) as live:
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "X-Cloud-Trace-Context": f"{TRACE}/1234567890;o=1",
        }
        search = {"name": "search_handbook", "arguments": {"query": QUERY, "num_results": 3}}
        response = live.rpc("tools/call", search, headers=headers)
        assert response.status_code == 200
        content = response.json()["result"]["structuredContent"]["results"][0]["content"]
        assert response.headers["x-correlation-id"] == TRACE
        other = live.rpc("tools/list", headers={"Authorization": f"Bearer {TOKEN}", "X-Request-Id": "req-42"})
        assert other.headers["x-correlation-id"] == "req-42"
        refused = live.rpc("tools/list", headers={"Authorization": "Bearer wrong-token-0123456789"})
        assert refused.status_code == 401

    entries = lines(captured)  # every line parses as JSON
    traced = [e for e in entries if e.get(TRACE_KEY) == f"projects/demo-project/traces/{TRACE}"]
    tool = next(e for e in traced if e.get("tool") == "search_handbook")  # written inside the tool call
    assert tool["severity"] == "INFO" and tool["latency_ms"] >= 0 and tool["correlationId"] == TRACE
    assert tool["logging.googleapis.com/spanId"] == "1234567890"
    assert tool["logging.googleapis.com/trace_sampled"] is True
    access = next(e for e in traced if e["logger"] == "thoth.http")
    http = access["http"]
    assert (http["requestMethod"], http["requestUrl"], http["status"]) == ("POST", "/mcp", 200)
    assert http["latency"].endswith("s")
    assert any(e.get("correlationId") == "req-42" for e in entries)
    assert any(e["logger"] == "thoth.auth" and "unknown token" in e["message"] for e in entries)
    raw = captured.getvalue()
    for secret in (TOKEN, "wrong-token-0123456789", QUERY, content[:40], "leave planner"):
        assert secret not in raw
    assert request_context.get() == {}  # nothing leaks past the request


def test_traceparent_and_no_trace(indexed: Settings, captured: io.StringIO) -> None:
    with LiveServer(replace(indexed, gcp_project="p")) as live:
        live.rpc("tools/list", headers={"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"})
        plain = live.rpc("tools/list")
    entries = [e for e in lines(captured) if e["logger"] == "thoth.http"]
    assert entries[0][TRACE_KEY] == f"projects/p/traces/{TRACE}"
    assert entries[0]["logging.googleapis.com/spanId"] == str(int("00f067aa0ba902b7", 16))
    assert TRACE_KEY not in entries[1] and entries[1]["correlationId"] == plain.headers["x-correlation-id"]


def test_text_logs_locally_json_on_cloud_run() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging(Settings.from_env({}))
        assert isinstance(root.handlers[0].formatter, TextFormatter)
        setup_logging(Settings.from_env({"K_SERVICE": "thoth"}))
        assert isinstance(root.handlers[0].formatter, JsonFormatter)
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_unparseable_trace_headers_are_ignored(indexed: Settings, captured: io.StringIO) -> None:
    with LiveServer(indexed) as live:
        response = live.rpc("tools/list", headers={"X-Cloud-Trace-Context": "nonsense", "X-Correlation-Id": "a b\x7f"})
        assert response.status_code == 200
        assert LOOPBACK.get(f"{live.url}/health").status_code == 200
    entries = [e for e in lines(captured) if e["logger"] == "thoth.http"]
    assert len(entries) == 1  # health probes write no access line
    assert TRACE_KEY not in entries[0] and len(entries[0]["correlationId"]) == 32
