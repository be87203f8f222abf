"""`thoth serve --stdio`: a real subprocess speaking MCP over stdio, driven by the SDK's stdio client."""

from __future__ import annotations

import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import REPO_ROOT


def test_stdio_server_answers_a_search(indexed) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "thoth.cli", "serve", "--stdio"],
        env={"THOTH_DB_URI": indexed.db_uri, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
        cwd=str(REPO_ROOT),
    )

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search_handbook", {"query": "sick leave", "num_results": 1})
            assert not result.is_error
            assert result.structured_content["results"][0]["source"] == "people/time-off.md"

    anyio.run(run)


def test_client_config_mentions_the_url() -> None:
    from thoth.cli import client_config

    text = client_config("http://127.0.0.1:8080/mcp")
    assert "claude mcp add --transport http thoth http://127.0.0.1:8080/mcp" in text
