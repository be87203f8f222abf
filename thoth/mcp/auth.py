"""Request authorisation helpers shared by the HTTP routes.

`/internal/*` routes need the admin token (THOTH_ADMIN_TOKEN). With no admin
token configured those routes refuse everything (they never fall open).
Comparisons are constant-time; tokens are never logged.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse

from thoth.config import Settings


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def admin_refusal(request: Request, settings: Settings) -> JSONResponse | None:
    """None when the request carries the admin token; otherwise the response to send (401/503)."""
    if not settings.admin_token:
        return JSONResponse(
            {"error": "admin routes are disabled: set THOTH_ADMIN_TOKEN to enable them"}, status_code=503
        )
    token = bearer_token(request)
    if token is None or not hmac.compare_digest(token.encode(), settings.admin_token.encode()):
        return JSONResponse(
            {"error": "unauthorized: send Authorization: Bearer <THOTH_ADMIN_TOKEN>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return None
