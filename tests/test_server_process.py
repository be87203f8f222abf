"""The server as deployed: `python -m thoth.mcp.server` in its own process, with the default backend.

It must answer a search without ever importing torch (the ONNX backend): checked on the process's
memory maps, where an imported torch shows up as its shared library, next to onnxruntime's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LOOPBACK, REPO_ROOT, start_server_process
from thoth.config import Settings


def mapped_libraries(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]).name for line in lines if line.split()[-1].endswith(".so") or ".so." in line}


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_server_process_answers_without_torch(indexed: Settings) -> None:
    server, url = start_server_process(indexed)
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_handbook", "arguments": {"query": "sick leave", "num_results": 1}},
        }
        result = LOOPBACK.post(f"{url}/mcp", json=body, timeout=60).json()["result"]
        assert not result["isError"], result
        assert result["structuredContent"]["results"][0]["source"] == "people/time-off.md"

        libraries = mapped_libraries(server.pid)
        assert any(name.startswith("libonnxruntime") or "onnxruntime" in name for name in libraries), libraries
        assert not [name for name in libraries if "torch" in name]
        assert LOOPBACK.get(f"{url}/health", timeout=5).json()["embedder"] == "ready"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"THOTH_AUTH": "bogus"}, "THOTH_AUTH must be one of"),
        ({"THOTH_AUTH": "tokens"}, "THOTH_AUTH=tokens needs THOTH_AUTH_TOKENS"),
        ({"THOTH_AUTH": "tokens", "THOTH_AUTH_TOKENS": "short"}, "THOTH_AUTH_TOKENS: every token"),
        ({"THOTH_AUTH": "google"}, "THOTH_AUTH=google needs THOTH_AUTH_AUDIENCES"),
    ],
)
def test_bad_auth_settings_stop_the_server_with_one_line(env: dict[str, str], named: str) -> None:
    """Issue 40: a setting the operator must change is one line and exit code 2 (README), no traceback."""
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **env}
    run = subprocess.run(
        [sys.executable, "-m", "thoth.mcp.server"],
        cwd=REPO_ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [run.stderr.strip()] and run.stderr.startswith(f"error: {named}"), run.stderr
