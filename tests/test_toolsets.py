"""thoth.mcp.toolsets: each surface is one Toolset declaration, and the server is built from those alone."""

from __future__ import annotations

import dataclasses

import anyio

from tests.conftest import make_settings
from thoth.app import Thoth
from thoth.config import ALL_TOOLSETS
from thoth.mcp.tools import ThothMCP, build_mcp
from thoth.mcp.toolsets import served, toolset


def _registered(name: str, app: Thoth) -> tuple[ThothMCP, set[str]]:
    """A server with only the toolset `name`'s tools, and their names."""
    mcp = ThothMCP(name=name)
    toolset(name).register(mcp, app)
    return mcp, {t.name for t in anyio.run(mcp.list_tools)}


def test_every_toolset_titles_every_tool_it_registers(tmp_path) -> None:
    app = Thoth(make_settings(tmp_path / "lancedb"))
    for name in ALL_TOOLSETS:
        declared = toolset(name)
        assert declared.name == name
        mcp, names = _registered(name, app)
        tools = anyio.run(mcp.list_tools)
        assert names and all(t.title for t in tools), name
        prompts = set()
        if declared.prompts is not None:
            declared.prompts(mcp, app)
            prompts = {p.name for p in anyio.run(mcp.list_prompts)}
        assert {prompt for prompt, _ in declared.completions} <= prompts, name


def test_the_server_serves_only_the_chosen_toolsets_with_their_instructions(tmp_path) -> None:
    settings = dataclasses.replace(make_settings(tmp_path / "lancedb"), toolsets=("qurio", "workshop"))
    app = Thoth(settings)
    mcp = build_mcp(app)
    names = {t.name for t in anyio.run(mcp.list_tools)}
    assert names == {*_registered("qurio", app)[1], *_registered("workshop", app)[1], "list_tools"}
    assert toolset("workshop").instructions and toolset("workshop").instructions in (mcp.instructions or "")
    assert [t.name for t in served(("qurio", "workshop"))] == ["qurio", "workshop"]
