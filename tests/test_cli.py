"""`thoth serve --stdio`: a real subprocess speaking MCP over stdio, driven by the SDK's stdio client."""

from __future__ import annotations

import subprocess
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import LOOPBACK, REPO_ROOT, start_server_process


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


def test_thoth_ingest_is_the_ingest_job_under_its_name() -> None:
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    for command, prog in ((["-m", "thoth.cli", "ingest"], "thoth ingest"), (["-m", "ingest"], "python -m ingest")):
        result = subprocess.run([sys.executable, *command], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
        assert (
            result.returncode == 2
            and f"usage: {prog} [-h]" in result.stderr
            and "--source is required" in result.stderr
        )


def test_unknown_arguments_exit_2_naming_them() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "thoth.cli", "sources", "--bogus"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2 and "--bogus" in result.stderr


def test_thoth_serve_answers_over_http(indexed) -> None:
    server, url = start_server_process(indexed, command=("-m", "thoth.cli", "serve"))
    try:
        assert LOOPBACK.get(f"{url}/health").json()["status"] == "ok"
    finally:
        server.terminate()
        server.wait(timeout=30)
