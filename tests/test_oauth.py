"""THOTH_AUTH=oauth end to end: the MCP SDK's own OAuth client against real Thoth servers on loopback, with a
real OpenID Connect provider upstream (PyPI oidc-provider-mock, in its own process).

Two Thoth processes share the index and the key, behind a `Front`: the test's own load balancer, a transport
of the client's httpx2 client that sends each request for the public URL to the instance the test picks. The
person's browser is plain HTTP (`Browser`): Thoth's consent page, the provider's sign-in form (it signs in
whoever is posted as `sub`), the callback. A client ID metadata document is served over https by a loopback
server with a test CA (trustme) that the Thoth processes trust through SSL_CERT_FILE.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import httpx2
import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.conftest import LOOPBACK, free_port, start_server_process
from thoth.config import ConfigError, Settings
from thoth.mcp.oauth import SCOPES
from thoth.mcp.oauth_clients import Clients
from thoth.mcp.oauth_keys import Keys
from thoth.mcp.oauth_upstream import Upstream, UpstreamError

MEMBER = "a@x.test"
UNVERIFIED = "u@x.test"
OUTSIDER = "n@y.test"
NO_EMAIL = "no-email"
CLIENT_REDIRECT = "http://127.0.0.1:9/callback"  # nothing listens: the test reads the redirect's Location
SEARCH = ("search_handbook", {"query": "how to request time off", "num_results": 2})


# -- the upstream provider, the metadata document's https server, the key ----------------------------------


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    port = free_port()
    users = [
        {"sub": MEMBER, "email": MEMBER, "email_verified": True, "groups": ["eng", "people"]},
        {"sub": UNVERIFIED, "email": UNVERIFIED, "email_verified": False},
        {"sub": OUTSIDER, "email": OUTSIDER, "email_verified": True},
        {"sub": NO_EMAIL},
    ]
    args = [arg for user in users for arg in ("--user-claims", json.dumps(user))]
    process = subprocess.Popen(
        [sys.executable, "-m", "oidc_provider_mock", "-p", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if LOOPBACK.get(f"{url}/.well-known/openid-configuration", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "the OpenID Connect provider did not start"
        time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(timeout=10)


@dataclass
class MetadataDocument:
    url: str
    ca_file: Path
    fetched: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def metadata_document(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataDocument]:
    """A client ID metadata document at https://127.0.0.1:PORT/client.json (a CA made here signs its cert)."""
    folder = tmp_path_factory.mktemp("cimd")
    ca = trustme.CA()
    ca_file = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    port = free_port()
    document = MetadataDocument(f"https://127.0.0.1:{port}/client.json", ca_file)
    base = f"https://127.0.0.1:{port}"
    client = {
        "client_id": document.url,
        "client_name": "Metadata document client",
        "redirect_uris": [CLIENT_REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    # what test_refused_client_id_metadata_documents asks for, beside the good one
    bodies = {
        "/client.json": json.dumps(client).encode(),
        "/another-id.json": json.dumps(client).encode(),  # its client_id is /client.json's
        "/secret.json": json.dumps({**client, "client_id": f"{base}/secret.json", "client_secret": "s"}).encode(),
        "/large.json": json.dumps({**client, "client_id": f"{base}/large.json", "client_name": "x" * 6000}).encode(),
        "/not-json.json": b"<html>not a document</html>",
        "/no-redirects.json": json.dumps(
            {**client, "client_id": f"{base}/no-redirects.json", "redirect_uris": []}
        ).encode(),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            document.fetched.append(self.path)
            body = bodies.get(self.path, b"{}")
            self.send_response(200 if self.path in bodies else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield document
    server.shutdown()


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path_factory.mktemp("oauth-key") / "key.pem"
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return path


# -- two instances behind one public URL --------------------------------------------------------------


class Front(httpx2.AsyncBaseTransport):
    """The load balancer: a request to the public port goes to instance `target`; every path is logged."""

    def __init__(self, public_port: int, instances: dict[str, int]):
        self.public_port = public_port
        self.instances = instances
        self.target = "A"
        self.log: list[tuple[str, str, str, int]] = []  # (instance, method, path, status)
        # no connection outlives a response: each test runs its own event loop (anyio.run)
        self.inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        instance = None
        if request.url.port == self.public_port:
            instance = self.target
            request.url = request.url.copy_with(port=self.instances[instance])
        response = await self.inner.handle_async_request(request)
        if instance is not None:
            self.log.append((instance, request.method, request.url.path, response.status_code))
        return response

    def paths(self, since: int = 0) -> list[str]:
        return [f"{method} {path}" for _, method, path, _ in self.log[since:]]


@dataclass
class Thoth:
    public_url: str
    front: Front
    keys: Keys


@pytest.fixture(scope="module")
def thoth(indexed: Settings, upstream: str, key_file: Path, metadata_document: MetadataDocument) -> Iterator[Thoth]:
    public_port = free_port()  # nothing listens there: Front routes it
    public_url = f"http://127.0.0.1:{public_port}"
    env = {
        "THOTH_AUTH": "oauth",
        "THOTH_PUBLIC_URL": public_url,
        "THOTH_OAUTH_ISSUER": upstream,
        "THOTH_OAUTH_CLIENT_ID": "thoth-test-client",
        "THOTH_OAUTH_CLIENT_SECRET": "upstream-secret-for-tests",
        "THOTH_OAUTH_KEY_FILE": str(key_file),
        "THOTH_AUTH_MEMBERS": "domain:x.test",
        "SSL_CERT_FILE": str(metadata_document.ca_file),  # the metadata document's test CA (httpx reads it)
    }
    processes = {}
    try:
        for name in ("A", "B"):
            processes[name] = start_server_process(indexed, **env)
        ports = {name: urlsplit(url).port for name, (_, url) in processes.items()}
        yield Thoth(public_url, Front(public_port, ports), Keys(key_file.read_bytes()))  # type: ignore[arg-type]
    finally:
        for process, _ in processes.values():
            process.terminate()
            process.wait(timeout=30)


# -- the person's browser, and the SDK client -----------------------------------------------------------


class Browser:
    """Plain HTTP as a browser goes: Thoth's consent page, the provider's form, back to Thoth's callback.

    `switch_before_callback` sends the callback to the other instance (the split flow)."""

    def __init__(self, thoth: Thoth, person: str, switch_before_callback: str | None = None):
        self.thoth = thoth
        self.person = person
        self.switch = switch_before_callback
        self.http = httpx2.AsyncClient(transport=thoth.front, follow_redirects=False, timeout=60)
        self.final: httpx2.Response | None = None
        self.consent_page = ""

    async def sign_in(self, authorization_url: str) -> httpx2.Response:
        """Follows the flow from the client's authorization URL to the redirect back to the client."""
        response = await self.http.get(authorization_url)
        if not response.is_redirect or "/oauth/consent" not in response.headers["location"]:
            self.final = response
            return response
        consent = response.headers["location"]
        page = await self.http.get(consent)
        assert page.status_code == 200
        self.consent_page = page.text
        request = parse_qs(urlsplit(consent).query)["request"][0]
        response = await self.http.post(
            f"{self.thoth.public_url}/oauth/consent", data={"request": request, "action": "approve"}
        )
        assert response.status_code == 302, response.text
        upstream_url = response.headers["location"]
        form = await self.http.get(upstream_url)  # the provider's sign-in form
        assert form.status_code == 200, form.text
        response = await self.http.post(upstream_url, data={"sub": self.person})
        assert response.status_code == 302, response.text
        callback = response.headers["location"]
        assert callback.startswith(f"{self.thoth.public_url}/oauth/callback?")
        if self.switch:
            self.thoth.front.target = self.switch
        self.final = await self.http.get(callback)
        return self.final

    def result(self) -> dict[str, str]:
        assert self.final is not None and self.final.is_redirect, self.final and self.final.text
        location = self.final.headers["location"]
        assert location.startswith(CLIENT_REDIRECT + "?"), location
        return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}

    async def callback(self) -> AuthorizationCodeResult:
        params = self.result()
        assert "code" in params, params
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def client_metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="Thoth test client",
        redirect_uris=[CLIENT_REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post",
    )


def sdk_client(thoth: Thoth, browser: Browser, storage: Memory, metadata_url: str | None = None) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=f"{thoth.public_url}/mcp",
        client_metadata=client_metadata(),
        storage=storage,
        redirect_handler=lambda url: browser.sign_in(url),
        callback_handler=browser.callback,
        client_metadata_url=metadata_url,
    )


async def use_tools(thoth: Thoth, auth: OAuthClientProvider) -> list[str]:
    """tools/list and a search over MCP, as the signed-in client; the tool names."""
    async with httpx2.AsyncClient(auth=auth, transport=thoth.front, timeout=60) as http:
        async with streamable_http_client(f"{thoth.public_url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                result = await session.call_tool(*SEARCH)
                assert not result.is_error, result
                assert result.structured_content["results"], result
                return tools


def mcp_status(thoth: Thoth, token: str) -> httpx.Response:
    """tools/list with a bearer token, straight to instance A."""
    port = thoth.front.instances["A"]
    return LOOPBACK.post(
        f"http://127.0.0.1:{port}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        timeout=60,
    )


def token_request(thoth: Thoth, data: dict[str, str]) -> httpx.Response:
    port = thoth.front.instances[thoth.front.target]
    return LOOPBACK.post(f"http://127.0.0.1:{port}/token", data=data, timeout=30)


# -- the flow --------------------------------------------------------------------------------------------


def test_metadata_and_the_first_401(thoth: Thoth) -> None:
    port = thoth.front.instances["A"]
    base = f"http://127.0.0.1:{port}"
    response = LOOPBACK.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert f'resource_metadata="{thoth.public_url}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert f'scope="{" ".join(SCOPES)}"' in challenge
    assert "error=" not in challenge  # no token sent: no error code (RFC 6750, 3.1)
    resource = LOOPBACK.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == f"{thoth.public_url}/mcp"
    assert resource["authorization_servers"] == [thoth.public_url]
    assert LOOPBACK.get(f"{base}/.well-known/oauth-protected-resource").json()["resource"] == thoth.public_url
    server = LOOPBACK.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == thoth.public_url  # exactly: no trailing slash
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True
    assert {"authorization_code", "refresh_token"} <= set(server["grant_types_supported"])
    assert server["registration_endpoint"] == f"{thoth.public_url}/register"
    assert server["revocation_endpoint"] == f"{thoth.public_url}/revoke"


def test_dcr_flow_then_refresh_then_revocation(thoth: Thoth) -> None:
    thoth.front.target = "A"
    browser, storage = Browser(thoth, MEMBER), Memory()
    auth = sdk_client(thoth, browser, storage)
    start = len(thoth.front.log)
    tools = anyio.run(use_tools, thoth, auth)
    assert "search_handbook" in tools
    assert "Thoth test client" in browser.consent_page
    paths = thoth.front.paths(start)
    expected = [
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
        "POST /register",
        "GET /authorize",
        "GET /oauth/consent",
        "POST /oauth/consent",
        "GET /oauth/callback",
        "POST /token",
    ]
    assert [p for p in paths if p in expected][: len(expected)] == expected, paths
    assert thoth.front.log[start][3] == 401
    params = browser.result()
    assert params["iss"] == thoth.public_url
    first = storage.tokens
    assert first is not None and first.refresh_token
    claims = thoth.keys.verify(first.access_token)
    assert claims is not None
    assert claims["email"] == MEMBER and claims["groups"] == ["eng", "people"]
    assert claims["aud"] == f"{thoth.public_url}/mcp" and claims["iss"] == thoth.public_url

    # a refresh: the SDK refreshes a token it holds as expired, and the refresh token rotates
    auth.context.token_expiry_time = time.time() - 1
    start = len(thoth.front.log)
    anyio.run(use_tools, thoth, auth)
    second = storage.tokens
    assert second is not None and second.access_token != first.access_token
    assert second.refresh_token and second.refresh_token != first.refresh_token
    assert "POST /token" in thoth.front.paths(start) and "POST /register" not in thoth.front.paths(start)
    assert mcp_status(thoth, second.access_token).status_code == 200

    # revocation (RFC 7009): the access token and its family are refused from then on
    client = storage.client
    assert client is not None and client.client_secret
    port = thoth.front.instances["A"]
    revoked = LOOPBACK.post(
        f"http://127.0.0.1:{port}/revoke",
        data={"token": second.access_token, "client_id": client.client_id, "client_secret": client.client_secret},
    )
    assert revoked.status_code == 200
    refused = mcp_status(thoth, second.access_token)
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]
    again = token_request(
        thoth,
        {
            "grant_type": "refresh_token",
            "refresh_token": second.refresh_token,
            "client_id": client.client_id,
            "client_secret": client.client_secret,
        },
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_client_id_metadata_document_flow(thoth: Thoth, metadata_document: MetadataDocument) -> None:
    thoth.front.target = "A"
    browser, storage = Browser(thoth, MEMBER), Memory()
    auth = sdk_client(thoth, browser, storage, metadata_url=metadata_document.url)
    start = len(thoth.front.log)
    assert "search_handbook" in anyio.run(use_tools, thoth, auth)
    assert "POST /register" not in thoth.front.paths(start)
    assert storage.client is not None and storage.client.client_id == metadata_document.url
    assert "/client.json" in metadata_document.fetched
    assert "Metadata document client" in browser.consent_page


def test_refused_client_id_metadata_documents(
    metadata_document: MetadataDocument,
    key_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What a client ID metadata document must be, checked in this process against the https server: a
    refused one is no client (the authorize endpoint then answers 400), never a fetch of a private address."""
    monkeypatch.setenv("SSL_CERT_FILE", str(metadata_document.ca_file))
    base = metadata_document.url.removesuffix("/client.json")
    clients = Clients(Keys(key_file.read_bytes()), SCOPES, loopback_allowed=True)

    def get(url: str, within: Clients = clients) -> OAuthClientInformationFull | None:
        return anyio.run(within.get, url)

    good = get(metadata_document.url)
    assert good is not None and good.token_endpoint_auth_method == "none" and good.client_secret is None
    fetched = len(metadata_document.fetched)
    assert get(metadata_document.url) == good and len(metadata_document.fetched) == fetched  # kept a while
    reasons = {
        "another-id": "not its own URL",
        "secret": "public client",
        "large": "over 5000 bytes",
        "not-json": "cannot be read",
        "missing": "answered 404",
    }
    for path, reason in reasons.items():
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="thoth.oauth"):
            assert get(f"{base}/{path}.json") is None, path
        assert reason in caplog.text, (path, caplog.text)
    assert get(f"{base}/no-redirects.json") is None  # nowhere to send a code
    before = len(metadata_document.fetched)
    for url in (
        f"https://user:pw@{base.removeprefix('https://')}/client.json",  # credentials in the URL
        f"{metadata_document.url}#fragment",
    ):
        assert get(url) is None, url
    public_only = Clients(Keys(key_file.read_bytes()), SCOPES, loopback_allowed=False)
    assert get(metadata_document.url, public_only) is None  # a server on a public URL never fetches loopback
    assert len(metadata_document.fetched) == before  # none of those was fetched
    assert get("not-a-registration") is None and get("http://127.0.0.1/client.json") is None


def test_split_across_two_instances(thoth: Thoth) -> None:
    """Started on instance A (discovery, registration, authorize, consent), finished on B (callback, code,
    token, tools), refreshed on B and used on A: the instances share only the index and the key."""
    thoth.front.target = "A"
    browser, storage = Browser(thoth, MEMBER, switch_before_callback="B"), Memory()
    auth = sdk_client(thoth, browser, storage)
    start = len(thoth.front.log)
    anyio.run(use_tools, thoth, auth)
    log = thoth.front.log[start:]
    on = {f"{method} {path}": instance for instance, method, path, _ in log}
    assert on["POST /register"] == "A" and on["POST /oauth/consent"] == "A"
    assert on["GET /oauth/callback"] == "B" and on["POST /token"] == "B"
    auth.context.token_expiry_time = time.time() - 1
    anyio.run(use_tools, thoth, auth)  # refreshed on B
    thoth.front.target = "A"
    assert storage.tokens is not None
    assert mcp_status(thoth, storage.tokens.access_token).status_code == 200


# -- refusals ----------------------------------------------------------------------------------------------


async def _register(thoth: Thoth) -> OAuthClientInformationFull:
    async with httpx2.AsyncClient(transport=thoth.front) as http:
        body = client_metadata().model_dump(mode="json", exclude_none=True)
        response = await http.post(f"{thoth.public_url}/register", json=body)
        assert response.status_code == 201, response.text
        return OAuthClientInformationFull.model_validate(response.json())


def _authorize_url(thoth: Thoth, client_id: str, challenge: str, **extra: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{thoth.public_url}/mcp",
        **extra,
    }
    return f"{thoth.public_url}/authorize?{urlencode(query)}"


VERIFIER = "v" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).decode().rstrip("=")  # S256


def _sign_in(thoth: Thoth, person: str, **extra: str) -> tuple[OAuthClientInformationFull, dict[str, str]]:
    async def run() -> tuple[OAuthClientInformationFull, dict[str, str]]:
        client = await _register(thoth)
        browser = Browser(thoth, person)
        await browser.sign_in(_authorize_url(thoth, client.client_id, CHALLENGE, **extra))
        return client, browser.result()

    return anyio.run(run)


def test_refused_pkce_mismatch_and_a_code_used_twice(thoth: Thoth) -> None:
    thoth.front.target = "A"
    client, params = _sign_in(thoth, MEMBER)
    form = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": CLIENT_REDIRECT,
        "client_id": client.client_id,
        "client_secret": client.client_secret or "",
    }
    wrong = token_request(thoth, {**form, "code_verifier": "w" * 64})
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert "code_verifier" in wrong.json()["error_description"]
    plain = LOOPBACK.get(
        _authorize_url(thoth, client.client_id, VERIFIER, code_challenge_method="plain").replace(
            thoth.public_url, f"http://127.0.0.1:{thoth.front.instances['A']}"
        )
    )
    assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"]  # S256 only
    good = token_request(thoth, {**form, "code_verifier": VERIFIER})
    assert good.status_code == 200, good.text
    thoth.front.target = "B"  # a code redeemed on A is used up on B too
    twice = token_request(thoth, {**form, "code_verifier": VERIFIER})
    thoth.front.target = "A"
    assert twice.status_code == 400 and "already used" in twice.json()["error_description"]
    # RFC 6749 10.5: what the code was exchanged for is revoked when it is replayed
    assert mcp_status(thoth, good.json()["access_token"]).status_code == 401


def test_refused_a_refresh_token_used_twice(thoth: Thoth) -> None:
    thoth.front.target = "A"
    client, params = _sign_in(thoth, MEMBER)
    secret = client.client_secret or ""
    tokens = token_request(
        thoth,
        {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": CLIENT_REDIRECT,
            "client_id": client.client_id,
            "client_secret": secret,
            "code_verifier": VERIFIER,
        },
    ).json()
    refresh = {"grant_type": "refresh_token", "client_id": client.client_id, "client_secret": secret}
    rotated = token_request(thoth, {**refresh, "refresh_token": tokens["refresh_token"]})
    assert rotated.status_code == 200
    replayed = token_request(thoth, {**refresh, "refresh_token": tokens["refresh_token"]})
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    # reuse revokes the family: the rotated tokens go too
    assert mcp_status(thoth, rotated.json()["access_token"]).status_code == 401
    assert token_request(thoth, {**refresh, "refresh_token": rotated.json()["refresh_token"]}).status_code == 400


def test_refused_a_redirect_uri_not_registered(thoth: Thoth) -> None:
    client = anyio.run(_register, thoth)
    url = _authorize_url(thoth, client.client_id, CHALLENGE, redirect_uri="http://127.0.0.1:9/elsewhere")
    response = LOOPBACK.get(url.replace(thoth.public_url, f"http://127.0.0.1:{thoth.front.instances['A']}"))
    assert response.status_code == 400  # never redirected to an unregistered URI
    assert "not registered" in response.json()["error_description"]


def test_refused_another_resource_at_authorize(thoth: Thoth) -> None:
    client = anyio.run(_register, thoth)
    url = _authorize_url(thoth, client.client_id, CHALLENGE, resource="https://other.example.com/mcp")
    response = LOOPBACK.get(url.replace(thoth.public_url, f"http://127.0.0.1:{thoth.front.instances['A']}"))
    assert response.status_code == 302
    assert "error=invalid_target" in response.headers["location"]


def test_refused_an_approval_from_another_site_and_a_decline(thoth: Thoth) -> None:
    """The consent form posted from another site's page is refused; declining sends the client access_denied."""

    async def run() -> tuple[httpx2.Response, httpx2.Response]:
        client = await _register(thoth)
        async with httpx2.AsyncClient(transport=thoth.front, follow_redirects=False) as http:
            consent = (await http.get(_authorize_url(thoth, client.client_id, CHALLENGE))).headers["location"]
            form = {"request": parse_qs(urlsplit(consent).query)["request"][0]}
            url = f"{thoth.public_url}/oauth/consent"
            elsewhere = {"Origin": "http://127.0.0.1:9"}  # a page on another port: past the Host check, not ours
            forged = await http.post(url, data={**form, "action": "approve"}, headers=elsewhere)
            declined = await http.post(url, data={**form, "action": "decline"}, headers={"Origin": thoth.public_url})
        return forged, declined

    thoth.front.target = "A"
    forged, declined = anyio.run(run)
    assert forged.status_code == 403 and "did not come from this server" in forged.text, forged.text
    assert declined.status_code == 302
    assert "error=access_denied" in declined.headers["location"] and "state=st-1" in declined.headers["location"]


def test_refused_upstream_id_tokens(upstream: str) -> None:
    """The provider's ID token is what a sign-in rests on: one for another sign-in (nonce) or another client
    (audience), altered, malformed, or without an email address is refused, in this process."""
    nonce, redirect = "nonce-1", "http://127.0.0.1:9/oauth/callback"

    async def id_token(person: str) -> str:
        provider = Upstream(upstream, "thoth-test-client", "secret")
        url = await provider.authorization_url(redirect, "st", nonce, CHALLENGE)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            code = parse_qs(urlsplit((await http.post(url, data={"sub": person})).headers["location"]).query)["code"]
            form = {"grant_type": "authorization_code", "code": code[0], "redirect_uri": redirect}
            form |= {"code_verifier": VERIFIER, "client_id": "thoth-test-client", "client_secret": "secret"}
            return (await http.post((await provider.endpoints()).token, data=form)).json()["id_token"]

    async def verify(token: str, client_id: str = "thoth-test-client", expected_nonce: str = nonce) -> str:
        try:
            return (await Upstream(upstream, client_id, "secret").verify_id_token(token, expected_nonce)).email
        except UpstreamError as exc:
            return str(exc)

    async def run() -> list[str]:
        token = await id_token(MEMBER)
        head, claims, signature = token.split(".")
        return [
            await verify(token),
            await verify(token, expected_nonce="another sign-in's"),
            await verify(token, client_id="another-client"),
            await verify(f"{head}.{claims}.{signature[::-1]}"),
            await verify("not-a-token"),
            await verify(await id_token(NO_EMAIL)),
        ]

    good, other_nonce, other_client, altered, malformed, no_email = anyio.run(run)
    assert good == MEMBER
    assert "does not verify" in other_nonce and "nonce" in other_nonce
    assert "does not verify" in other_client and "aud" in other_client
    assert "does not verify" in altered
    assert "malformed" in malformed
    assert "no email address" in no_email


def test_refused_unverified_email_and_non_member(thoth: Thoth) -> None:
    thoth.front.target = "A"
    _, unverified = _sign_in(thoth, UNVERIFIED)
    assert unverified["error"] == "access_denied" and "not verified" in unverified["error_description"]
    assert "code" not in unverified and unverified["iss"] == thoth.public_url and unverified["state"] == "st-1"
    _, outsider = _sign_in(thoth, OUTSIDER)
    assert outsider["error"] == "access_denied" and "not a member" in outsider["error_description"]


def _minted(thoth: Thoth, **claims: object) -> str:
    now = int(time.time())
    base = {
        "iss": thoth.public_url,
        "aud": f"{thoth.public_url}/mcp",
        "sub": MEMBER,
        "client_id": "x",
        "scope": " ".join(SCOPES),
        "email": MEMBER,
        "groups": [],
        "fam": "never-started",
        "iat": now,
        "exp": now + 600,
    }
    return thoth.keys.sign({**base, **claims})


def test_refused_tokens_for_another_audience_expired_or_forged(thoth: Thoth) -> None:
    other = mcp_status(thoth, _minted(thoth, aud="https://other.example.com/mcp"))
    assert other.status_code == 401 and "another resource" in other.json()["error"]
    assert "resource_metadata=" in other.headers["www-authenticate"]
    assert 'error="invalid_token"' in other.headers["www-authenticate"]
    expired = mcp_status(thoth, _minted(thoth, exp=int(time.time()) - 60))
    assert expired.status_code == 401 and "expired" in expired.json()["error"]
    unknown_family = mcp_status(thoth, _minted(thoth))
    assert unknown_family.status_code == 401 and "revoked" in unknown_family.json()["error"]
    foreign = Keys(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    forged = mcp_status(thoth, foreign.sign({"iss": thoth.public_url}))
    assert forged.status_code == 401 and "not an access token" in forged.json()["error"]


def test_refused_a_callback_in_another_browser(thoth: Thoth) -> None:
    """The upstream's redirect replayed without the browser's sign-in cookie: a page, never a code or a 500."""
    port = thoth.front.instances["A"]
    response = LOOPBACK.get(f"http://127.0.0.1:{port}/oauth/callback", params={"state": "forged", "code": "x"})
    assert response.status_code == 400 and "another browser" in response.text


def test_health_and_metadata_stay_open(thoth: Thoth) -> None:
    port = thoth.front.instances["B"]
    assert LOOPBACK.get(f"http://127.0.0.1:{port}/health").status_code == 200
    assert LOOPBACK.get(f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server").status_code == 200


def test_oauth_settings(tmp_path: Path, key_file: Path) -> None:
    with pytest.raises(ConfigError, match="THOTH_OAUTH_CLIENT_ID"):
        Settings.from_env({"THOTH_AUTH": "oauth", "THOTH_PUBLIC_URL": "https://thoth.example.com"})
    env = {
        "THOTH_AUTH": "oauth",
        "THOTH_PUBLIC_URL": "http://thoth.example.com",
        "THOTH_OAUTH_CLIENT_ID": "id",
        "THOTH_OAUTH_CLIENT_SECRET": "s",
        "THOTH_OAUTH_KEY_FILE": str(key_file),
    }
    with pytest.raises(ConfigError, match="https"):
        Settings.from_env(env)
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    env = {**env, "THOTH_PUBLIC_URL": "https://thoth.example.com", "THOTH_OAUTH_CLIENT_SECRET_FILE": str(secret)}
    del env["THOTH_OAUTH_CLIENT_SECRET"]  # a mounted secret instead of the variable
    settings = Settings.from_env(env)
    assert settings.oauth_client_secret == "from-a-file" and settings.oauth_issuer == "https://accounts.google.com"
    assert "from-a-file" not in repr(settings)
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(ConfigError, match="PEM"):
        Keys(bad.read_bytes())


def test_console_signs_in_with_the_same_provider(thoth: Thoth) -> None:
    """/ui without a session: to the provider's sign-in and back, with a session cookie any instance reads;
    a non-member gets a page saying so, never the console."""

    async def browse(person: str) -> tuple[httpx2.Response, httpx2.AsyncClient]:
        http = httpx2.AsyncClient(transport=thoth.front, follow_redirects=False, timeout=60)
        thoth.front.target = "A"
        first = await http.get(f"{thoth.public_url}/ui/search?q=time+off")
        assert first.status_code == 302 and first.headers["location"].startswith("/oauth/console?next=")
        login = await http.get(thoth.public_url + first.headers["location"])
        assert login.status_code == 302
        upstream_url = login.headers["location"]
        assert (await http.get(upstream_url)).status_code == 200
        back = await http.post(upstream_url, data={"sub": person})
        thoth.front.target = "B"  # the callback, and the console after it, on the other instance
        return await http.get(back.headers["location"]), http

    async def run() -> None:
        signed_in, http = await browse(MEMBER)
        assert signed_in.status_code == 302 and signed_in.headers["location"] == "/ui/search?q=time+off"
        page = await http.get(f"{thoth.public_url}/ui/search?q=time+off")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        thoth.front.target = "A"
        assert (await http.get(f"{thoth.public_url}/ui/")).status_code == 200
        assert (await http.post(f"{thoth.public_url}/mcp", json={})).status_code == 401  # the cookie is the console's
        refused, _ = await browse(OUTSIDER)
        assert refused.status_code == 403 and "not a member" in refused.text
        thoth.front.target = "A"

    anyio.run(run)


def test_the_request_identity_carries_email_groups_and_role(tmp_path: Path, key_file: Path) -> None:
    """What a tool (and the grants) sees of an OAuth caller: the verified email, the provider's groups, the
    writer role only for a listed writer whose token has thoth:write; static tokens still work beside."""
    from starlette.requests import Request

    from thoth.mcp.auth import Authenticator
    from thoth.mcp.oauth import ThothProvider
    from thoth.store.db import Store

    public_url = "https://thoth.example.com"
    settings = Settings.from_env(
        {},
        db_uri=str(tmp_path / "lancedb"),
        public_url=public_url,
        auth_mode="oauth",
        auth_members=("domain:x.test",),
        auth_writers=("a@x.test",),
        auth_tokens=("static-token-for-scripts-0123",),
        oauth_client_id="c",
        oauth_client_secret="s",
        oauth_key_file=str(key_file),
    )
    provider = ThothProvider(settings, Store(settings).oauth_state)
    provider.state.start("family:f1", time.time() + 60)
    auth = Authenticator(settings, provider)

    def identity(token: str):
        headers = [(b"authorization", f"Bearer {token}".encode())]
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
        return anyio.run(auth.public, Request(scope))

    now = int(time.time())
    claims = {"iss": public_url, "aud": f"{public_url}/mcp", "sub": "1", "client_id": "c", "fam": "f1"}
    claims |= {"iat": now, "exp": now + 60, "email": MEMBER, "groups": ["eng", "people"]}
    writer = identity(provider.keys.sign({**claims, "scope": "thoth:read thoth:write"}))
    assert (writer.kind, writer.email, writer.principal, writer.writer) == ("oauth", MEMBER, f"email:{MEMBER}", True)
    assert writer.groups == ("eng", "people")
    assert not identity(provider.keys.sign({**claims, "scope": "thoth:read"})).writer
    other = identity(provider.keys.sign({**claims, "scope": "thoth:read thoth:write", "email": "b@x.test"}))
    assert not other.writer and other.groups == ("eng", "people")
    assert identity("static-token-for-scripts-0123").kind == "token"
