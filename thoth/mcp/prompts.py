"""Prompts (docs/clients.md, "Prompts"): each surface declares its own in its Toolset; an unknown prompt or a
missing required argument is -32602."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import Field

from thoth.app import Thoth
from thoth.mcp.toolsets import Toolset

Question = Annotated[str, Field(description="the question to answer, in your own words")]


def register_prompts(mcp: MCPServer, toolsets: list[Toolset], app: Thoth) -> None:
    """Each served surface's prompts (its Toolset's), and the check of every prompt's arguments."""
    for toolset in toolsets:
        if toolset.prompts is not None:
            toolset.prompts(mcp, app)

    async def check_arguments(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """`prompts/get` with an unknown name or without a required argument: -32602, not an internal error."""
        if ctx.method == "prompts/get" and isinstance(ctx.params, dict):
            name, given = ctx.params.get("name"), ctx.params.get("arguments") or {}
            prompts = {p.name: p for p in await mcp.list_prompts()}
            if name not in prompts:
                known = ", ".join(sorted(prompts)) or "(none)"
                raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; prompts: {known}", {"name": name})
            missing = [a.name for a in prompts[name].arguments or [] if a.required and a.name not in given]
            if missing:
                raise MCPError(INVALID_PARAMS, f"prompt {name!r} needs argument(s): {', '.join(missing)}")
        return await call_next(ctx)

    mcp.middleware.append(check_arguments)
