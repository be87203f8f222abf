"""THOTH_WORKERS: several server processes on one port, with Nagle's algorithm off on every connection.

uvicorn's own `--workers` binds a socket whose protocol reads 0, and asyncio sets TCP_NODELAY on an
accepted connection only when it reads IPPROTO_TCP: each keep-alive response then waited ~40 ms for
the client's delayed ACK (docs/benchmarks.md, "Workers"). `listening_socket` is what the supervisor
hands its workers.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server_process
from thoth.config import Settings
from thoth.mcp.server import listening_socket


def test_connections_accepted_on_the_shared_socket_have_nodelay() -> None:
    async def accepted_nodelay() -> int:
        sock = listening_socket("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
        return value

    assert listening_socket("127.0.0.1", 0).proto == socket.IPPROTO_TCP
    assert asyncio.run(accepted_nodelay()) == 1


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_two_workers_serve_one_port_and_stop_on_sigterm(indexed: Settings) -> None:
    server, url = start_server_process(indexed, THOTH_WORKERS="2")
    try:
        workers = [pid for pid in children(server.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(workers) == 2, workers
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_handbook", "arguments": {"query": "sick leave", "num_results": 1}},
        }
        with httpx.Client(timeout=60) as client:  # one keep-alive connection, several calls
            for _ in range(4):
                result = client.post(f"{url}/mcp", json=body).json()["result"]
                assert not result["isError"], result
                assert result["structuredContent"]["results"][0]["source"] == "people/time-off.md"
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
