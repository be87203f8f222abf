"""The clients Thoth's authorization server knows (THOTH_AUTH=oauth), with nothing stored: a registration's
client id is its metadata sealed (its secret an HMAC of that id), and an https client id is a client ID
metadata document, fetched from a public host only (no SSRF into the service's own network; loopback only when
THOTH_PUBLIC_URL is on loopback). The name is resolved for the check and again by the fetch: a name that
changes its address in between is not caught."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from thoth.mcp.oauth_keys import Keys

log = logging.getLogger("thoth.oauth")

DOCUMENT_MAX_BYTES = 5_000
DOCUMENT_TIMEOUT_SECONDS = 5
DOCUMENT_KEEP_SECONDS = 300
DOCUMENTS_KEPT = 1000  # documents kept per instance at most
# What a registration keeps of the client's metadata (the rest of RFC 7591's fields are not used here).
KEPT_FIELDS = ("redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types", "scope", "client_name")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class Clients:
    def __init__(self, keys: Keys, scopes: tuple[str, ...], loopback_allowed: bool):
        self.keys = keys
        self.scopes = scopes
        self.loopback_allowed = loopback_allowed
        self._documents: dict[str, tuple[float, OAuthClientInformationFull]] = {}

    # -- registrations ---------------------------------------------------------------------

    def register(self, client: OAuthClientInformationFull) -> None:
        """Give a validated registration its sealed client id and derived secret, in place: the SDK's
        registration handler answers with this same record (mcp.server.auth.handlers.register)."""
        kept = client.model_dump(mode="json", include=set(KEPT_FIELDS), exclude_none=True)
        client.client_id = self.keys.seal("client", {**kept, "iat": client.client_id_issued_at}, None)
        if client.token_endpoint_auth_method != "none":
            client.client_secret = self.keys.client_secret(client.client_id)

    def _registered(self, client_id: str) -> OAuthClientInformationFull | None:
        claims = self.keys.open("client", client_id)
        if claims is None:
            return None
        fields = {k: claims[k] for k in KEPT_FIELDS if k in claims}
        secret = None if fields.get("token_endpoint_auth_method") == "none" else self.keys.client_secret(client_id)
        return OAuthClientInformationFull(
            **fields, client_id=client_id, client_secret=secret, client_id_issued_at=claims.get("iat")
        )

    # -- client ID metadata documents --------------------------------------------------------

    async def _public_host(self, host: str) -> bool:
        """Whether `host` resolves only to addresses this server may fetch from."""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except OSError:
            return False
        addresses = {ipaddress.ip_address(info[4][0]) for info in infos}
        if not addresses:
            return False
        if all(a.is_global for a in addresses):
            return True
        return self.loopback_allowed and all(a.is_loopback for a in addresses)

    async def _document(self, url: str) -> OAuthClientInformationFull | None:
        kept = self._documents.get(url)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
        parts = urlsplit(url)
        if parts.username or parts.password or parts.fragment or not parts.hostname:
            log.info("client id %s refused: credentials, a fragment or no host in the URL", url)
            return None
        if not await self._public_host(parts.hostname):
            log.info("client id %s refused: its host is not public (and this server is not on loopback)", url)
            return None
        try:
            async with httpx.AsyncClient(timeout=DOCUMENT_TIMEOUT_SECONDS, follow_redirects=False) as http:
                async with http.stream("GET", url, headers={"Accept": "application/json"}) as response:
                    body = b""
                    async for piece in response.aiter_bytes():
                        body += piece
                        if len(body) > DOCUMENT_MAX_BYTES:
                            log.info("client id %s refused: its document is over %d bytes", url, DOCUMENT_MAX_BYTES)
                            return None
            if response.status_code != 200:
                log.info("client id %s refused: its document answered %d", url, response.status_code)
                return None
            document: Any = httpx.Response(200, content=body).json()
        except (httpx.HTTPError, ValueError) as exc:
            log.info("client id %s refused: its document cannot be read (%s)", url, type(exc).__name__)
            return None
        client = self._from_document(url, document)
        if client is not None:
            now = time.monotonic()
            if len(self._documents) >= DOCUMENTS_KEPT:  # many distinct ids: keep only the unexpired, else none
                kept_now = {k: v for k, v in self._documents.items() if v[0] > now}
                self._documents = kept_now if len(kept_now) < DOCUMENTS_KEPT else {}
            self._documents[url] = (now + DOCUMENT_KEEP_SECONDS, client)
        return client

    def _from_document(self, url: str, document: Any) -> OAuthClientInformationFull | None:
        if not isinstance(document, dict) or document.get("client_id") != url:
            log.info("client id %s refused: the document's client_id is not its own URL", url)
            return None
        method = document.get("token_endpoint_auth_method") or "none"
        if method != "none" or "client_secret" in document:
            log.info("client id %s refused: a metadata document describes a public client (no secret)", url)
            return None
        scope = " ".join(s for s in (document.get("scope") or " ".join(self.scopes)).split() if s in self.scopes)
        try:
            return OAuthClientInformationFull(
                client_id=url,
                redirect_uris=document.get("redirect_uris"),
                token_endpoint_auth_method="none",
                grant_types=document.get("grant_types") or ["authorization_code", "refresh_token"],
                response_types=document.get("response_types") or ["code"],
                scope=scope or None,
                client_name=document.get("client_name"),
            )
        except ValidationError:
            log.info("client id %s refused: its document's metadata is not valid", url)
            return None

    async def get(self, client_id: str) -> OAuthClientInformationFull | None:
        parts = urlsplit(client_id)
        if parts.scheme == "https" and parts.path not in ("", "/"):  # a client ID metadata document's URL
            client = await self._document(client_id)
        else:
            client = self._registered(client_id)
        if client is not None and not client.redirect_uris:
            return None
        return client


def loopback_url(url: str) -> bool:
    return (urlsplit(url).hostname or "") in LOOPBACK_NAMES
