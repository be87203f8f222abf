"""The MCP SDK's private attributes, read and written here only, each beside its public path
(tests/test_sdk.py runs both, so a release that offers one shows there first)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.manager import PromptManager
from mcp.server.mcpserver.resources import ResourceManager
from mcp.server.mcpserver.tools import ToolManager


def add_request_handler(mcp: MCPServer, method: str, params_type: type, handler: Callable[..., Any]) -> None:
    """Answer `method` with `handler(ctx, params)`.

    Public path: the low-level `mcp.server.lowlevel.Server(on_list_resources=..., on_set_logging_level=...)`;
    MCPServer builds that server itself, with its own handlers, and keeps it private."""
    mcp._lowlevel_server.add_request_handler(method, params_type, handler)


def tool_manager(mcp: MCPServer) -> ToolManager:
    """The server's tool manager. Public path: `await mcp.list_tools()` (which builds every tool)."""
    return mcp._tool_manager


def prompt_manager(mcp: MCPServer) -> PromptManager:
    """Public path: `await mcp.list_prompts()`."""
    return mcp._prompt_manager


def resource_manager(mcp: MCPServer) -> ResourceManager:
    """Public path: `await mcp.list_resources()` and `await mcp.list_resource_templates()`."""
    return mcp._resource_manager


def install_managers(mcp: MCPServer, tools: ToolManager, prompts: PromptManager, resources: ResourceManager) -> None:
    """Replace the server's managers. Public path: `MCPServer(tools=[...])` takes built tools; no argument
    takes a manager, and nothing takes prompts or resources before the server is built."""
    mcp._tool_manager = tools
    mcp._prompt_manager = prompts
    mcp._resource_manager = resources


def connection(ctx: ServerRequestContext[Any, Any]) -> object | None:
    """The client connection a request came on (a stdio or SSE session; a stateless HTTP request is its own).

    No public path: `ctx.session` (a per-request proxy) exposes the connection's fields (`client_params`,
    `protocol_version`), never the connection itself."""
    return getattr(ctx.session, "_connection", None)
