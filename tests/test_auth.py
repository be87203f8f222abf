"""App-level auth over real HTTP: Google ID tokens, static tokens, /internal routes, Cloud Run's edge tokens.

ID tokens are signed with an RSA key generated here; the server verifies them against that key's
certificate, served as Google serves its certificates (a JSON map of key id to PEM) by a loopback
HTTP server. No network, no mocks of google-auth.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt
from google.auth import jwt as google_jwt
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.conftest import LOOPBACK, LiveServer
from thoth.config import ConfigError, Settings
from thoth.mcp.auth import EDGE_SIGNATURE, admin_refusal
from thoth.mcp.server import create_app

AUDIENCE = "https://thoth-abc123-ew.a.run.app"
PUSH_SA = "thoth-trigger@demo-project.iam.gserviceaccount.com"
STATIC = ("static-token-alpha-0123456789", "static-token-bravo-9876543210")
ADMIN = "admin-token-for-tests-0123456789"
SEARCH = {"name": "search_handbook", "arguments": {"query": "how to request time off", "num_results": 2}}


class Key:
    """An RSA key with a self-signed certificate, as Google publishes its signing keys."""

    def __init__(self, kid: str):
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "thoth-test")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.private.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .sign(self.private, hashes.SHA256())
        )
        self.cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
        pem = self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self.signer = crypt.RSASigner.from_string(pem, key_id=kid)

    def token(self, email: str = "alice@example.com", aud: str = AUDIENCE, ttl: int = 600, **claims: object) -> str:
        now = int(time.time())
        payload = {
            "iss": "https://accounts.google.com",
            "aud": aud,
            "sub": "1234567890",
            "email": email,
            "email_verified": True,
            "iat": now - 5,
            "exp": now + ttl,
            **claims,
        }
        return google_jwt.encode(self.signer, payload).decode()


def edge_token(email: str, aud: str = AUDIENCE) -> str:
    """A token as Cloud Run passes it on after its IAM check: claims intact, signature removed."""

    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": "https://accounts.google.com", "aud": aud, "email": email, "iat": now, "exp": now + 600}
    return f"{part({'alg': 'RS256', 'kid': 'x'})}.{part(claims)}.{EDGE_SIGNATURE}"


class CertsServer:
    """Serves {kid: certificate PEM} like https://www.googleapis.com/oauth2/v1/certs, counting fetches."""

    def __init__(self, *keys: Key):
        certs = json.dumps({k.kid: k.cert_pem for k in keys}).encode()
        fetches = self.fetches = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                fetches[0] += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", "public, max-age=3600")
                self.end_headers()
                self.wfile.write(certs)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/oauth2/v1/certs"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> CertsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def key() -> Key:
    return Key("test-key-1")


@pytest.fixture(scope="module")
def certs(key: Key) -> Iterator[CertsServer]:
    with CertsServer(key) as server:
        yield server


def internal_echo(settings: Settings):
    """The app with one /internal route that uses admin_refusal, as a toolset's route would."""
    app = create_app(settings)

    async def echo(request: Request) -> JSONResponse:
        refusal = admin_refusal(request, settings)
        return refusal or JSONResponse({"ok": True})

    app.router.routes.insert(0, Route("/internal/echo", echo, methods=["POST"]))
    return app


@pytest.fixture(scope="module")
def google_server(indexed: Settings, certs: CertsServer) -> Iterator[LiveServer]:
    settings = replace(
        indexed,
        auth_mode="google",
        auth_audiences=(AUDIENCE,),
        auth_members=("alice@example.com", "domain:corp.example"),
        internal_identities=(PUSH_SA,),
        admin_token=ADMIN,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("thoth.mcp.auth.GOOGLE_CERTS_URL", certs.url)  # the test's signing keys
        with LiveServer(settings, app=internal_echo(settings)) as live:
            yield live


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_refused(response: httpx.Response, reason: str, token: str | None = None) -> None:
    assert response.status_code == 401, response.text
    assert reason in response.json()["error"]
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer")
    # RFC 6750, 3.1: an error code only for a request that sent a token
    sent = response.request.headers.get("authorization", "").lower().startswith("bearer ")
    assert ('error="invalid_token"' in challenge) == sent, challenge
    if token:  # a token is never echoed back
        assert token not in response.text and token not in str(response.headers)


# -- THOTH_AUTH=google ------------------------------------------------------------


def test_google_accepts_a_good_token(google_server: LiveServer, key: Key) -> None:
    response = google_server.rpc("tools/call", SEARCH, headers=bearer(key.token()))
    assert response.status_code == 200
    assert response.json()["result"]["structuredContent"]["results"][0]["source"] == "people/time-off.md"
    domain_member = google_server.rpc("tools/list", headers=bearer(key.token(email="bob@corp.example")))
    assert domain_member.status_code == 200


def test_google_rejects_missing_expired_wrong_audience_and_badly_signed(google_server: LiveServer, key: Key) -> None:
    assert_refused(google_server.rpc("tools/list"), "missing token")
    expired = key.token(ttl=-120)
    assert_refused(google_server.rpc("tools/list", headers=bearer(expired)), "expired", expired)
    other_aud = key.token(aud="https://someone-else.a.run.app")
    assert_refused(google_server.rpc("tools/list", headers=bearer(other_aud)), "wrong audience", other_aud)
    forged = Key("test-key-1").token()  # same key id, another key
    assert_refused(google_server.rpc("tools/list", headers=bearer(forged)), "bad token signature", forged)
    assert_refused(google_server.rpc("tools/list", headers=bearer("not-a-jwt")), "malformed", "not-a-jwt")
    not_google = key.token(iss="https://evil.example")
    assert_refused(google_server.rpc("tools/list", headers=bearer(not_google)), "not issued by Google", not_google)
    list_header = base64.urlsafe_b64encode(b"[1]").rstrip(b"=").decode()
    for token, reason in (
        (key.token(iat=int(time.time()) + 3600), "used before its issue time"),
        (key.token(exp=None), "no exp/iat claims"),
        (key.token(iat="yesterday"), "no exp/iat claims"),
        (key.token(email_verified=False), "no verified email"),
        (key.token(email=""), "no verified email"),
        ("e30.!!!.sig", "undecodable header or claims"),
        (f"{list_header}.e30.sig", "must be JSON objects"),
    ):
        assert_refused(google_server.rpc("tools/list", headers=bearer(token)), reason, token)


def test_google_members_and_edge_tokens(google_server: LiveServer, key: Key) -> None:
    outsider = key.token(email="mallory@example.org")
    assert_refused(google_server.rpc("tools/list", headers=bearer(outsider)), "THOTH_AUTH_MEMBERS", outsider)
    # Without THOTH_TRUST_CLOUD_RUN_IAM a token whose signature is gone proves nothing
    stripped = edge_token("alice@example.com")
    assert_refused(google_server.rpc("tools/list", headers=bearer(stripped)), "THOTH_TRUST_CLOUD_RUN_IAM")


def test_health_stays_open(google_server: LiveServer) -> None:
    for path in ("/health", "/"):
        assert LOOPBACK.get(google_server.url + path).status_code == 200


def test_certificates_are_fetched_once(google_server: LiveServer, key: Key, certs: CertsServer) -> None:
    google_server.rpc("tools/list", headers=bearer(key.token()))
    before = certs.fetches[0]
    for _ in range(3):
        assert google_server.rpc("tools/list", headers=bearer(key.token())).status_code == 200
    assert certs.fetches[0] == before == 1


# -- /internal/* ---------------------------------------------------------------------


def test_internal_routes_take_the_admin_token_or_an_allowed_service_account(
    google_server: LiveServer, key: Key
) -> None:
    url = f"{google_server.url}/internal/echo"
    assert LOOPBACK.post(url, headers=bearer(ADMIN)).json() == {"ok": True}
    assert LOOPBACK.post(url, headers=bearer(key.token(email=PUSH_SA))).json() == {"ok": True}
    # a good identity for /mcp is not an internal identity
    assert_refused(LOOPBACK.post(url, headers=bearer(key.token())), "THOTH_INTERNAL_IDENTITIES")
    assert_refused(LOOPBACK.post(url), "missing token")
    assert_refused(LOOPBACK.post(url, headers=bearer(ADMIN[:-1] + "x")), "not the admin token")
    # a route the middleware guards even if it forgot admin_refusal: unknown paths too
    assert LOOPBACK.post(f"{google_server.url}/internal/nothing-here").status_code == 401


def test_internal_routes_refuse_everything_when_not_configured(indexed: Settings) -> None:
    settings = replace(indexed, admin_token="", internal_identities=())
    with LiveServer(settings, app=internal_echo(settings)) as live:
        response = LOOPBACK.post(f"{live.url}/internal/echo", headers=bearer(ADMIN))
        assert response.status_code == 503 and "THOTH_ADMIN_TOKEN" in response.json()["error"]
        assert live.rpc("tools/list").status_code == 200  # THOTH_AUTH=off: /mcp open


def test_cloud_run_edge_identity_for_internal_routes(indexed: Settings) -> None:
    """Behind Cloud Run's IAM check (signature stripped), the edge-checked identity is trusted when configured."""
    settings = replace(indexed, auth_trust_edge=True, internal_identities=(PUSH_SA,), admin_token=ADMIN)
    with LiveServer(settings, app=internal_echo(settings)) as live:
        url = f"{live.url}/internal/echo"
        assert LOOPBACK.post(url, headers=bearer(edge_token(PUSH_SA))).json() == {"ok": True}  # Pub/Sub push
        assert_refused(LOOPBACK.post(url, headers=bearer(edge_token("alice@example.com"))), "THOTH_INTERNAL_IDENTITIES")
        # IAM token in X-Serverless-Authorization, the admin token in Authorization (passed on untouched)
        both = {"X-Serverless-Authorization": f"Bearer {edge_token('alice@example.com')}", **bearer(ADMIN)}
        assert LOOPBACK.post(url, headers=both).json() == {"ok": True}
        # A forged "stripped" token in Authorization beside a real edge token for another identity: the
        # edge checked X-Serverless-Authorization, so that one is the identity
        forged = {"X-Serverless-Authorization": f"Bearer {edge_token('alice@example.com')}"}
        forged |= bearer(edge_token(PUSH_SA))
        assert LOOPBACK.post(url, headers=forged).status_code == 401


# -- THOTH_AUTH=tokens ------------------------------------------------------------------


def test_static_tokens(indexed: Settings) -> None:
    settings = replace(indexed, auth_mode="tokens", auth_tokens=STATIC, admin_token=ADMIN)
    with LiveServer(settings, app=internal_echo(settings)) as live:
        for token in (*STATIC, ADMIN):
            response = live.rpc("tools/call", SEARCH, headers=bearer(token))
            assert response.status_code == 200 and not response.json()["result"]["isError"]
        assert_refused(live.rpc("tools/list"), "missing token")
        wrong = STATIC[0][:-1] + "Z"
        assert_refused(live.rpc("tools/list", headers=bearer(wrong)), "unknown token", wrong)
        assert_refused(live.rpc("tools/list", headers={"Authorization": f"Basic {STATIC[0]}"}), "missing token")
        # a static token is not an admin token
        assert LOOPBACK.post(f"{live.url}/internal/echo", headers=bearer(STATIC[0])).status_code == 401
        assert LOOPBACK.post(f"{live.url}/internal/echo", headers=bearer(ADMIN)).json() == {"ok": True}
        assert LOOPBACK.get(f"{live.url}/health").status_code == 200


def test_token_settings() -> None:
    secret = f"# clients\n{STATIC[0]}\n\n{STATIC[1]}\n"  # a Secret Manager secret as the variable: one a line
    settings = Settings.from_env({"THOTH_AUTH": "tokens", "THOTH_AUTH_TOKENS": secret, "THOTH_ADMIN_TOKEN": ADMIN})
    assert settings.auth_tokens == STATIC
    assert Settings.from_env({"THOTH_AUTH_TOKENS": ",".join(STATIC)}).auth_tokens == STATIC
    assert STATIC[0] not in repr(settings) and ADMIN not in repr(settings)
    with pytest.raises(ConfigError, match="THOTH_AUTH_TOKENS"):
        Settings.from_env({"THOTH_AUTH": "tokens"})
    with pytest.raises(ConfigError, match="at least 16") as short:
        Settings.from_env({"THOTH_AUTH": "tokens", "THOTH_AUTH_TOKENS": "short-secret"})
    assert "short-secret" not in str(short.value)
    with pytest.raises(ConfigError, match="THOTH_AUTH must be one of"):
        Settings.from_env({"THOTH_AUTH": "iap"})
    with pytest.raises(ConfigError, match="audience"):
        Settings.from_env({"THOTH_AUTH": "google"})
    google = Settings.from_env(
        {
            "THOTH_AUTH": "google",
            "THOTH_PUBLIC_URL": AUDIENCE + "/",
            "THOTH_AUTH_MEMBERS": "user:Alice@Example.com, serviceAccount:" + PUSH_SA + ", domain:corp.example",
        }
    )
    assert google.auth_audiences == (AUDIENCE,)
    assert google.auth_members == ("alice@example.com", PUSH_SA, "domain:corp.example")
    with pytest.raises(ConfigError, match="groups cannot be checked"):
        Settings.from_env({"THOTH_AUTH_MEMBERS": "group:team@example.com"})
