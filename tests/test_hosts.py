"""The Host and Origin check on every route (thoth.mcp.hosts): DNS rebinding cannot read the console,
the health routes or the MCP endpoints of a loopback server; a probe by address still passes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import LOOPBACK, LiveServer
from thoth.config import Settings
from thoth.mcp.hosts import allowed_hosts, host_allowed, is_address, origin_allowed

ROUTES = [
    ("GET", "/ui/search?q=time+off"),
    ("GET", "/ui/"),
    ("GET", "/ui"),
    ("GET", "/health"),
    ("GET", "/"),
    ("GET", "/mcp/sse"),
    ("POST", "/mcp"),
    ("POST", "/mcp/messages/?session_id=0"),
    ("GET", "/internal/gcs-events"),
    ("POST", "/internal/workshop-index/reindex"),
]
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def send(server: LiveServer, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    body = TOOLS_LIST if method == "POST" else None
    return LOOPBACK.request(method, server.url + path, json=body, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def tokens_server(indexed: Settings) -> Iterator[LiveServer]:
    settings = dataclasses.replace(indexed, auth_mode="tokens", auth_tokens=("reader-token-0123456789",))
    with LiveServer(settings) as live:
        yield live


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_rebound_host_is_refused_on_every_route(server: LiveServer, method: str, path: str) -> None:
    """The reproduction: `curl -H 'Host: evil.example' http://127.0.0.1:PORT/ui/search?q=time+off`."""
    response = send(server, method, path, {"Host": "evil.example"})
    assert response.status_code == 421, (path, response.status_code, response.text)
    assert "time off" not in response.text.lower()


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_foreign_origin_is_refused_on_every_route(server: LiveServer, method: str, path: str) -> None:
    host = f"127.0.0.1:{server.port}"
    response = send(server, method, path, {"Host": host, "Origin": "http://evil.example"})
    assert response.status_code == 403, (path, response.status_code, response.text)


def test_with_tokens_on_the_host_is_checked_before_auth(tokens_server: LiveServer) -> None:
    for method, path in ROUTES:
        assert send(tokens_server, method, path, {"Host": "evil.example:80"}).status_code == 421, path


def test_loopback_names_and_own_origin_pass(server: LiveServer) -> None:
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}"):
        origin = f"http://{host}"
        assert LOOPBACK.get(f"{server.url}/ui/search?q=time+off", headers={"Host": host}).status_code == 200
        response = server.rpc("tools/list", headers={"Host": host, "Origin": origin})
        assert response.status_code == 200 and response.json()["result"]["tools"], response.text


def test_listed_hosts_and_a_probe_by_address(indexed: Settings) -> None:
    settings = dataclasses.replace(indexed, host="0.0.0.0", allowed_hosts=("thoth.example.run.app",))
    with LiveServer(settings) as server:
        named = {"Host": "thoth.example.run.app"}
        assert LOOPBACK.get(f"{server.url}/health", headers=named).status_code == 200
        assert server.rpc("tools/list", headers=named).status_code == 200
        # a platform's probe names the container by address: the health routes answer it, nothing else does
        probe = {"Host": f"169.254.8.1:{server.port}", "X-Thoth-Probe": "startup"}
        assert LOOPBACK.get(f"{server.url}/health", headers=probe).status_code == 200
        assert LOOPBACK.get(f"{server.url}/ui/", headers=probe).status_code == 421
        assert LOOPBACK.get(f"{server.url}/health", headers={"Host": "evil.example"}).status_code == 421


def test_a_public_server_without_a_list_leaves_the_host_to_the_platform(indexed: Settings) -> None:
    settings = dataclasses.replace(indexed, host="0.0.0.0")
    assert allowed_hosts(settings) == ()
    with LiveServer(settings) as server:
        assert LOOPBACK.get(f"{server.url}/health", headers={"Host": "thoth-abc.a.run.app"}).status_code == 200


def test_matching_rules() -> None:
    loopback = allowed_hosts(Settings.from_env({}))
    assert host_allowed("127.0.0.1:8080", loopback) and host_allowed("LOCALHOST", loopback)
    assert not host_allowed("127.0.0.1.evil.example", loopback) and not host_allowed("", loopback)
    assert origin_allowed("http://localhost:3000", loopback) and not origin_allowed("null", loopback)
    assert not origin_allowed("file://localhost", loopback)
    assert is_address("10.0.0.4:8080") and is_address("[::1]:8080") and not is_address("evil.example:80")
