"""The server as deployed: `python -m thoth.mcp.server` in its own process, with the default backend.

It must answer a search without ever importing torch (the ONNX backend): checked on the process's
memory maps, where an imported torch shows up as its shared library, next to onnxruntime's.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server_process
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
