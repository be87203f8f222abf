"""Tool surfaces, one module each, each declared once as a `Toolset` named TOOLSET; THOTH_TOOLSETS picks which
are served, and thoth.mcp.tools builds the server from those declarations alone."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the toolsets import thoth.app and the SDK; this module stays light
    from mcp.server.mcpserver import MCPServer

    from thoth.app import Thoth
    from thoth.store import Store

# A source of completion values: (store, the arguments already given) -> every candidate.
Values = Callable[["Store", Mapping[str, str]], list[str]]


@dataclass(frozen=True)
class Toolset:
    """One tool surface, declared in one place."""

    name: str  # as THOTH_TOOLSETS names it
    register: Callable[[MCPServer, Thoth], None]  # its tools (and the resources they answer with)
    prompts: Callable[[MCPServer, Thoth], None] | None = None
    completions: Mapping[tuple[str, str], Values] = field(default_factory=dict)  # (prompt, argument) -> values
    instructions: str = ""  # added to the server's instructions when the surface is served


def toolset(name: str) -> Toolset:
    """The declaration of the surface `name` (imported on first use: a server loads only what it serves)."""
    return importlib.import_module(f"{__name__}.{name}").TOOLSET


def served(names: tuple[str, ...]) -> list[Toolset]:
    return [toolset(name) for name in names]
