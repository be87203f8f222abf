"""The MCP server instance and tool registration.

Each tool surface lives in `toolsets/<name>.py` and exposes `register(mcp, app)`.
`THOTH_TOOLSETS` picks which are served; `list_tools` is always there.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel
from starlette.routing import BaseRoute

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.logs import request_context
from thoth.retrieval.errors import RetrievalError
from thoth.retrieval.search import SearchError
from thoth.store import StoreError
from thoth.store.filters import FilterError

log = logging.getLogger("thoth.tools")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = (
    "Thoth searches and reads an indexed corpus (handbooks, PDFs, workshops) and answers with exact citations. "
    "Search first, then cite the source path and section of the passages you use."
)

T = TypeVar("T")


def read_only_tool(mcp: MCPServer) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a read-only tool; its docstring, dedented, is the description clients see."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        return mcp.tool(annotations=READ_ONLY, description=inspect.cleandoc(fn.__doc__ or ""))(fn)

    return decorate


def respond(data: BaseModel, text: str) -> CallToolResult:
    """A tool result: structured content for programs, readable text for the assistant."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data.model_dump(mode="json")
    )


@contextmanager
def tool_errors(tool: str) -> Iterator[None]:
    """Turn Thoth's own failures into tool errors with their message; log every call's latency."""
    started = time.perf_counter()
    log.debug("tool %s started", tool, extra={"tool": tool})
    try:
        yield
    except (SearchError, RetrievalError, FilterError, StoreError, EmbedderUnavailable) as exc:
        raise ToolError(str(exc)) from exc
    finally:
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("tool %s answered in %.1f ms", tool, latency, extra={"tool": tool, "latency_ms": latency})


def call(tool: str, fn: Callable[[], T]) -> T:
    with tool_errors(tool):
        return fn()


CORRELATION_FIELD = "correlationId"  # the key in the log context (thoth.mcp.context sets it per HTTP request)
CORRELATION_HEADER = "x-correlation-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # as thoth.mcp.context accepts: nothing that could forge a log line


def valid_correlation_id(value: object) -> str | None:
    return value if isinstance(value, str) and _SAFE_ID.fullmatch(value) else None


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
        request_context.get().get(CORRELATION_FIELD),
    ]
    return next((c for c in map(valid_correlation_id, candidates) if c), None) or uuid.uuid4().hex


@contextmanager
def correlation(ctx: Context | None) -> Iterator[str]:
    """Attach the request's correlation id to every log line written inside the block."""
    cid = correlation_id(ctx)
    token = request_context.set({**request_context.get(), CORRELATION_FIELD: cid})
    try:
        yield cid
    finally:
        request_context.reset(token)


def call_jsonrpc(tool: str, fn: Callable[[], T], cid: str) -> T:
    """Like `call`, but internal failures (index unreadable or missing, model unavailable, a bug) become
    JSON-RPC errors -32603 with a human message and the correlation id in `data`; a client's mistake
    (bad argument, unknown source or page) stays a tool error the assistant can read and correct."""
    started = time.perf_counter()
    try:
        return fn()
    except (SearchError, RetrievalError, FilterError) as exc:
        raise ToolError(str(exc)) from exc
    except (StoreError, EmbedderUnavailable) as exc:
        log.error("tool %s failed: %s", tool, exc)
        raise MCPError(INTERNAL_ERROR, f"{tool} failed: {exc}", {CORRELATION_FIELD: cid}) from exc
    except Exception as exc:
        log.exception("tool %s failed unexpectedly", tool)
        message = f"{tool} failed with an internal error ({type(exc).__name__}); the server log has the details"
        raise MCPError(INTERNAL_ERROR, message, {CORRELATION_FIELD: cid}) from exc
    finally:
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("tool %s answered in %.1f ms", tool, latency, extra={"tool": tool, "latency_ms": latency})


def _toolset_modules(app: Thoth) -> list[ModuleType]:
    return [importlib.import_module(f"thoth.mcp.toolsets.{name}") for name in app.settings.toolsets]


def build_mcp(app: Thoth) -> MCPServer:
    """The MCP server with every enabled toolset's `register(mcp, app)` called, plus `list_tools`."""
    modules = _toolset_modules(app)
    # A toolset may add its own quick start (a module-level INSTRUCTIONS) to the server's instructions.
    instructions = INSTRUCTIONS + "".join(getattr(m, "INSTRUCTIONS", "") for m in modules)
    mcp = MCPServer(name="thoth", instructions=instructions, version="0.1.0")
    for module in modules:
        module.register(mcp, app)
    _register_list_tools(mcp)
    return mcp


def internal_routes(app: Thoth) -> list[BaseRoute]:
    """HTTP routes a toolset adds beside MCP (e.g. /internal/... admin routes): its optional `routes(app)`."""
    return [route for module in _toolset_modules(app) if hasattr(module, "routes") for route in module.routes(app)]


class ToolInfo(BaseModel):
    name: str
    description: str


class ToolList(BaseModel):
    tools: list[ToolInfo]


def _register_list_tools(mcp: MCPServer) -> None:
    @read_only_tool(mcp)
    async def list_tools() -> CallToolResult:  # type: ignore[type-arg]
        """List the tools this server offers, with what each one does."""
        tools = await mcp.list_tools()
        infos = [ToolInfo(name=t.name, description=(t.description or "").strip().split("\n")[0]) for t in tools]
        text = "Available tools:\n" + "\n".join(f"- {t.name}: {t.description}" for t in infos)
        return respond(ToolList(tools=infos), text)
