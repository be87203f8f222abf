"""The console's sign-in with THOTH_AUTH=oauth: the same upstream provider, and a session cookie sealed with the
same key (docs/security.md, "HTTP"; membership checked again on every request)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoth.access import groups_of
from thoth.mcp.oauth_upstream import UpstreamIdentity

if TYPE_CHECKING:
    from thoth.mcp.oauth import ThothProvider

CONSOLE_LOGIN_PATH = "/oauth/console"
SESSION_COOKIE = "thoth_console"
SESSION_SECONDS = 8 * 3600
CONSOLE_PREFIX = "/ui"


def safe_next(value: str | None) -> str:
    """Where to return after sign-in: a console path of this server only (never another site)."""
    if value and value.startswith(CONSOLE_PREFIX) and not value.startswith("//") and "\\" not in value:
        return value
    return CONSOLE_PREFIX + "/"


async def login(provider: ThothProvider, request: Request) -> Response:
    return await provider.to_upstream({"console": True, "next": safe_next(request.query_params.get("next"))})


def signed_in(provider: ThothProvider, pending: dict[str, Any], person: UpstreamIdentity) -> Response:
    session = provider.keys.seal(
        "console", {"sub": person.subject, "email": person.email, "groups": list(person.groups)}, SESSION_SECONDS
    )
    return provider.redirect_with_cookie(
        safe_next(pending.get("next")), SESSION_COOKIE, session, SESSION_SECONDS, CONSOLE_PREFIX
    )


def session(provider: ThothProvider, request: Request) -> tuple[str, tuple[str, ...]] | None:
    """The signed-in person's (email, groups) from the console's cookie, when it is valid and still a member."""
    if not request.url.path.startswith(CONSOLE_PREFIX):
        return None
    claims = provider.keys.open("console", request.cookies.get(SESSION_COOKIE, ""))
    if claims is None or not provider.allowed(claims["email"]):
        return None
    return claims["email"], groups_of(claims)


def login_redirect(request: Request) -> RedirectResponse | None:
    """For a browser's GET of a console page without a session: to the sign-in, then back here."""
    if request.method != "GET" or not request.url.path.startswith(CONSOLE_PREFIX):
        return None
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"{CONSOLE_LOGIN_PATH}?{urlencode({'next': target})}", status_code=302)
