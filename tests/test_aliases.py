"""Forgiving arguments over real HTTP: the names models invent for a query or a count reach the tool under
its own names; an unknown name is still an error naming the ones the tool takes; README's table is the map."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT, LiveServer, error_text, make_settings, ok
from thoth.app import Thoth
from thoth.mcp.aliases import alias_map
from thoth.mcp.tools import build_mcp


def test_aliases_give_the_answer_the_own_names_give(server: LiveServer) -> None:
    own = ok(server, "search_handbook", {"query": "how do I request sick leave", "num_results": 2})
    for arguments in (
        {"question": "how do I request sick leave", "k": 2},
        {"q": "how do I request sick leave", "top_k": 2},
        {"text": "how do I request sick leave", "limit": 2},
    ):
        assert ok(server, "search_handbook", arguments) == own
    research = ok(server, "search", {"question": "sick leave", "num_results": 1})
    assert research == ok(server, "search", {"query": "sick leave", "top_k": 1}) and len(research["hits"]) == 1


def test_unknown_and_doubled_arguments_are_errors_that_name_the_allowed_ones(server: LiveServer) -> None:
    message = error_text(server, "search_handbook", {"query": "sick leave", "bogus": 1})
    assert message == "invalid arguments: search_handbook does not take 'bogus'; it takes: query, num_results"
    doubled = error_text(server, "search_handbook", {"query": "sick leave", "question": "time off"})
    assert "'query' was given twice (also as 'question')" in doubled
    assert "invalid arguments: query: Field required" in error_text(server, "search_handbook", {"k": 2})


def test_a_name_the_tool_takes_is_never_an_alias() -> None:
    assert alias_map(["query", "limit", "top_k"]) == {
        "question": "query",
        "q": "query",
        "text": "query",
        "k": "top_k",
        "num_results": "top_k",
    }
    assert alias_map(["collection"]) == {}


def test_readme_documents_every_tools_aliases(tmp_path) -> None:
    mcp = build_mcp(Thoth(make_settings(tmp_path / "db")))  # every toolset (the default)
    maps = {name: alias_map(params) for name, params in mcp.tool_parameters.items()}
    documented = {}
    section = (REPO_ROOT / "README.md").read_text().split("### Argument names")[1].split("\n## ")[0]
    for tool, cells in re.findall(r"^\| `(\w+)` \| (.+) \|$", section, flags=re.M):
        documented[tool] = {}
        for part in cells.split("; "):
            own, names = part.split(" ← ")
            documented[tool] |= dict.fromkeys(re.findall(r"`(\w+)`", names), own.strip("`"))
    assert documented == {name: found for name, found in maps.items() if found}
