"""The Host and Origin check every route passes (DNS-rebinding protection; docs/security.md, "HTTP")."""

from __future__ import annotations

import ipaddress
import logging

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from thoth.config import Settings

log = logging.getLogger("thoth.hosts")

LOOPBACK = ("127.0.0.1", "localhost", "::1")
PROBE_PATHS = frozenset({"/", "/health"})  # the health routes; also exempt from auth and the access log


def allowed_hosts(settings: Settings) -> tuple[str, ...]:
    """The Host headers accepted; empty: no check (a public interface without THOTH_ALLOWED_HOSTS)."""
    if settings.allowed_hosts:
        return tuple(settings.allowed_hosts)
    if settings.host in LOOPBACK:
        return ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
    return ()


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    host = host.lower()
    return any(host == name or (name.endswith(":*") and host.startswith(name[:-1])) for name in allowed)


def origin_allowed(origin: str, allowed: tuple[str, ...]) -> bool:
    scheme, sep, host = origin.lower().partition("://")
    return bool(sep) and scheme in ("http", "https") and host_allowed(host, allowed)


def is_address(host: str) -> bool:
    """Whether a Host header names an IP address (with or without a port), not a DNS name."""
    name = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheckMiddleware:
    """Refuses a request whose Host or Origin is not this server's (see the module docstring)."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app = app
        self.allowed = allowed_hosts(settings)

    def refusal(self, scope: Scope) -> PlainTextResponse | None:
        headers = {k: v.decode("latin-1") for k, v in scope["headers"] if k in (b"host", b"origin")}
        host, origin = headers.get(b"host", ""), headers.get(b"origin")
        probe = scope["path"] in PROBE_PATHS and is_address(host)
        if not (probe or host_allowed(host, self.allowed)):
            return PlainTextResponse("Invalid Host header: not a name this server answers to", status_code=421)
        if origin is not None and not origin_allowed(origin, self.allowed):  # "null" (a sandboxed page) too
            return PlainTextResponse("Invalid Origin header: not this server's origin", status_code=403)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.allowed:
            refusal = self.refusal(scope)
            if refusal is not None:
                log.info("refused %s %s: %s", scope.get("method"), scope["path"], refusal.body.decode())
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
