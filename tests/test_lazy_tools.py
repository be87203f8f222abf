"""thoth.mcp.lazy_tools: tools registered at start and built on first use, listed as the SDK lists them.

The same registrations on the SDK's own MCPServer (every tool built as it is registered) and on ThothMCP
(built on first use) must list the same tools, in the same order, with the same schemas; a call builds
only the tool it calls. The served tools of the real server are pinned by tests/test_tool_golden.py.
Prompts and resource templates are deferred the same way, and output models build on first use.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from tests.conftest import REPO_ROOT
from thoth.mcp import sdk
from thoth.mcp.lazy_tools import LazyPromptManager, LazyResourceManager, LazyToolManager
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
    mcp.tool(title="Search the handbook")(search_handbook)
    mcp.tool(title="Zeta's own title", meta=dict(WRITER_META))(zeta)
    mcp.tool()(alpha)


def _listed(mcp: MCPServer) -> list[dict]:
    return [t.model_dump() for t in anyio.run(mcp.list_tools)]


def _lazy() -> tuple[ThothMCP, LazyToolManager]:
    mcp = ThothMCP(name="test")
    _register(mcp)
    assert isinstance(sdk.tool_manager(mcp), LazyToolManager)
    return mcp, sdk.tool_manager(mcp)


def test_lists_what_the_sdk_lists_in_registration_order() -> None:
    eager = MCPServer(name="test")
    _register(eager)
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


def test_names_and_roles_are_known_without_building() -> None:
    mcp, tools = _lazy()
    assert tools.names() == ["search_handbook", "zeta", "alpha"]
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


# -- prompts and resource templates ---------------------------------------------------------------------------


def _register_prompts_and_templates(mcp: MCPServer) -> None:
    @mcp.prompt(title="Ask the handbook")
    def handbook_question(question: str, team: str = "all") -> str:
        """Ask a question of the handbook."""
        return f"{team}: {question}"

    @mcp.prompt()
    def quiz_me(topic: str) -> str:
        return f"quiz on {topic}"

    @mcp.resource("doc://{collection}/{key}", name="document", mime_type="text/markdown")
    def document(collection: str, key: str) -> str:
        return f"{collection}/{key}"

    @mcp.resource("chunk://{chunk_id}", name="chunk")
    def chunk(chunk_id: str) -> str:
        return chunk_id


def _prompts_and_templates(mcp: MCPServer) -> tuple[list[dict], list[dict]]:
    prompts = [p.model_dump() for p in anyio.run(mcp.list_prompts)]
    return prompts, [t.model_dump() for t in anyio.run(mcp.list_resource_templates)]


def test_prompts_and_templates_are_listed_as_the_sdk_lists_them_and_built_on_first_use() -> None:
    eager = MCPServer(name="test")
    _register_prompts_and_templates(eager)
    mcp = ThothMCP(name="test")
    _register_prompts_and_templates(mcp)
    prompts, templates = sdk.prompt_manager(mcp), sdk.resource_manager(mcp)
    assert isinstance(prompts, LazyPromptManager) and isinstance(templates, LazyResourceManager)
    assert not prompts._prompts and not templates._templates  # registered, none built
    listed = _prompts_and_templates(mcp)
    assert listed == _prompts_and_templates(eager)
    assert [p["name"] for p in listed[0]] == ["handbook_question", "quiz_me"]
    assert [t["name"] for t in listed[1]] == ["document", "chunk"]


def test_a_prompt_or_a_resource_is_served_without_listing_first() -> None:
    mcp = ThothMCP(name="test")
    _register_prompts_and_templates(mcp)
    got = anyio.run(mcp.get_prompt, "handbook_question", {"question": "leave?"})
    assert got.messages[0].content.text == "all: leave?"
    contents = anyio.run(mcp.read_resource, "doc://handbook/leave.md")
    assert [c.content for c in contents] == ["handbook/leave.md"]


def test_prompt_and_template_duplicates_resolve_as_in_the_sdk() -> None:
    mcp = ThothMCP(name="test")
    _register_prompts_and_templates(mcp)
    mcp.prompt(name="quiz_me")(lambda topic: "second")  # the first registration of a prompt name stays
    mcp.resource("chunk://{chunk_id}", name="chunk2")(lambda chunk_id: "second")  # the last of a template wins
    assert anyio.run(mcp.get_prompt, "quiz_me", {"topic": "x"}).messages[0].content.text == "quiz on x"
    prompts, templates = _prompts_and_templates(mcp)
    assert [t["name"] for t in templates] == ["document", "chunk2"]
    assert [c.content for c in anyio.run(mcp.read_resource, "chunk://7")] == ["second"]


# -- output models ------------------------------------------------------------------------------------------

_FIRST_USE_ON_THREADS = """
import threading
from thoth.mcp.outputs.handbook import HandbookHit, HandbookResults

assert not HandbookHit.__pydantic_complete__ and not HandbookResults.__pydantic_complete__  # deferred
barrier, dumps = threading.Barrier(8), []

def first_use() -> None:
    barrier.wait()
    hit = HandbookHit(rank=1, score=1.0, similarity=None, source="a.md", title=None, section="S", source_ref="r",
                      content="c")
    dumps.append(HandbookResults(query="q", results=[hit]).model_dump())

threads = [threading.Thread(target=first_use) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(dumps), all(d == dumps[0] for d in dumps), dumps[0]["results"][0]["section"])
"""


def test_output_models_are_built_once_and_right_when_first_used_on_several_threads() -> None:
    # Output models build on first use (defer_build); a server's first requests run on worker threads.
    result = subprocess.run(
        [sys.executable, "-c", _FIRST_USE_ON_THREADS], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["8", "True", "S"]
