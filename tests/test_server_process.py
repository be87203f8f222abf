"""The server as deployed: `python -m thoth.mcp.server` in its own process, with the default backend.

It must answer a search without ever importing torch (the ONNX backend): checked on the process's
memory maps, where an imported torch shows up as its shared library, next to onnxruntime's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT, free_port
from thoth.config import Settings


def mapped_libraries(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]).name for line in lines if line.split()[-1].endswith(".so") or ".so." in line}


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_server_process_answers_without_torch(indexed: Settings) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    env |= {
        "THOTH_DB_URI": indexed.db_uri,
        "THOTH_CACHE_DIR": str(Path(indexed.cache_dir).resolve()),
        "PORT": str(port),
        "THOTH_LOG_LEVEL": "WARNING",
    }
    server = subprocess.Popen([sys.executable, "-m", "thoth.mcp.server"], cwd=REPO_ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.1)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_handbook", "arguments": {"query": "sick leave", "num_results": 1}},
        }
        result = httpx.post(f"{url}/mcp", json=body, timeout=60).json()["result"]
        assert not result["isError"], result
        assert result["structuredContent"]["results"][0]["source"] == "people/time-off.md"

        libraries = mapped_libraries(server.pid)
        assert any(name.startswith("libonnxruntime") or "onnxruntime" in name for name in libraries), libraries
        assert not [name for name in libraries if "torch" in name]
        assert httpx.get(f"{url}/health", timeout=5).json()["embedder"] == "ready"
    finally:
        server.terminate()
        server.wait(timeout=30)
