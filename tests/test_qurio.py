"""The Qurio surface over HTTP with real tables: search with alpha and filters, sources, pages, URLs,
whole-page reads without the chunker's overlap, correlation ids and JSON-RPC -32603 errors."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import (
    HANDBOOK_BASE_URL,
    LONG_PAGE_URL,
    MILESTONES,
    WORKSHOP,
    LiveServer,
    call,
    error_text,
    make_settings,
    ok,
)
from thoth.logs import JsonFormatter
from thoth.mcp.outputs.qurio import READ_HINT
from thoth.records import Chunk
from thoth.store import Store

ERROR_CODE = "K7-0042"  # once, in one workshop code file (and so in that step's diff)
PARAPHRASE = "remember earlier answers so slow calculations never repeat"  # no word shared with the memo notes


@contextmanager
def json_log_lines() -> Iterator[list[dict]]:
    """Every log line written meanwhile (by the server's threads too), formatted as on Cloud Run."""
    lines: list[dict] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(json.loads(self.format(record)))

    handler, root = Collect(), logging.getLogger()
    handler.setFormatter(JsonFormatter())
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_tools_and_their_schemas(library_server: LiveServer) -> None:
    tools = {t["name"]: t for t in library_server.rpc("tools/list").json()["result"]["tools"]}
    assert {"qurio_search", "qurio_list_sources", "qurio_list_pages", "qurio_read_page"} <= set(tools)
    props = tools["qurio_search"]["inputSchema"]["properties"]
    assert (props["alpha"]["minimum"], props["alpha"]["maximum"], props["alpha"]["default"]) == (0.0, 1.0, 0.5)
    assert (props["limit"]["maximum"], props["limit"]["default"]) == (50, 10)
    assert "ctx" not in props  # the request context is injected, never an argument
    assert tools["qurio_search"]["annotations"]["readOnlyHint"]


def test_search_results_carry_fields_and_the_read_hint(library_server: LiveServer) -> None:
    result = call(library_server, "qurio_search", {"query": "how to request time off"})
    assert not result["isError"]
    hits = result["structuredContent"]["results"]
    assert 1 <= len(hits) <= 10
    assert hits[0]["url"] == f"{HANDBOOK_BASE_URL}/people/time-off"  # the handbook's configured base URL
    for hit in hits:
        assert hit["title"] and hit["type"] in ("text", "code", "table", "diff") and hit["source_id"] and hit["url"]
        assert hit["content"]
    text = result["content"][0]["text"]
    assert text.rstrip().endswith(READ_HINT)
    assert "SourceID: handbook" in text and "Type: " in text


def test_alpha_zero_finds_the_exact_error_code_that_vector_search_misses(library_server: LiveServer) -> None:
    keyword = ok(library_server, "qurio_search", {"query": ERROR_CODE, "alpha": 0.0, "limit": 5})["results"]
    assert keyword and ERROR_CODE in keyword[0]["content"]
    assert keyword[0]["source_id"] == "caching-fundamentals"
    vector = ok(library_server, "qurio_search", {"query": ERROR_CODE, "alpha": 1.0, "limit": 5})["results"]
    assert len(vector) == 5
    assert not any(ERROR_CODE in hit["content"] for hit in vector)


def test_alpha_one_finds_the_paraphrase_that_keyword_search_misses(library_server: LiveServer) -> None:
    vector = ok(library_server, "qurio_search", {"query": PARAPHRASE, "alpha": 1.0, "limit": 3})["results"]
    assert any("lookup table keyed by its" in hit["content"] for hit in vector)
    keyword = ok(library_server, "qurio_search", {"query": PARAPHRASE, "alpha": 0.0, "limit": 50})["results"]
    assert not any("lookup table keyed by its" in hit["content"] for hit in keyword)


def test_filters_on_type_and_language(library_server: LiveServer) -> None:
    hits = ok(
        library_server, "qurio_search", {"query": "http get request", "filters": {"type": "code", "language": "go"}}
    )
    assert hits["results"]
    assert all(h["type"] == "code" and h["language"] == "go" for h in hits["results"])
    diffs = ok(library_server, "qurio_search", {"query": "cache", "filters": {"type": ["diff"]}, "limit": 50})
    assert diffs["results"] and all(h["type"] == "diff" for h in diffs["results"])
    scoped = ok(library_server, "qurio_search", {"query": "cache", "source_id": "docs", "limit": 50})["results"]
    assert scoped and {h["source_id"] for h in scoped} == {"docs"}


@pytest.mark.parametrize(
    "value",
    ["code' OR 1=1 --", "code') OR ('1'='1", 'code" OR "1"="1', "x'; DROP TABLE chunks; --", "%", "code\\'"],
)
def test_filter_values_cannot_change_the_query(library_server: LiveServer, value: str) -> None:
    for alpha in (0.0, 0.5):
        result = call(library_server, "qurio_search", {"query": "cache", "alpha": alpha, "filters": {"type": value}})
        assert not result["isError"]
        assert result["structuredContent"]["results"] == []  # no chunk has that content type
    assert ok(library_server, "qurio_search", {"query": "cache", "alpha": 0.0})["results"]  # the table is intact


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"query": "cache", "filters": {"type = 'code' OR 1=1 --": "x"}}, "allowed"),
        ({"query": "cache", "filters": {"vector": "x"}}, "allowed"),
        ({"query": "cache", "filters": {"exercise_number": "1 OR 1=1"}}, "exercise_number"),
        ({"query": "cache", "source_id": "handbook' OR '1'='1"}, "source_id"),
        ({"query": "cache", "alpha": 1.5}, "alpha"),
        ({"query": "cache", "limit": 51}, "limit"),
    ],
)
def test_bad_search_arguments_are_tool_errors(library_server: LiveServer, arguments: dict, named: str) -> None:
    assert named in error_text(library_server, "qurio_search", arguments)


def test_list_sources(library_server: LiveServer) -> None:
    result = call(library_server, "qurio_list_sources", {})
    sources = {s["id"]: s for s in result["structuredContent"]["sources"]}
    assert {k: s["type"] for k, s in sources.items()} == {
        "caching-fundamentals": "workshop",
        "docs": "handbook",
        "handbook": "handbook",
        "hooks-mini": "workshop",
    }
    assert sources["caching-fundamentals"]["name"] == "Caching Fundamentals"
    assert "caching-fundamentals" in result["content"][0]["text"]


def test_list_pages_pages_through_a_source_with_a_cursor(library_server: LiveServer) -> None:
    first = ok(library_server, "qurio_list_pages", {"source_id": "caching-fundamentals", "limit": 3})
    assert first["total"] == 8 and len(first["pages"]) == 3 and first["nextCursor"]
    seen = list(first["pages"])
    cursor = first["nextCursor"]
    while cursor:
        page = ok(
            library_server, "qurio_list_pages", {"source_id": "caching-fundamentals", "limit": 3, "cursor": cursor}
        )
        seen += page["pages"]
        cursor = page["nextCursor"]
    whole = ok(library_server, "qurio_list_pages", {"source_id": "caching-fundamentals", "limit": 500})["pages"]
    assert seen == whole and len({p["id"] for p in seen}) == 8
    assert all(p["url"].startswith(WORKSHOP.resolve().as_uri() + "/exercises") for p in seen)
    other = error_text(library_server, "qurio_list_pages", {"source_id": "docs", "cursor": first["nextCursor"]})
    assert "cursor" in other
    assert "known sources" in error_text(library_server, "qurio_list_pages", {"source_id": "nope"})


def test_every_document_has_a_url_of_the_right_kind(library_server: LiveServer) -> None:
    handbook = ok(library_server, "qurio_list_pages", {"source_id": "handbook"})["pages"]
    urls = {p["path"]: p["url"] for p in handbook}
    assert urls["people/time-off.md"] == f"{HANDBOOK_BASE_URL}/people/time-off"
    assert urls["index.md"] == f"{HANDBOOK_BASE_URL}/"
    assert urls["reports/quarterly.pdf"] == f"{HANDBOOK_BASE_URL}/reports/quarterly.pdf"
    docs = {p["path"]: p["url"] for p in ok(library_server, "qurio_list_pages", {"source_id": "docs"})["pages"]}
    assert docs["release-history.md"] == LONG_PAGE_URL  # front matter canonical URL
    assert docs["go-client.md"].startswith("file:///") and docs["go-client.md"].endswith("/go-client.md")


def test_read_page_by_each_kind_of_url(library_server: LiveServer) -> None:
    page = ok(library_server, "qurio_read_page", {"url": f"{HANDBOOK_BASE_URL}/people/time-off"})
    assert page["path"] == "people/time-off.md" and "leave planner" in page["content"]
    assert page["content"].startswith("# Requesting time off") and "## Sick leave" in page["content"]
    index = ok(library_server, "qurio_read_page", {"url": f"{HANDBOOK_BASE_URL}/"})
    assert index["path"] == "index.md"
    pdf = ok(library_server, "qurio_read_page", {"url": f"{HANDBOOK_BASE_URL}/reports/quarterly.pdf"})
    assert "[page 2]" in pdf["content"] and "forklift operators" in pdf["content"]
    step = WORKSHOP.resolve().as_uri() + "/exercises/02.http-caching/01.problem.cache-control"
    workshop = ok(library_server, "qurio_read_page", {"url": step})
    assert "```diff" in workshop["content"] and ERROR_CODE in workshop["content"]
    missing = error_text(library_server, "qurio_read_page", {"url": "https://nowhere.example.com/x"})
    assert "qurio_list_pages" in missing


def test_search_hit_urls_read_back(library_server: LiveServer) -> None:
    for query in ("deployments on Tuesday", "memoize a function", "milestone pilot teams"):
        for hit in ok(library_server, "qurio_search", {"query": query, "limit": 5})["results"]:
            page = ok(library_server, "qurio_read_page", {"url": hit["url"]})
            assert page["title"] == hit["title"]


def test_read_page_joins_chunks_without_repeating_the_overlap(library_server: LiveServer, library) -> None:
    page = ok(library_server, "qurio_read_page", {"url": LONG_PAGE_URL})
    assert not page["truncated"] and page["nextCursor"] is None
    for sentence in MILESTONES:
        assert page["content"].count(sentence) == 1, sentence
    # the chunks themselves do overlap: the test would catch a page stitched from chunks
    chunk_texts = [c.text for c in Store(library).find(Chunk, {"key": "release-history.md"}, fields=["text"])]
    assert len(chunk_texts) > 1
    assert sum(text.count(s) for text in chunk_texts for s in MILESTONES) > len(MILESTONES)


def test_read_page_cursor_round_trip(library_server: LiveServer) -> None:
    whole = ok(library_server, "qurio_read_page", {"url": LONG_PAGE_URL})["content"]
    parts, cursor, calls = [], None, 0
    while True:
        arguments = {"url": LONG_PAGE_URL, "max_chars": 500} | ({"cursor": cursor} if cursor else {})
        page = ok(library_server, "qurio_read_page", arguments)
        assert len(page["content"]) <= 500 and page["offset"] == sum(map(len, parts))
        parts.append(page["content"])
        cursor, calls = page["nextCursor"], calls + 1
        if cursor is None:
            break
        assert page["truncated"]
    assert "".join(parts) == whole and calls == -(-len(whole) // 500)
    result = call(library_server, "qurio_read_page", {"url": LONG_PAGE_URL, "max_chars": 500})
    assert 'qurio_read_page(url="' in result["content"][0]["text"]  # the text says how to read on
    assert "cursor" in error_text(library_server, "qurio_read_page", {"url": LONG_PAGE_URL, "cursor": "garbage!"})
    assert "max_chars" in error_text(library_server, "qurio_read_page", {"url": LONG_PAGE_URL, "max_chars": 10**9})


def test_correlation_id_from_header_or_meta_is_on_the_log_lines(library_server: LiveServer) -> None:
    with json_log_lines() as lines:
        call(library_server, "qurio_list_sources", {}, headers={"X-Correlation-ID": "req-header-42"})
        response = library_server.rpc(
            "tools/call",
            {
                "name": "qurio_search",
                "arguments": {"query": "cache", "alpha": 0.0},
                "_meta": {"correlationId": "meta-7"},
            },
        )
        assert not response.json()["result"]["isError"]
    tool_lines = {line["message"].split(" answered")[0]: line for line in lines if line["logger"] == "thoth.tools"}
    assert tool_lines["tool qurio_list_sources"]["correlationId"] == "req-header-42"
    assert tool_lines["tool qurio_search"]["correlationId"] == "meta-7"
    assert response.json()["result"]["structuredContent"]["correlationId"] == "meta-7"


def test_internal_failures_are_jsonrpc_errors_with_the_correlation_id(tmp_path: Path) -> None:
    with LiveServer(make_settings(tmp_path / "no-index")) as live:
        for name, arguments in [("qurio_list_sources", {}), ("qurio_list_pages", {"source_id": "x"})]:
            response = live.rpc(
                "tools/call", {"name": name, "arguments": arguments}, headers={"X-Correlation-ID": "corr-1"}
            )
            assert response.status_code == 200
            error = response.json()["error"]
            assert error["code"] == -32603
            assert "ingest" in error["message"] and name in error["message"]
            assert error["data"]["correlationId"] == "corr-1"
        generated = live.rpc("tools/call", {"name": "qurio_search", "arguments": {"query": "x"}}).json()["error"]
        assert generated["code"] == -32603 and len(generated["data"]["correlationId"]) >= 16


def test_the_http_layer_logs_and_echoes_the_correlation_id(library_server: LiveServer) -> None:
    with json_log_lines() as lines:
        response = library_server.rpc(
            "tools/call",
            {"name": "qurio_read_page", "arguments": {"url": "https://nowhere.example.com/"}},
            headers={"X-Correlation-ID": "abc-9"},
        )
    assert response.headers["x-correlation-id"] == "abc-9"
    request_lines = [line for line in lines if line.get("correlationId") == "abc-9"]
    loggers = {line["logger"] for line in request_lines}
    # the tool's own line and the SDK's line about the failure (the access line may come after the response)
    assert "thoth.tools" in loggers and any(name.startswith("mcp") for name in loggers)
    # none sent: one is generated, and the tool sees the same one the response carries
    plain = library_server.rpc("tools/call", {"name": "qurio_search", "arguments": {"query": "cache", "alpha": 0.0}})
    generated = plain.headers["x-correlation-id"]
    assert len(generated) == 32 and plain.json()["result"]["structuredContent"]["correlationId"] == generated
