"""Log messages for the client (docs/clients.md, "Logging"): `logging/setLevel`, and one `info` line per tool
call with names, counts and times, never document text."""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from typing import Any, get_args

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import EmptyResult, LoggingLevel, SetLevelRequestParams

from thoth.mcp import sdk
from thoth.mcp.streaming import LOG_LEVEL_META

log = logging.getLogger("thoth.tools")

LEVELS: tuple[str, ...] = get_args(LoggingLevel)  # debug … emergency, in rising severity
DEFAULT_LEVEL = "info"


class ClientLog:
    def __init__(self) -> None:
        # The level a connection set with logging/setLevel: a stdio or SSE session keeps it; a stateless
        # HTTP request is a connection of its own, so there it holds for that request only.
        self._levels: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()

    async def set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        connection = sdk.connection(ctx)
        if connection is not None:
            self._levels[connection] = params.level
        log.debug("client log level set to %s", params.level)
        return EmptyResult()

    def level(self, ctx: ServerRequestContext[Any, Any]) -> str:
        meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, dict) else None
        asked = meta.get(LOG_LEVEL_META) if isinstance(meta, dict) else None
        if asked in LEVELS:
            return asked
        connection = sdk.connection(ctx)
        return self._levels.get(connection, DEFAULT_LEVEL) if connection is not None else DEFAULT_LEVEL

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: after each tools/call, the info line (server log, and client when it listens)."""
        if ctx.method != "tools/call" or not isinstance(ctx.params, dict):
            return await call_next(ctx)
        started = time.perf_counter()
        result = await call_next(ctx)
        line = summary(str(ctx.params.get("name")), result, (time.perf_counter() - started) * 1000)
        log.info("%s", line, extra={"tool": ctx.params.get("name")})
        if LEVELS.index(self.level(ctx)) <= LEVELS.index("info"):
            try:
                with warnings.catch_warnings():  # deprecated by 2026-07-28, still the way for 2025 clients
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await ctx.session.send_log_message(
                        level="info", data=line, logger="thoth", related_request_id=ctx.request_id
                    )
            except Exception:  # a client that went away does not fail the call it made
                log.debug("could not send the log line to the client", exc_info=True)
        return result


def summary(tool: str, result: Any, ms: float) -> str:
    """`search_handbook answered in 14 ms: 5 results`: the counts of the result's lists, never its text."""
    if isinstance(result, dict):
        failed, structured = result.get("isError"), result.get("structuredContent")
    else:  # a CallToolResult: read two fields, not a dump of the whole answer on every call
        failed, structured = getattr(result, "is_error", False), getattr(result, "structured_content", None)
    if failed:
        return f"{tool} failed in {ms:.0f} ms"
    counts = [f"{len(v):,} {k}" for k, v in structured.items() if isinstance(v, list)] if structured else []
    return f"{tool} answered in {ms:.0f} ms" + (f": {', '.join(counts[:3])}" if counts else "")


def register_client_log(mcp: MCPServer) -> None:
    client_log = ClientLog()
    # MCPServer has no decorator for this spec method (thoth.mcp.sdk).
    sdk.add_request_handler(mcp, "logging/setLevel", SetLevelRequestParams, client_log.set_level)
    mcp.middleware.append(client_log)
