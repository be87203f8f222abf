"""Forgiving arguments (README, "Argument names"): the names models invent for a tool's query and count mapped
onto the tool's own; an argument that is neither is refused naming the ones it takes (the SDK would drop it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thoth.errors import ClientError

QUERY_ALIASES = ("question", "q", "text")
COUNT_ALIASES = ("k", "limit", "top_k", "num_results")  # one surface's count name is another's alias
# A tool's own count argument: the first of these it takes (list tools count with `limit`).
COUNT_NAMES = ("num_results", "top_k", "limit")


def alias_map(parameters: Sequence[str]) -> dict[str, str]:
    """{alias: the tool's own argument} for a tool taking `parameters`."""
    names = set(parameters)
    aliases: dict[str, str] = {}
    if "query" in names:
        aliases |= {alias: "query" for alias in QUERY_ALIASES if alias not in names}
    count = next((name for name in COUNT_NAMES if name in names), None)
    if count is not None:
        aliases |= {alias: count for alias in COUNT_ALIASES if alias not in names}
    return aliases


def rewrite(tool: str, arguments: Mapping[str, Any], parameters: Sequence[str]) -> dict[str, Any]:
    """`arguments` under the tool's own names; ClientError for an unknown name or one given twice."""
    aliases = alias_map(parameters)
    unknown = sorted(name for name in arguments if name not in parameters and name not in aliases)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ClientError(
            f"{tool} does not take {names}; it takes: {', '.join(parameters) or 'no arguments'}",
            argument=unknown[0],
        )
    rewritten: dict[str, Any] = {}
    for name, value in arguments.items():
        own = name if name in parameters else aliases[name]
        if own in rewritten:
            raise ClientError(f"{own!r} was given twice (also as {name!r}): give it once", argument=own)
        rewritten[own] = value
    return rewritten
