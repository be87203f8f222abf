"""thoth.mcp.lazy_tools: tools registered at start and built on first use, listed as the SDK lists them.

The same registrations on the SDK's own MCPServer (every tool built as it is registered) and on ThothMCP
(built on first use) must list the same tools, in the same order, with the same schemas; a call builds
only the tool it calls. The served tools of the real server are pinned by tests/test_tool_golden.py.
"""

from __future__ import annotations

from typing import Annotated

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from thoth.mcp.lazy_tools import LazyToolManager
from thoth.mcp.roles import WRITER_META
from thoth.mcp.tools import ThothMCP


class Found(BaseModel):
    hits: list[str]


def search_handbook(
    query: Annotated[str, Field(description="what to look for", min_length=1)],
    limit: Annotated[int, Field(ge=1, le=5)] = 2,
) -> Found:
    """Search."""
    return Found(hits=[query] * limit)


def zeta(text: str) -> str:
    """Registered second, listed second."""
    return text


def alpha(n: int = 1) -> int:
    """Registered third, listed third."""
    return n


def _register(mcp: MCPServer) -> None:
    mcp.tool()(search_handbook)
    mcp.tool(title="Zeta's own title", meta=dict(WRITER_META))(zeta)
    mcp.tool()(alpha)


def _listed(mcp: MCPServer) -> list[dict]:
    return [t.model_dump() for t in anyio.run(mcp.list_tools)]


def _lazy() -> tuple[ThothMCP, LazyToolManager]:
    mcp = ThothMCP(name="test")
    _register(mcp)
    assert isinstance(mcp._tool_manager, LazyToolManager)
    return mcp, mcp._tool_manager


def test_lists_what_the_sdk_lists_in_registration_order() -> None:
    eager = MCPServer(name="test")
    _register(eager)
    for tool in eager._tool_manager.list_tools():  # ThothMCP titles tools from thoth.mcp.titles
        tool.title = tool.title or ("Search the handbook" if tool.name == "search_handbook" else None)
    mcp, tools = _lazy()
    anyio.run(mcp.call_tool, "alpha", {"n": 3})  # built first, still listed last
    assert _listed(mcp) == _listed(eager)
    assert [t["name"] for t in _listed(mcp)] == ["search_handbook", "zeta", "alpha"]


def test_a_call_builds_only_the_tool_it_calls() -> None:
    mcp, tools = _lazy()
    assert not tools._tools  # registered, none built
    result = anyio.run(mcp.call_tool, "search_handbook", {"query": "leave", "limit": 3})
    assert result.structured_content == {"hits": ["leave"] * 3}
    assert list(tools._tools) == ["search_handbook"]
    with pytest.raises(ToolError, match="limit"):  # the arguments model is the SDK's, validation as before
        anyio.run(mcp.call_tool, "search_handbook", {"query": "leave", "limit": 9})


def test_titles_and_roles_are_known_without_building() -> None:
    mcp, tools = _lazy()
    assert tools.names() == ["search_handbook", "zeta", "alpha"]
    assert tools.title_of("search_handbook") == "Search the handbook"  # from thoth.mcp.titles
    assert tools.title_of("zeta") == "Zeta's own title"  # a title given at registration wins
    assert tools.title_of("alpha") is None
    assert tools.meta_of("zeta") == WRITER_META and tools.meta_of("alpha") is None
    assert not tools._tools


def test_duplicates_keep_the_first_and_unknown_names_are_refused() -> None:
    mcp, tools = _lazy()
    mcp.tool(name="zeta")(alpha)  # the SDK keeps the first registration of a name
    assert anyio.run(mcp.call_tool, "zeta", {"text": "first"}).structured_content == {"result": "first"}
    assert tools.get_tool("nope") is None
    with pytest.raises(ToolError, match="Unknown tool: nope"):
        anyio.run(mcp.call_tool, "nope", {})
    mcp.remove_tool("alpha")
    assert [t["name"] for t in _listed(mcp)] == ["search_handbook", "zeta"]
    with pytest.raises(ToolError, match="Unknown tool: alpha"):
        mcp.remove_tool("alpha")
