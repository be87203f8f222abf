"""The upstream OpenID Connect provider people sign in with (THOTH_OAUTH_ISSUER): discovery, the sign-in
redirect, the code exchange and the ID token's checks. Only `email`, `email_verified` and `groups` are taken
from it; thoth.mcp.oauth decides who may sign in."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from thoth.access import groups_of
from thoth.errors import ThothError

log = logging.getLogger("thoth.oauth")

SCOPES = "openid email profile"
TIMEOUT_SECONDS = 10
JWKS_REFETCH_SECONDS = 60
ID_TOKEN_ALGORITHMS = ["RS256", "ES256", "RS384", "RS512", "ES384", "PS256"]


class UpstreamError(ThothError):
    """The provider refused, could not be reached, or sent something that does not verify; safe to show."""


@dataclass(frozen=True)
class UpstreamIdentity:
    subject: str
    email: str
    email_verified: bool
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Endpoints:
    issuer: str
    authorization: str
    token: str
    jwks: str
    secret_in_form: bool  # client_secret_post where the provider lists it (or lists nothing), else HTTP Basic


class Upstream:
    """One provider, discovered lazily; safe to share between requests (its caches are whole replacements)."""

    def __init__(self, issuer: str, client_id: str, client_secret: str):
        self.issuer = issuer
        self.client_id = client_id
        self._client_secret = client_secret
        self._endpoints: Endpoints | None = None
        self._keys: KeySet | None = None
        self._keys_fetched = 0.0

    async def _get(self, url: str) -> dict:
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client:
                response = await client.get(url, headers={"Accept": "application/json"})
            response.raise_for_status()
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("sign-in provider: GET %s failed: %s", url, type(exc).__name__)
            raise UpstreamError(f"the sign-in provider {self.issuer} cannot be reached now; try again") from None
        if not isinstance(body, dict):
            raise UpstreamError(f"the sign-in provider {self.issuer} answered {url} with something not a JSON object")
        return body

    async def endpoints(self) -> Endpoints:
        if self._endpoints is None:
            config = await self._get(f"{self.issuer}/.well-known/openid-configuration")
            if config.get("issuer") != self.issuer:  # exact match (OpenID Connect Discovery 4.3)
                raise UpstreamError(
                    f"the sign-in provider's discovery names issuer {config.get('issuer')!r}, not {self.issuer!r}"
                )
            try:
                methods = config.get("token_endpoint_auth_methods_supported") or ["client_secret_post"]
                self._endpoints = Endpoints(
                    self.issuer,
                    config["authorization_endpoint"],
                    config["token_endpoint"],
                    config["jwks_uri"],
                    "client_secret_post" in methods,
                )
            except KeyError as exc:
                raise UpstreamError(f"the sign-in provider's discovery lacks {exc.args[0]}") from None
        return self._endpoints

    async def authorization_url(self, redirect_uri: str, state: str, nonce: str, code_challenge: str) -> str:
        endpoints = await self.endpoints()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": SCOPES,
            "state": state,
            "nonce": nonce,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
        }
        separator = "&" if "?" in endpoints.authorization else "?"
        return f"{endpoints.authorization}{separator}{urlencode(query)}"

    async def _keyset(self, kid: str | None) -> KeySet:
        now = time.monotonic()
        known = self._keys is not None and (kid is None or any(k.kid == kid for k in self._keys.keys))
        if not known and (self._keys is None or now - self._keys_fetched > JWKS_REFETCH_SECONDS):
            endpoints = await self.endpoints()
            try:
                self._keys = KeySet.import_key_set(await self._get(endpoints.jwks))  # type: ignore[arg-type]
            except (JoseError, ValueError, TypeError):
                raise UpstreamError("the sign-in provider's signing keys (JWKS) cannot be read") from None
            self._keys_fetched = now
        assert self._keys is not None
        return self._keys

    async def exchange(self, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> UpstreamIdentity:
        """The person the provider signed in, from its ID token for `code`."""
        endpoints = await self.endpoints()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        auth = None
        if endpoints.secret_in_form:
            form |= {"client_id": self.client_id, "client_secret": self._client_secret}
        else:  # RFC 6749 2.3.1: both form-encoded, then HTTP Basic
            auth = httpx.BasicAuth(quote(self.client_id, safe=""), quote(self._client_secret, safe=""))
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client:
                response = await client.post(
                    endpoints.token, data=form, headers={"Accept": "application/json"}, auth=auth
                )
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("sign-in provider: token request failed: %s", type(exc).__name__)
            raise UpstreamError(f"the sign-in provider {self.issuer} cannot be reached now; try again") from None
        if response.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("id_token"), str):
            error = body.get("error") if isinstance(body, dict) else None
            raise UpstreamError(f"the sign-in provider refused the sign-in ({error or response.status_code})")
        return await self.verify_id_token(body["id_token"], nonce)

    async def verify_id_token(self, id_token: str, nonce: str) -> UpstreamIdentity:
        try:
            header = jws.extract_compact(id_token.encode()).protected
        except (JoseError, ValueError):
            raise UpstreamError("the sign-in provider's ID token is malformed") from None
        keys = await self._keyset(header.get("kid"))
        try:
            token = jwt.decode(id_token, keys, algorithms=ID_TOKEN_ALGORITHMS)
            jwt.JWTClaimsRegistry(
                leeway=30,
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.client_id},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
                sub={"essential": True},
            ).validate(token.claims)
        except JoseError as exc:
            why = exc.description or exc.error  # which claim, where a claim is wrong
            raise UpstreamError(f"the sign-in provider's ID token does not verify ({why})") from None
        claims = token.claims
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise UpstreamError("the sign-in provider sent no email address for this account")
        verified = claims.get("email_verified") is True
        return UpstreamIdentity(str(claims["sub"]), email.lower(), verified, groups_of(claims))
