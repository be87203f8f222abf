"""Who may call the server: bearer tokens checked by a small ASGI middleware, and the /internal check
(THOTH_AUTH; docs/deploy.md, "Auth"; docs/security.md, "Roles"). A principal comes only from what was verified;
comparisons are constant-time, and a token is never logged nor echoed in an error."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from thoth.access import FULL_ACCESS, Access, AccessRules, Person, groups_of, listed, reading
from thoth.config import Settings
from thoth.errors import ThothError
from thoth.mcp.hosts import PROBE_PATHS

if TYPE_CHECKING:
    from thoth.mcp.oauth import ThothProvider

log = logging.getLogger("thoth.auth")

INTERNAL_PREFIX = "/internal/"
GOOGLE_ISSUERS = frozenset({"accounts.google.com", "https://accounts.google.com"})
EDGE_SIGNATURE = "SIGNATURE_REMOVED_BY_GOOGLE"
CLOCK_SKEW_SECONDS = 10
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"  # the keys that sign Google's ID tokens
_SCOPE_INTERNAL = "thoth.internal_identity"  # set by the middleware once /internal access is established
_SCOPE_IDENTITY = "thoth.identity"
_SCOPE_ACCESS = "thoth.access"  # what the verified caller may read and write (thoth.access)


class AuthError(ThothError):
    """A token was refused; the message is safe to show (it never contains the token)."""


@dataclass(frozen=True)
class Identity:
    kind: str  # "admin", "token", "google", "cloud-run-iam", "oauth"
    email: str | None = None
    principal: str = ""  # stable and verified: "email:{email}", "token:{hash}" or "admin"
    writer: bool = False  # may call the tools that write the shared index (thoth.mcp.roles)
    groups: tuple[str, ...] = ()  # the upstream provider's verified `groups` claim, where it sends one


def token_principal(token: str) -> str:
    """A static token's principal: a hash, so state keyed by it never holds the token itself."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:24]


def email_identity(identity: Identity, writers: tuple[str, ...]) -> Identity:
    """A verified Google identity with its principal and role."""
    email = (identity.email or "").lower()
    return Identity(identity.kind, identity.email, f"email:{email}", listed(identity.email, writers), identity.groups)


def access_of(identity: Identity | None, rules: AccessRules | None) -> Access:
    """What `identity` may read and write under `rules`: everything without an access file, and for a caller
    with every right (no auth on a laptop, the admin token). A caller without a verified email (a static
    token, an anonymous caller behind Cloud Run IAM) is a person with no email, whom only `*` names."""
    if rules is None or identity is None or identity.kind == "admin":
        return FULL_ACCESS
    return rules.access(Person(identity.email, identity.groups))


def identity_of(scope: Mapping[str, Any]) -> Identity | None:
    """The identity the auth middleware verified for this request (None: auth off, or not over HTTP)."""
    identity = scope.get(_SCOPE_IDENTITY)
    return identity if isinstance(identity, Identity) else None


def request_access(scope: Mapping[str, Any]) -> Access:
    """What the caller of this request may read and write (everything: auth off, or not over HTTP)."""
    found = scope.get(_SCOPE_ACCESS)
    return found if isinstance(found, Access) else FULL_ACCESS


def bearer_token(request: Request, header: str = "authorization") -> str | None:
    value = request.headers.get(header, "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def _matches_any(token: str, secrets: tuple[str, ...]) -> bool:
    """Constant-time in the token and the number of secrets: every secret is compared."""
    found = False
    for secret in secrets:
        found |= _equal(token, secret)
    return found


def _b64json(segment: str) -> Any:
    padded = segment + "=" * (-len(segment) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def _split(token: str) -> tuple[dict, dict, str]:
    """(header, claims, signature segment) of a JWT, without verifying anything."""
    parts = token.split(".")
    if len(parts) != 3:
        raise AuthError("malformed token: not a JWT")
    try:
        header, claims = _b64json(parts[0]), _b64json(parts[1])
    except (ValueError, UnicodeError, binascii.Error):
        raise AuthError("malformed token: undecodable header or claims") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise AuthError("malformed token: header and claims must be JSON objects")
    return header, claims, parts[2]


def _check_claims(claims: Mapping[str, Any], audiences: tuple[str, ...] | None) -> str:
    """The token's email after the time, issuer and audience checks (audiences None: not checked)."""
    now = time.time()
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or not isinstance(iat, int | float):
        raise AuthError("malformed token: no exp/iat claims")
    if exp + CLOCK_SKEW_SECONDS < now:
        raise AuthError("token expired")
    if iat - CLOCK_SKEW_SECONDS > now:
        raise AuthError("token used before its issue time")
    if claims.get("iss") not in GOOGLE_ISSUERS:
        raise AuthError("token not issued by Google (iss)")
    if audiences is not None and claims.get("aud") not in audiences:
        raise AuthError(f"wrong audience: expected one of {', '.join(audiences)}")
    email = claims.get("email")
    if not isinstance(email, str) or not email or claims.get("email_verified") is False:
        raise AuthError("token carries no verified email")
    return email


class GoogleVerifier:
    """Verifies Google-signed ID tokens against the certificates at `certs_url`.

    The certificates are fetched once and kept for the lifetime the endpoint's Cache-Control
    allows (an hour when it says nothing); an unknown key id refetches them (Google rotates keys),
    at most once a minute. Fetching blocks: call `verify` from a worker thread.
    """

    def __init__(self, certs_url: str, audiences: tuple[str, ...]):
        self.certs_url = certs_url
        self.audiences = audiences
        self._certs: dict[str, str] = {}
        self._expires = 0.0
        self._fetched = 0.0
        self._lock = threading.Lock()

    def _fetch(self) -> None:
        import google.auth.transport.requests

        response = google.auth.transport.requests.Request()(self.certs_url, method="GET", timeout=10)
        if response.status != 200:
            raise AuthError("cannot check the token now: Google's certificates are unavailable")
        certs = json.loads(response.data.decode("utf-8"))
        if not isinstance(certs, dict) or "keys" in certs:
            raise AuthError("cannot check the token now: unexpected certificate format (use the v1 PEM endpoint)")
        match = re.search(r"max-age=(\d+)", response.headers.get("cache-control", ""))
        self._certs = {str(k): str(v) for k, v in certs.items()}
        self._fetched = time.monotonic()
        self._expires = self._fetched + (int(match.group(1)) if match else 3600)

    def _certs_for(self, kid: str | None) -> dict[str, str]:
        with self._lock:
            now = time.monotonic()
            stale = now >= self._expires or (kid is not None and kid not in self._certs and now - self._fetched > 60)
            if stale:
                try:
                    self._fetch()
                except AuthError:
                    raise
                except Exception as exc:  # network errors of any kind: refuse, never fall open
                    log.warning("cannot fetch ID token certificates from %s: %s", self.certs_url, type(exc).__name__)
                    raise AuthError("cannot check the token now: Google's certificates are unavailable") from None
            return self._certs

    def verify(self, token: str) -> Identity:
        from google.auth import jwt

        header, claims, signature = _split(token)
        if signature == EDGE_SIGNATURE:
            raise AuthError(
                "this token's signature was removed by Cloud Run's IAM check; "
                "set THOTH_TRUST_CLOUD_RUN_IAM=true to trust the edge, or send the token in X-Serverless-Authorization"
            )
        certs = self._certs_for(header.get("kid"))
        try:  # signature (and google-auth's own exp/iat check); its messages may quote the token: not passed on
            jwt.decode(token, certs=certs, verify=True, clock_skew_in_seconds=CLOCK_SKEW_SECONDS)
        except Exception as exc:
            message = str(exc)
            if "expired" in message:
                raise AuthError("token expired") from None
            if "too early" in message:
                raise AuthError("token used before its issue time") from None
            if not all(isinstance(claims.get(name), int | float) for name in ("exp", "iat")):  # google-auth fails
                raise AuthError("malformed token: no exp/iat claims") from None
            raise AuthError("bad token signature") from None
        return Identity("google", _check_claims(claims, self.audiences), groups=groups_of(claims))


def edge_identity(request: Request) -> Identity | None:
    """The identity Cloud Run's IAM check verified, from the token it passed on with its signature removed.

    Only call this behind Cloud Run with IAM invocation required (THOTH_TRUST_CLOUD_RUN_IAM).
    """
    token = bearer_token(request, "x-serverless-authorization") or bearer_token(request)
    if token is None:
        return None
    _, claims, signature = _split(token)
    if signature != EDGE_SIGNATURE:
        return None  # not the token the edge checked
    # the edge checked the audience
    return Identity("cloud-run-iam", _check_claims(claims, None), groups=groups_of(claims))


class Authenticator:
    """Decides each request from the settings; one per app (`oauth`: the THOTH_AUTH=oauth provider)."""

    def __init__(self, settings: Settings, oauth: ThothProvider | None = None):
        self.settings = settings
        self.oauth = oauth
        audiences = settings.auth_audiences or ((settings.public_url,) if settings.public_url else ())
        self.google = GoogleVerifier(GOOGLE_CERTS_URL, audiences)
        if settings.auth_mode == "google" and not settings.auth_members:
            log.warning("THOTH_AUTH=google with no THOTH_AUTH_MEMBERS: any Google identity with a valid token passes")

    async def _google_identity(self, request: Request) -> Identity:
        """A Google identity from the request: edge-checked (when trusted) or verified here."""
        if self.settings.auth_trust_edge:
            identity = edge_identity(request)
            if identity is not None:
                return identity
        token = bearer_token(request, "x-serverless-authorization") or bearer_token(request)
        if token is None:
            raise AuthError("missing token: send Authorization: Bearer <Google ID token>")
        if not self.google.audiences:
            raise AuthError("no audience configured: set THOTH_AUTH_AUDIENCES or THOTH_PUBLIC_URL")
        return await anyio.to_thread.run_sync(self.google.verify, token)

    async def public(self, request: Request) -> Identity | None:
        """The caller of a non-internal route; raises AuthError when refused."""
        mode = self.settings.auth_mode
        if mode == "off":
            if not self.settings.auth_trust_edge:
                return None  # a laptop: one local caller with every right
            # behind Cloud Run's IAM check: the edge-verified identity, a writer only if THOTH_AUTH_WRITERS says so
            edge = edge_identity(request)
            if edge is None:
                return Identity("anonymous", principal="anonymous", writer=False)
            return email_identity(edge, self.settings.auth_writers)
        token = bearer_token(request)
        if mode == "oauth":
            return await self._oauth_identity(token, request)
        if mode == "tokens":
            if token is None:
                raise AuthError("missing token: send Authorization: Bearer <token>")
            static = self._static_identity(token)
            admin = bool(self.settings.admin_token) and _equal(token, self.settings.admin_token)
            if static is not None:
                return static
            if admin:
                return Identity("admin", principal="admin", writer=True)
            raise AuthError("unknown token")
        if mode == "google":
            identity = email_identity(await self._google_identity(request), self.settings.auth_writers)
            members = self.settings.auth_members
            if members and not (identity.writer or listed(identity.email, members)):
                raise AuthError("this identity is not allowed: not in THOTH_AUTH_MEMBERS")
            return identity
        raise AuthError(f"unknown THOTH_AUTH mode {mode!r}")  # settings built by hand; refuse, never fall open

    def _static_identity(self, token: str) -> Identity | None:
        """A reader's or writer's static token; both lists compared in full: the time says nothing of the role."""
        reader = _matches_any(token, self.settings.auth_tokens)
        writer = _matches_any(token, self.settings.auth_writer_tokens)
        return Identity("token", principal=token_principal(token), writer=writer) if reader or writer else None

    async def _oauth_identity(self, token: str | None, request: Request) -> Identity:
        """An access token this server issued, a static token (scripts, the job) where some are set, or on
        the console's pages its session cookie (thoth.mcp.oauth_console)."""
        from thoth.mcp.oauth import SCOPE_WRITE, TokenRefused
        from thoth.mcp.oauth_console import session

        settings = self.settings
        person = session(self.oauth, request) if token is None and self.oauth is not None else None
        if person is not None:
            email, groups = person
            return Identity("oauth", email, f"email:{email}", listed(email, settings.auth_writers), groups)
        if token is None:
            raise AuthError("missing token: sign in (the 401's WWW-Authenticate names the metadata)")
        if (static := self._static_identity(token)) is not None:
            return static
        if self.oauth is None:
            raise AuthError("THOTH_AUTH=oauth without its provider")  # an app built by hand; refuse, never fall open
        try:
            grant = await self.oauth.verify_access_token(token)
        except TokenRefused as exc:
            raise AuthError(str(exc)) from None
        claims = grant.claims or {}
        email = str(claims["email"])
        writer = SCOPE_WRITE in grant.scopes and listed(email, settings.auth_writers)
        return Identity("oauth", email, f"email:{email.lower()}", writer, groups_of(claims))

    async def internal(self, request: Request) -> Identity:
        """The caller of an /internal route: the admin token or an allowed service account."""
        settings = self.settings
        token = bearer_token(request)
        if settings.admin_token and token is not None and _equal(token, settings.admin_token):
            return Identity("admin", principal="admin", writer=True)
        if not settings.internal_identities:
            raise AuthError("unauthorized: send Authorization: Bearer <THOTH_ADMIN_TOKEN>")
        if token is not None and token.count(".") != 2 and not request.headers.get("x-serverless-authorization"):
            raise AuthError("unauthorized: not the admin token, nor an ID token")
        identity = email_identity(await self._google_identity(request), ())
        if not listed(identity.email, settings.internal_identities):
            raise AuthError("this identity may not call /internal routes: not in THOTH_INTERNAL_IDENTITIES")
        return identity


def _refusal(message: str, token_sent: bool, challenge: str | None = None) -> JSONResponse:
    """A 401; its challenge names an error only when a token was sent (RFC 6750, 3.1)."""
    if challenge is None:
        challenge = f'Bearer error="invalid_token", error_description="{message}"' if token_sent else "Bearer"
    return JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": challenge})


class AuthMiddleware:
    """Checks every HTTP request but the health routes before it reaches a route (pure ASGI, streams intact)."""

    def __init__(
        self, app: ASGIApp, settings: Settings, oauth: ThothProvider | None = None, rules: AccessRules | None = None
    ):
        self.app = app
        self.settings = settings
        self.auth = Authenticator(settings, oauth)
        self.rules = rules  # THOTH_ACCESS_FILE: which collections each caller reads and writes
        self.open_paths = PROBE_PATHS  # health probes: always answered
        if oauth is not None:
            from thoth.mcp.oauth import OPEN_PATHS

            self.open_paths = PROBE_PATHS | OPEN_PATHS  # metadata, sign-in and token routes: before any token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        internal = scope["path"].startswith(INTERNAL_PREFIX)
        if internal and not (self.settings.admin_token or self.settings.internal_identities):
            await _disabled()(scope, receive, send)
            return
        try:
            identity = await (self.auth.internal(request) if internal else self.auth.public(request))
        except AuthError as exc:
            log.info("refused %s %s: %s", scope.get("method"), scope["path"], exc)
            oauth, sent = self.auth.oauth, bearer_token(request) is not None
            if oauth is not None and not internal:
                from thoth.mcp.oauth_console import login_redirect

                response = login_redirect(request) or _refusal(str(exc), sent, oauth.challenge(str(exc), sent))
                await response(scope, receive, send)
                return
            await _refusal(str(exc), sent)(scope, receive, send)
            return
        scope[_SCOPE_IDENTITY] = identity
        if internal:
            scope[_SCOPE_INTERNAL] = identity
        # /internal routes (the admin, the push identity) write for the whole index
        allowed = FULL_ACCESS if internal else access_of(identity, self.rules)
        scope[_SCOPE_ACCESS] = allowed
        with reading(allowed.read):  # every read of this request sees only these collections (thoth.app)
            await self.app(scope, receive, send)


def _disabled() -> JSONResponse:
    return JSONResponse(
        {"error": "admin routes are disabled: set THOTH_ADMIN_TOKEN (or THOTH_INTERNAL_IDENTITIES) to enable them"},
        status_code=503,
    )


def admin_refusal(request: Request, settings: Settings) -> JSONResponse | None:
    """None when the request may use an /internal route; otherwise the response to send (401/503).

    Passes with the admin token, or when the auth middleware established an allowed service-account
    identity for this request (THOTH_INTERNAL_IDENTITIES).
    """
    if request.scope.get(_SCOPE_INTERNAL) is not None:
        return None
    if not settings.admin_token:
        return _disabled()
    token = bearer_token(request)
    if token is None or not _equal(token, settings.admin_token):
        return JSONResponse(
            {"error": "unauthorized: send Authorization: Bearer <THOTH_ADMIN_TOKEN>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return None
