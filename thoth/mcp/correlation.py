"""A call's correlation id: the one a client sent (or the HTTP layer set), attached to its log lines."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from thoth.logs import request_context

if TYPE_CHECKING:  # the SDK is imported with the first MCP request, not with the HTTP layer that uses this
    from mcp.server.mcpserver import Context

CORRELATION_FIELD = "correlationId"  # the key in the log context (thoth.mcp.context sets it per HTTP request)
CORRELATION_HEADER = "x-correlation-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # nothing that could forge a log line


def valid_correlation_id(value: object) -> str | None:
    return value if isinstance(value, str) and _SAFE_ID.fullmatch(value) else None


def current_correlation_id() -> str:
    """The id in the log context (thoth.mcp.context, or `correlation` below), else a new one."""
    return valid_correlation_id(request_context.get().get(CORRELATION_FIELD)) or uuid.uuid4().hex


def correlation_id(ctx: Context | None) -> str:
    """The call's correlation id: `_meta.correlationId`, else the X-Correlation-ID header of the message's
    request, else the one the HTTP layer set for the request (thoth.mcp.context), else a new one."""
    meta: object = None
    headers: object = None
    if ctx is not None:
        try:
            meta = ctx.request_context.meta
            headers = ctx.headers
        except ValueError:  # no request (a direct call in a test)
            pass
    candidates = [
        meta.get(CORRELATION_FIELD) if isinstance(meta, dict) else None,
        headers.get(CORRELATION_HEADER) if headers is not None else None,  # type: ignore[attr-defined]
    ]
    return next((c for c in map(valid_correlation_id, candidates) if c), None) or current_correlation_id()


@contextmanager
def correlation(ctx: Context | None, cid: str | None = None) -> Iterator[str]:
    """Attach the call's correlation id (`cid` when given) to every log line written inside the block."""
    cid = cid or correlation_id(ctx)
    token = request_context.set({**request_context.get(), CORRELATION_FIELD: cid})
    try:
        yield cid
    finally:
        request_context.reset(token)
