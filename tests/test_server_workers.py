"""THOTH_WORKERS: several server processes on one port, with Nagle's algorithm off on every connection.

uvicorn's own `--workers` binds a socket whose protocol reads 0, and asyncio sets TCP_NODELAY on an
accepted connection only when it reads IPPROTO_TCP: each keep-alive response then waited ~40 ms for
the client's delayed ACK (docs/benchmarks.md, "Workers"). `listening_socket` is what the supervisor
hands its workers. Every server process also caps glibc's malloc arenas (`cap_malloc_arenas`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server_process
from thoth.config import Settings
from thoth.freed import MALLOC_ARENAS
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


ARENAS = """
import ctypes, sys, tempfile, threading
from thoth.freed import cap_malloc_arenas

capped = cap_malloc_arenas() if sys.argv[1] == "cap" else False
barrier, keep = threading.Barrier(8), []

def work():
    barrier.wait()  # all eight allocate at once, as the server's threads do
    keep.append([bytes(2000) for _ in range(200)])  # blocks malloc serves from the thread's arena

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile("r") as report:
    stream = ctypes.c_void_p(libc.fopen(report.name.encode(), b"w"))
    libc.malloc_info(0, stream)  # one <heap> element an arena
    libc.fclose(stream)
    print(capped, report.read().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
@pytest.mark.parametrize(
    ("mode", "env", "capped"), [("cap", {}, True), ("none", {}, False), ("cap", {"MALLOC_ARENA_MAX": "3"}, False)]
)
def test_the_server_caps_malloc_arenas_unless_the_environment_does(mode: str, env: dict, capped: bool) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    proc = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, env=environ, timeout=60)
    assert proc.returncode == 0, proc.stderr
    said, heaps = proc.stdout.split()
    assert said == str(capped)
    if capped:
        assert int(heaps) <= MALLOC_ARENAS
    elif env:
        assert int(heaps) <= 3  # glibc's own cap, from the environment
    else:
        assert int(heaps) > MALLOC_ARENAS  # glibc's default: an arena for most threads


MMAP = """
import ctypes, sys
from thoth.freed import cap_malloc_arenas

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ord smb hblks hblkhd usmb fsmb uord ford keep".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
if sys.argv[1] == "cap":
    cap_malloc_arenas()
libc.free(ctypes.c_void_p(libc.malloc(8 << 20)))  # glibc's own threshold rises to a freed block's size
before = libc.mallinfo2().hblkhd
block = libc.malloc(4 << 20)  # a write's embedding buffer, say
print(libc.mallinfo2().hblkhd - before >= 4 << 20)  # pages of its own (given back when freed), not the heap's
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
@pytest.mark.parametrize(("mode", "mapped"), [("cap", True), ("none", False)])
def test_the_server_gives_large_blocks_pages_of_their_own(mode: str, mapped: bool) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    proc = subprocess.run([sys.executable, "-c", MMAP, mode], capture_output=True, text=True, env=environ, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(mapped)]
