"""The MCP server instance and tool registration.

Each tool surface lives in `toolsets/<name>.py` and exposes `register(mcp, app)`.
`THOTH_TOOLSETS` picks which are served; `list_tools` is always there.
"""

from __future__ import annotations

import importlib
import importlib.metadata
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
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError
from starlette.routing import BaseRoute

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.logs import request_context
from thoth.mcp.resources import citation_links
from thoth.mcp.roles import WRITER_META, RoleMiddleware, current_caller, needs_writer, visible
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


def writer_tool(mcp: MCPServer, annotations: ToolAnnotations) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Register a tool that writes the shared index: only callers with the writer role see and call it."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        description = inspect.cleandoc(fn.__doc__ or "")
        return mcp.tool(annotations=annotations, description=description, meta=dict(WRITER_META))(fn)

    return decorate


def respond(data: BaseModel, text: str) -> CallToolResult:
    """A tool result: structured content for programs, readable text for the assistant, and a
    `resource_link` per doc:// citation it holds (thoth.mcp.resources: readable with resources/read)."""
    structured = data.model_dump(mode="json")
    content: list[ContentBlock] = [TextContent(type="text", text=text), *citation_links(structured)]
    return CallToolResult(content=content, structured_content=structured)


CLIENT_ERRORS = (SearchError, RetrievalError, FilterError)  # the caller's request: a tool error to correct
SERVER_FAULTS = (StoreError, EmbedderUnavailable)  # the server's own state: said in words, with an id


def server_fault(tool: str, exc: BaseException, cid: str) -> str:
    """The one message shape of a server's own failure, on every surface (tool error or JSON-RPC -32603)."""
    reason = str(exc) if isinstance(exc, SERVER_FAULTS) else f"an internal error ({type(exc).__name__})"
    return f"{tool} failed: {reason}; correlation id {cid} (the server log has the details)"


def _log_fault(tool: str, exc: BaseException, cid: str) -> None:
    token = request_context.set({**request_context.get(), CORRELATION_FIELD: cid})
    try:
        if isinstance(exc, SERVER_FAULTS):
            log.error("tool %s failed (correlation id %s): %s", tool, cid, exc, extra={"tool": tool})
        else:
            log.error("tool %s failed (correlation id %s)", tool, cid, exc_info=exc, extra={"tool": tool})
    finally:
        request_context.reset(token)


def _current_cid() -> str:
    return valid_correlation_id(request_context.get().get(CORRELATION_FIELD)) or uuid.uuid4().hex


@contextmanager
def tool_errors(tool: str, client_errors: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """A client's mistake (CLIENT_ERRORS, and a toolset's own `client_errors`) becomes a tool error with its
    message; a server fault, a tool error in the `server_fault` shape, logged with the correlation id.
    Every call's latency is logged."""
    started = time.perf_counter()
    log.debug("tool %s started", tool, extra={"tool": tool})
    try:
        yield
    except ToolError:
        raise
    except CLIENT_ERRORS + client_errors as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        cid = _current_cid()
        _log_fault(tool, exc, cid)
        raise ToolError(server_fault(tool, exc, cid)) from exc
    finally:
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("tool %s answered in %.1f ms", tool, latency, extra={"tool": tool, "latency_ms": latency})


def call(tool: str, fn: Callable[[], T], client_errors: tuple[type[Exception], ...] = ()) -> T:
    with tool_errors(tool, client_errors):
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
    """Like `call`, but server faults (index unreadable or missing, model unavailable, a bug) become
    JSON-RPC errors -32603 in the `server_fault` shape, the correlation id also in `data`; a client's
    mistake (bad argument, unknown source or page) stays a tool error the assistant can read and correct."""
    started = time.perf_counter()
    try:
        return fn()
    except ToolError:
        raise
    except CLIENT_ERRORS as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        _log_fault(tool, exc, cid)
        raise MCPError(INTERNAL_ERROR, server_fault(tool, exc, cid), {CORRELATION_FIELD: cid}) from exc
    finally:
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("tool %s answered in %.1f ms", tool, latency, extra={"tool": tool, "latency_ms": latency})


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _invalid_arguments(exc: ValidationError) -> str:
    """What was wrong with the arguments, by name; never their values (a 1 MB query stays out)."""
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{_short(where, 60)}: {error['msg']}")
    return "invalid arguments: " + "; ".join(problems[:5])


class ThothMCP(MCPServer):
    """The SDK's server, with every tool failure in Thoth's words.

    The SDK prefixes a tool's own message with "Error executing tool X: " and hides a crash behind the
    bare "Error executing tool X". Here a tool error is its message alone, bad arguments are named
    without their values, and a crash is a `server_fault` with a correlation id that the log line has.
    """

    async def call_tool(self, name: str, arguments: dict, context: Context | None = None):  # type: ignore[override]
        with correlation(context) as cid:
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError as exc:
                cause = exc.__cause__ or exc
                _log_fault(name, cause, cid)
                raise ToolError(server_fault(_short(name), cause, cid)) from None
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(_invalid_arguments(cause)) from cause
                message = str(exc).removeprefix(f"Error executing tool {name}: ")
                raise ToolError(_short(message, 2000)) from cause


def _toolset_modules(app: Thoth) -> list[ModuleType]:
    return [importlib.import_module(f"thoth.mcp.toolsets.{name}") for name in app.settings.toolsets]


def server_version() -> str:
    """The installed package's version (pyproject.toml), as serverInfo reports it."""
    try:
        return importlib.metadata.version("thoth")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def build_mcp(app: Thoth) -> MCPServer:
    """The MCP server with every enabled toolset's `register(mcp, app)` called, plus `list_tools`,
    then the hooks that apply to all of them (thoth.mcp.titles)."""
    from thoth.mcp.client_log import register_client_log
    from thoth.mcp.completions import register_completions
    from thoth.mcp.prompts import register_prompts
    from thoth.mcp.resources import register_resources
    from thoth.mcp.titles import apply_titles

    modules = _toolset_modules(app)
    # A toolset may add its own quick start (a module-level INSTRUCTIONS) to the server's instructions.
    instructions = INSTRUCTIONS + "".join(getattr(m, "INSTRUCTIONS", "") for m in modules)
    mcp = ThothMCP(name="thoth", title="Thoth", instructions=instructions, version=server_version())
    for module in modules:
        module.register(mcp, app)
    _register_list_tools(mcp)
    register_prompts(mcp, app)
    register_resources(mcp, app)
    register_completions(mcp, app)
    register_client_log(mcp)
    if missing := apply_titles(mcp):
        log.warning("tools without a title in thoth.mcp.titles: %s", ", ".join(missing))

    async def writer_tools() -> set[str]:
        return {t.name for t in await mcp.list_tools() if needs_writer(t)}

    mcp.middleware.append(RoleMiddleware(writer_tools))
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
        tools = visible(await mcp.list_tools(), current_caller())
        infos = [ToolInfo(name=t.name, description=(t.description or "").strip().split("\n")[0]) for t in tools]
        text = "Available tools:\n" + "\n".join(f"- {t.name}: {t.description}" for t in infos)
        return respond(ToolList(tools=infos), text)
