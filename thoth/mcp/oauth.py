"""THOTH_AUTH=oauth: Thoth as the protected resource and the authorization server its metadata names, on the
MCP SDK's server auth (mcp.server.auth), the person signing in at the upstream provider (thoth.mcp.oauth_upstream).

The flow, what each route checks and what is sealed or kept where: docs/security.md ("HTTP") and docs/deploy.md
("People sign in"). Any instance completes any step: what is issued is sealed (thoth.mcp.oauth_keys), and the
index keeps only what instances must agree on (thoth.store.oauth_state)."""

from __future__ import annotations

import base64
import hashlib
import html
import logging
import secrets
import time
from functools import partial
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from thoth.access import listed
from thoth.config import Settings
from thoth.mcp import oauth_console
from thoth.mcp.oauth_clients import Clients, loopback_url
from thoth.mcp.oauth_console import CONSOLE_LOGIN_PATH
from thoth.mcp.oauth_keys import Keys
from thoth.mcp.oauth_upstream import Upstream, UpstreamError, UpstreamIdentity
from thoth.store.oauth_state import OAuthState

log = logging.getLogger("thoth.oauth")

SCOPE_READ = "thoth:read"
SCOPE_WRITE = "thoth:write"  # the writer role, for a person THOTH_AUTH_WRITERS lists
SCOPES = (SCOPE_READ, SCOPE_WRITE)
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 86400
CODE_SECONDS = 300
PENDING_SECONDS = 600
LIVE_KEEP_SECONDS = 5.0  # a family's revocation, as read, is kept this long per instance
CONSENT_PATH = "/oauth/consent"
CALLBACK_PATH = "/oauth/callback"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
# A sign-in in flight: the cookie named by the upstream `state` holds it, sealed (path /oauth/callback), so the
# state stays short for any provider and the callback works only in the browser that approved.
SIGN_IN_COOKIE = "thoth_signin_"
# The routes a person or client reaches before holding a token (the auth middleware lets them through).
OPEN_PATHS = frozenset(
    {
        RESOURCE_METADATA_PATH,
        RESOURCE_METADATA_PATH + "/mcp",
        "/.well-known/oauth-authorization-server",
        "/authorize",
        "/token",
        "/register",
        "/revoke",
        CONSENT_PATH,
        CALLBACK_PATH,
        CONSOLE_LOGIN_PATH,
    }
)
# A sealed grant's claims (the names its blob has kept) -> the fields of its record.
_GRANT_CLAIMS = {"scopes": "scopes", "exp": "expires_at", "resource": "resource", "sub": "subject"}
_GRANT_CLAIMS |= {"email": "email", "groups": "groups"}
_CODE_CLAIMS = _GRANT_CLAIMS | {"code_challenge": "code_challenge", "redirect_uri": "redirect_uri", "jti": "jti"}
_CODE_CLAIMS |= {"explicit": "redirect_uri_provided_explicitly"}
_REFRESH_CLAIMS = _GRANT_CLAIMS | {"fam": "family", "gen": "generation"}
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))  # issuers compare as strings
_REGISTRATION = ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES))


class TokenRefused(Exception):
    """An access token was refused; the message is safe to show."""


class ThothCode(AuthorizationCode):
    jti: str
    email: str
    groups: list[str] = []


class ThothRefreshToken(RefreshToken):
    family: str
    generation: int
    email: str
    groups: list[str] = []


def _digest(client_id: str) -> str:
    """What a code or refresh token keeps of its client's id (a registration's id is long): enough to match."""
    return hashlib.sha256(client_id.encode()).hexdigest()[:32]


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


class ThothProvider:
    """The SDK's authorization server provider (mcp.server.auth.provider.OAuthAuthorizationServerProvider)."""

    def __init__(self, settings: Settings, state: OAuthState, keys: Keys | None = None):
        self.settings = settings
        self.issuer = settings.public_url
        self.resource = settings.public_url + "/mcp"
        self.resources = (self.resource, settings.public_url)
        self.keys = keys or Keys.from_file(settings.oauth_key_file)
        self.state = state
        self.clients = Clients(self.keys, SCOPES, loopback_allowed=loopback_url(settings.public_url))
        self.upstream = Upstream(settings.oauth_issuer, settings.oauth_client_id, settings.oauth_client_secret)
        self._live: dict[str, tuple[float, bool]] = {}

    # -- who may sign in --------------------------------------------------------------------

    def allowed(self, email: str) -> bool:
        members = self.settings.auth_members
        return not members or listed(email, members) or listed(email, self.settings.auth_writers)

    def refusal(self, person: UpstreamIdentity) -> str | None:
        if not person.email_verified:
            return f"the sign-in provider has not verified the email address {person.email}; Thoth needs a verified one"
        if not self.allowed(person.email):
            return f"{person.email} is not a member of this Thoth server (THOTH_AUTH_MEMBERS); ask its operator"
        return None

    # -- clients ----------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients.register(client_info)

    # -- authorization ----------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        resource = (params.resource or self.resource).rstrip("/")
        if resource not in self.resources:
            raise AuthorizeError("invalid_target", f"resource must be {self.resource}, not {params.resource}")
        asked = params.scopes or (client.scope or " ".join(SCOPES)).split()
        scopes = [SCOPE_READ] + [s for s in asked if s == SCOPE_WRITE]  # reading is what a token is for
        pending = {
            "client_id": client.client_id,
            "redirect_uri": str(params.redirect_uri),
            "explicit": params.redirect_uri_provided_explicitly,
            "code_challenge": params.code_challenge,
            "state": params.state,
            "scopes": scopes,
            "resource": resource,
            "client_name": client.client_name,
        }
        request = self.keys.seal("pending", pending, PENDING_SECONDS)
        return f"{self.issuer}{CONSENT_PATH}?{urlencode({'request': request})}"

    def _client_redirect(self, pending: dict[str, Any], **params: str | None) -> RedirectResponse:
        url = construct_redirect_uri(pending["redirect_uri"], state=pending.get("state"), iss=self.issuer, **params)
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})

    async def consent(self, request: Request) -> Response:
        """GET: the page where the person approves the client; POST: on to the upstream sign-in."""
        form = await request.form() if request.method == "POST" else request.query_params
        blob = form.get("request")
        pending = self.keys.open("pending", blob) if isinstance(blob, str) else None
        if pending is None:
            return _page("This sign-in has expired or was not started here. Start again from your client.", 400)
        if request.method == "GET":
            return _consent_page(pending, blob, self.settings.public_url)
        origin = request.headers.get("origin")
        if origin is not None and origin != _origin(self.settings.public_url):  # a cross-site form post
            return _page("This approval did not come from this server's page.", 403)
        if form.get("action") != "approve":
            return self._client_redirect(pending, error="access_denied", error_description="the person declined")
        return await self.to_upstream(pending)

    async def to_upstream(self, pending: dict[str, Any]) -> Response:
        """On to the upstream provider's sign-in; `pending` goes sealed into the cookie its `state` names."""
        verifier, nonce, state = secrets.token_urlsafe(48), secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        try:
            url = await self.upstream.authorization_url(self.issuer + CALLBACK_PATH, state, nonce, _challenge(verifier))
        except UpstreamError as exc:
            return _page(str(exc), 502)
        sealed = self.keys.seal("upstream", {**pending, "verifier": verifier, "nonce": nonce}, PENDING_SECONDS)
        return self.redirect_with_cookie(url, SIGN_IN_COOKIE + state, sealed, PENDING_SECONDS, CALLBACK_PATH)

    def redirect_with_cookie(self, url: str, name: str, value: str, seconds: int, path: str) -> RedirectResponse:
        """A redirect to `url` that sets a cookie for `path` (HttpOnly, SameSite=Lax, Secure on https)."""
        response = RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
        secure = self.settings.public_url.startswith("https://")
        response.set_cookie(name, value, max_age=seconds, path=path, httponly=True, secure=secure, samesite="lax")
        return response

    async def callback(self, request: Request) -> Response:
        """The upstream provider's redirect back: check the person, then send the client its code."""
        cookie = SIGN_IN_COOKIE + (request.query_params.get("state") or "")
        pending = self.keys.open("upstream", request.cookies.get(cookie, ""))
        if pending is None:
            return _page(
                "This sign-in has expired, or was started in another browser. Start again from your client.", 400
            )
        response = await self._signed_in(request, pending)
        response.delete_cookie(cookie, path=CALLBACK_PATH)
        return response

    async def _signed_in(self, request: Request, pending: dict[str, Any]) -> Response:
        params = request.query_params
        console = pending.get("console", False)  # the console's own sign-in (thoth.mcp.oauth_console)

        def failed(page: str, status: int, error: str, description: str) -> Response:
            """The console's page, or the client's redirect with the error."""
            if console:
                return _page(page, status)
            return self._client_redirect(pending, error=error, error_description=description)

        if params.get("error") or not params.get("code"):
            reason = params.get("error_description") or params.get("error") or "no code"
            return failed(f"Sign-in failed: {reason}", 400, "access_denied", f"sign-in failed: {reason}")
        try:
            person = await self.upstream.exchange(
                params["code"], self.issuer + CALLBACK_PATH, pending["verifier"], pending["nonce"]
            )
        except UpstreamError as exc:
            return failed(str(exc), 502, "temporarily_unavailable", str(exc))
        refusal = self.refusal(person)
        if refusal is not None:
            log.info("sign-in refused: %s", refusal)
            return failed(f"Refused: {refusal}.", 403, "access_denied", refusal)
        if console:
            return oauth_console.signed_in(self, pending, person)
        code = {k: pending[k] for k in ("redirect_uri", "explicit", "code_challenge", "scopes", "resource")}
        code |= {
            "client": _digest(pending["client_id"]),
            "jti": secrets.token_urlsafe(24),
            "sub": person.subject,
            "email": person.email,
        }
        code["groups"] = list(person.groups)
        return self._client_redirect(pending, code=self.keys.seal("code", code, CODE_SECONDS))

    def _grant(
        self, kind: str, blob: str, client: OAuthClientInformationFull, names: dict[str, str]
    ) -> dict[str, Any] | None:
        """A sealed code's or refresh token's fields (its claims by `names`), when it is one issued to `client`."""
        claims = self.keys.open(kind, blob)
        if claims is None or claims["client"] != _digest(client.client_id):
            return None
        return {field: claims[claim] for claim, field in names.items()} | {"client_id": client.client_id}

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> ThothCode | None:
        fields = self._grant("code", authorization_code, client, _CODE_CLAIMS)
        return ThothCode(code=authorization_code, **fields) if fields is not None else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: ThothCode
    ) -> OAuthToken:
        family = authorization_code.jti  # a code starts one refresh-token family, named after it
        if not await anyio.to_thread.run_sync(self.state.claim, f"code:{family}", time.time() + CODE_SECONDS):
            await self._revoke_family(family)  # RFC 6749 10.5: a replayed code revokes what it was exchanged for
            raise TokenError("invalid_grant", "this authorization code was already used")
        await anyio.to_thread.run_sync(self.state.start, f"family:{family}", time.time() + REFRESH_SECONDS)
        return self._tokens(client, authorization_code, family, 0)

    def _tokens(
        self,
        client: OAuthClientInformationFull,
        grant: ThothCode | ThothRefreshToken,
        family: str,
        generation: int,
        scopes: list[str] | None = None,
    ) -> OAuthToken:
        """An access token (for `scopes`, a refresh's narrowing, else the grant's) and the family's next
        refresh token (always the grant's scopes, RFC 6749 6)."""
        now = int(time.time())
        scopes = scopes or grant.scopes
        access = self.keys.sign(
            {
                "iss": self.issuer,
                "aud": grant.resource,
                "sub": grant.subject,
                "client_id": client.client_id,
                "scope": " ".join(scopes),
                "email": grant.email,
                "groups": list(grant.groups),
                "fam": family,
                "iat": now,
                "exp": now + ACCESS_SECONDS,
                "jti": secrets.token_urlsafe(16),
            }
        )
        refresh = None
        if "refresh_token" in client.grant_types:  # the grant's own claims, and the family's next generation
            kept = {claim: getattr(grant, field) for claim, field in _GRANT_CLAIMS.items() if claim != "exp"}
            kept |= {"client": _digest(client.client_id), "fam": family, "gen": generation}
            refresh = self.keys.seal("refresh", kept, REFRESH_SECONDS)
        return OAuthToken(access_token=access, expires_in=ACCESS_SECONDS, scope=" ".join(scopes), refresh_token=refresh)

    # -- refresh and revocation ---------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> ThothRefreshToken | None:
        fields = self._grant("refresh", refresh_token, client, _REFRESH_CLAIMS)
        return ThothRefreshToken(token=refresh_token, **fields) if fields is not None else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: ThothRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        family = refresh_token.family
        if not self.allowed(refresh_token.email):
            await self._revoke_family(family)
            raise TokenError("invalid_grant", f"{refresh_token.email} is no longer a member of this Thoth server")
        advanced = await anyio.to_thread.run_sync(
            self.state.advance, f"family:{family}", refresh_token.generation, time.time() + REFRESH_SECONDS
        )
        if not advanced:
            self._live[family] = (time.monotonic() + LIVE_KEEP_SECONDS, False)
            raise TokenError("invalid_grant", "this refresh token was already used or revoked; sign in again")
        return self._tokens(client, refresh_token, family, refresh_token.generation + 1, scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        try:
            return await self.verify_access_token(token)
        except TokenRefused:
            return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        family = token.family if isinstance(token, ThothRefreshToken) else (token.claims or {}).get("fam")
        if isinstance(family, str):
            await self._revoke_family(family)

    async def _revoke_family(self, family: str) -> None:
        await anyio.to_thread.run_sync(self.state.revoke, f"family:{family}")
        self._live[family] = (time.monotonic() + LIVE_KEEP_SECONDS, False)

    async def _family_live(self, family: str) -> bool:
        kept = self._live.get(family)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
        live = await anyio.to_thread.run_sync(self.state.live, f"family:{family}")
        self._live[family] = (time.monotonic() + LIVE_KEEP_SECONDS, live)
        if len(self._live) > 10_000:  # keep the memo small: drop what has gone stale
            now = time.monotonic()
            self._live = {k: v for k, v in self._live.items() if v[0] > now}
        return live

    # -- the protected resource ---------------------------------------------------------------

    async def verify_access_token(self, token: str) -> AccessToken:
        """The access token's grant after every check; raises TokenRefused saying which failed."""
        claims = self.keys.verify(token)
        if claims is None:
            raise TokenRefused("not an access token this server issued (bad signature or format)")
        if claims.get("iss") != self.issuer:
            raise TokenRefused("token issued by another issuer")
        if claims.get("aud") not in self.resources:
            raise TokenRefused(f"token issued for another resource: this one is {self.resource}")
        exp = claims.get("exp")
        if not isinstance(exp, int) or exp < time.time():
            raise TokenRefused("token expired")
        scopes = str(claims.get("scope") or "").split()
        if SCOPE_READ not in scopes:
            raise TokenRefused(f"token lacks the {SCOPE_READ} scope")
        email = claims.get("email")
        if not isinstance(email, str) or not self.allowed(email):
            raise TokenRefused("this identity is not allowed: not in THOTH_AUTH_MEMBERS")
        family = claims.get("fam")
        if not isinstance(family, str) or not await self._family_live(family):
            raise TokenRefused("token revoked")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id")),
            scopes=scopes,
            expires_at=exp,
            resource=claims["aud"],
            subject=claims.get("sub"),
            claims={"iss": self.issuer, "email": email, "groups": claims.get("groups") or [], "fam": family},
        )

    def challenge(self, description: str, token_sent: bool) -> str:
        """The WWW-Authenticate value of a 401: where the metadata is and the scopes to ask for, and what was
        wrong with the token, when one was sent (RFC 6750, 3.1: a request without one gets no error code)."""
        description = description.replace('"', "'")
        error = f'error="invalid_token", error_description="{description}", ' if token_sent else ""
        return (
            f'Bearer {error}resource_metadata="{self.issuer}{RESOURCE_METADATA_PATH}/mcp", scope="{" ".join(SCOPES)}"'
        )

    # -- metadata and routes ------------------------------------------------------------------

    def metadata(self) -> OAuthMetadata:
        """RFC 8414 metadata: the SDK's, plus client ID metadata documents and RFC 9207's `iss`."""
        built = build_metadata(_URL.validate_python(self.issuer), None, _REGISTRATION, RevocationOptions(enabled=True))
        fields = built.model_dump(mode="json", exclude_none=True)
        fields |= {
            "issuer": self.issuer,
            "scopes_supported": list(SCOPES),
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
        }
        return OAuthMetadata.model_validate(fields)

    def resource_metadata(self, resource: str) -> ProtectedResourceMetadata:
        return ProtectedResourceMetadata.model_validate(
            {
                "resource": resource,
                "authorization_servers": [self.issuer],
                "scopes_supported": list(SCOPES),
                "resource_name": "Thoth",
                "bearer_methods_supported": ["header"],
            }
        )

    def routes(self) -> list[Route]:
        sdk_routes = create_auth_routes(
            self,  # type: ignore[arg-type]  # the provider protocol, with Thoth's code and token records
            _URL.validate_python(self.issuer),
            client_registration_options=_REGISTRATION,
            revocation_options=RevocationOptions(enabled=True),
        )
        metadata_path = "/.well-known/oauth-authorization-server"

        def metadata(path: str, handler: MetadataHandler | ProtectedResourceMetadataHandler) -> Route:
            methods = ["GET", "OPTIONS"]
            return Route(path, cors_middleware(handler.handle, methods), methods=methods)

        return [
            metadata(metadata_path, MetadataHandler(self.metadata())),
            *(r for r in sdk_routes if r.path != metadata_path),
            metadata(
                RESOURCE_METADATA_PATH + "/mcp", ProtectedResourceMetadataHandler(self.resource_metadata(self.resource))
            ),
            metadata(RESOURCE_METADATA_PATH, ProtectedResourceMetadataHandler(self.resource_metadata(self.issuer))),
            Route(CONSENT_PATH, self.consent, methods=["GET", "POST"]),
            Route(CALLBACK_PATH, self.callback, methods=["GET"]),
            Route(CONSOLE_LOGIN_PATH, partial(oauth_console.login, self), methods=["GET"]),
        ]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _page(message: str, status: int) -> HTMLResponse:
    body = f"<!doctype html><title>Thoth sign-in</title><h1>Thoth sign-in</h1><p>{html.escape(message)}</p>"
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


def _consent_page(pending: dict[str, Any], blob: str, public_url: str) -> HTMLResponse:
    name = pending.get("client_name") or "An application"
    target = urlsplit(pending["redirect_uri"])
    body = f"""<!doctype html><title>Sign in to Thoth</title>
<h1>Sign in to Thoth</h1>
<p><strong>{html.escape(name)}</strong> asks to search and read Thoth at {html.escape(public_url)} as you.
After you sign in, you are sent back to <code>{html.escape(f"{target.scheme}://{target.netloc}")}</code>.</p>
<form method="post" action="{CONSENT_PATH}">
<input type="hidden" name="request" value="{html.escape(blob)}">
<button name="action" value="approve">Continue to sign in</button>
<button name="action" value="deny">Cancel</button>
</form>"""
    return HTMLResponse(body, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})
