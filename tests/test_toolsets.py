"""thoth.mcp.toolsets: each surface is one Toolset declaration, and the server is built from those alone."""

from __future__ import annotations

import dataclasses

import anyio

from tests.conftest import make_settings
from thoth.app import Thoth
from thoth.config import ALL_TOOLSETS
from thoth.mcp.tools import ThothMCP, build_mcp
from thoth.mcp.toolsets import served, toolset


def test_every_toolset_titles_every_tool_it_registers_and_no_other(tmp_path) -> None:
    app = Thoth(make_settings(tmp_path / "lancedb"))
    for name in ALL_TOOLSETS:
        declared = toolset(name)
        assert declared.name == name
        mcp = ThothMCP(name=name, titles=declared.titles)
        declared.register(mcp, app)
        tools = anyio.run(mcp.list_tools)
        assert {t.name for t in tools} == set(declared.titles), name
        assert all(t.title == declared.titles[t.name] for t in tools)
        prompts = set()
        if declared.prompts is not None:
            declared.prompts(mcp, app)
            prompts = {p.name for p in anyio.run(mcp.list_prompts)}
        assert {prompt for prompt, _ in declared.completions} <= prompts, name


def test_the_server_serves_only_the_chosen_toolsets_with_their_instructions(tmp_path) -> None:
    settings = dataclasses.replace(make_settings(tmp_path / "lancedb"), toolsets=("qurio", "workshop"))
    mcp = build_mcp(Thoth(settings))
    names = {t.name for t in anyio.run(mcp.list_tools)}
    assert names == {*toolset("qurio").titles, *toolset("workshop").titles, "list_tools"}
    assert toolset("workshop").instructions and toolset("workshop").instructions in (mcp.instructions or "")
    assert [t.name for t in served(("qurio", "workshop"))] == ["qurio", "workshop"]
