"""Who is calling and what they may do (docs/security.md, "Roles" and "Per-caller state"): the reader and
writer roles, and the key of per-caller state."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

from thoth.access import FULL_ACCESS, Access, reading
from thoth.errors import ClientError
from thoth.mcp.auth import identity_of, request_access

ROLE_KEY = "thoth/role"
WRITER_META = {ROLE_KEY: "writer"}  # the `_meta` of a tool that needs the writer role


@dataclass(frozen=True)
class Caller:
    principal: str  # verified: "email:…", "token:{hash}", "admin", or "local" (no auth)
    writer: bool
    access: Access = FULL_ACCESS  # the collections it may read and write (THOTH_ACCESS_FILE, thoth.access)

    def may_write(self, source_id: str) -> bool:
        """Whether this caller may write the collection `source_id`: the writer role and the file's grant."""
        return self.writer and source_id in self.access.write

    @property
    def key(self) -> str:
        """A fixed-length key for per-caller rows (no email or token hash spelled out in the index)."""
        return hashlib.sha256(self.principal.encode()).hexdigest()[:32]

    @property
    def who(self) -> str:
        """The caller as the ingest history names it: its kind and key, never an email or token hash."""
        kind = self.principal.split(":", 1)[0]
        return kind if kind == self.principal else f"{kind} {self.key}"


LOCAL = Caller("local", writer=True)
_caller: ContextVar[Caller] = ContextVar("thoth_caller", default=LOCAL)


def current_caller() -> Caller:
    """The caller of the MCP message being handled (LOCAL outside one)."""
    return _caller.get()


def require_writer_of(source_id: str, argument: str, kind: str = "collection") -> None:
    """Refuses a caller who may not write `source_id` (the `argument` a tool took), in the same words whether
    it exists or not."""
    if not current_caller().may_write(source_id):
        raise ClientError(
            f"{argument} {source_id!r}: this caller may not write it: the access file (THOTH_ACCESS_FILE) names "
            f"who writes each {kind}; see docs/security.md",
            argument=argument,
        )


def caller_of(request: Any) -> Caller:
    """The caller of an HTTP request (its `scope` holds the verified identity); LOCAL without one."""
    scope = getattr(request, "scope", None)
    identity = identity_of(scope) if isinstance(scope, dict) else None
    if identity is None:
        return LOCAL
    return Caller(identity.principal or identity.kind, identity.writer, request_access(scope))


def writer_meta(meta: dict | None) -> bool:
    """Whether a tool's `_meta` marks it as needing the writer role."""
    return (meta or {}).get(ROLE_KEY) == "writer"


def visible(tools: list[Tool], caller: Caller) -> list[Tool]:
    """The tools `caller` may call: a reader is not shown the writer's tools."""
    return tools if caller.writer else [t for t in tools if not writer_meta(t.meta)]


def refusal(tool: str) -> str:
    return (
        f"{tool} needs the writer role: this caller may only read. A writer token (THOTH_AUTH_WRITER_TOKENS) "
        "or a listed identity (THOTH_AUTH_WRITERS) may call it; see docs/security.md"
    )


def _without_writer_tools(result: HandlerResult) -> HandlerResult:
    """A tools/list result (a model, or the wire dict the SDK hands middleware) less the writer's tools."""
    if isinstance(result, ListToolsResult):
        return result.model_copy(update={"tools": [t for t in result.tools if not writer_meta(t.meta)]})
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        tools = [t for t in result["tools"] if not (isinstance(t, dict) and (t.get("_meta") or {}).get(ROLE_KEY))]
        return {**result, "tools": tools}
    return result


def role_middleware(writer_tools: set[str]) -> Callable[..., Awaitable[HandlerResult]]:
    """MCP server middleware: sets the caller for the message, hides and refuses `writer_tools` (the tools that
    need the writer role) for readers."""

    async def roles(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        caller = caller_of(ctx.request)
        token = _caller.set(caller)
        try:
            if not caller.writer and ctx.method == "tools/call":
                name = (ctx.params or {}).get("name")
                if isinstance(name, str) and name in writer_tools:
                    return CallToolResult(content=[TextContent(type="text", text=refusal(name))], is_error=True)
            with reading(caller.access.read):  # every read of this message sees only these (thoth.app)
                result = await call_next(ctx)
            if not caller.writer and ctx.method == "tools/list":
                result = _without_writer_tools(result)
            return result
        finally:
            _caller.reset(token)

    return roles
