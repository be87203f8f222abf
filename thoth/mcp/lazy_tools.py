"""Tools, prompts and resource templates registered at start and built on first use: a cheaper cold start,
the same lists (docs/performance.md, "Cold start"; tests/test_tool_golden.py pins every tool's schema)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.prompts.manager import PromptManager
from mcp.server.mcpserver.resources.resource_manager import ResourceManager
from mcp.server.mcpserver.resources.templates import ResourceTemplate
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.tools.tool_manager import ToolManager, logger


class LazyToolManager(ToolManager):
    """The SDK's ToolManager, building each Tool on first use. A tool whose function cannot become a tool
    (a bad signature) fails when it is first used instead of at registration; the golden test builds them all.
    """

    def __init__(self, warn_on_duplicate_tools: bool = True, *, tools: list[Tool] | None = None):
        super().__init__(warn_on_duplicate_tools, tools=tools)
        self._pending: dict[str, dict[str, Any]] = {}  # name -> Tool.from_function's arguments
        self._order: dict[str, None] = dict.fromkeys(self._tools)  # every registered name, in registration order
        self._lock = threading.Lock()  # two threads asking for one tool build it once

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, **spec: Any) -> None:  # type: ignore[override]
        """Registers what Tool.from_function will take (MCPServer.tool passes the rest by keyword); returns
        nothing: building the Tool is what is deferred."""
        key = name or fn.__name__  # the name Tool.from_function gives it
        with self._lock:
            if key in self._order:  # as the SDK does: the first registration stays
                if self.warn_on_duplicate_tools:
                    logger.warning(f"Tool already exists: {key}")
                return
            self._order[key] = None
            self._pending[key] = dict(fn=fn, name=name, **spec)

    def _build(self, name: str) -> Tool | None:
        with self._lock:
            spec = self._pending.get(name)
            if spec is not None:
                self._tools[name] = Tool.from_function(**spec)
                del self._pending[name]
            return self._tools.get(name)

    def get_tool(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        return tool if tool is not None else self._build(name)

    def list_tools(self) -> list[Tool]:
        return [tool for name in list(self._order) if (tool := self.get_tool(name)) is not None]

    def remove_tool(self, name: str) -> None:
        with self._lock:
            if name not in self._order:
                raise ToolError(f"Unknown tool: {name}")
            del self._order[name]
            self._pending.pop(name, None)
            self._tools.pop(name, None)

    def names(self) -> list[str]:
        """Every registered tool's name, in registration order, without building any."""
        return list(self._order)

    def meta_of(self, name: str) -> dict[str, Any] | None:
        """A tool's `_meta` as registered (the writer role's mark), or as built: never builds it."""
        spec = self._pending.get(name)
        return spec.get("meta") if spec is not None else getattr(self._tools.get(name), "meta", None)


class LazyPromptManager(PromptManager):
    """The SDK's PromptManager, building its prompts (arguments from each function's signature) on first
    use. `add_function` takes what the SDK's `@prompt()` takes (ThothMCP.prompt registers through it);
    a prompt added built (`add_prompt`) comes after those registered before it, as in the SDK."""

    def __init__(self, warn_on_duplicate_prompts: bool = True):
        super().__init__(warn_on_duplicate_prompts)
        self._pending: dict[str, dict[str, Any]] = {}  # name -> Prompt.from_function's arguments, in order
        self._lock = threading.Lock()

    def add_function(self, fn: Callable[..., Any], **spec: Any) -> None:
        key = spec.get("name") or fn.__name__  # the name Prompt.from_function gives it
        with self._lock:
            if key in self._pending or key in self._prompts:  # as the SDK does: the first registration stays
                if self.warn_on_duplicate_prompts:
                    logger.warning(f"Prompt already exists: {key}")
                return
            self._pending[key] = dict(fn=fn, **spec)

    def _build(self) -> None:
        with self._lock:
            for key, spec in self._pending.items():
                self._prompts[key] = Prompt.from_function(**spec)
            self._pending.clear()

    def add_prompt(self, prompt: Prompt) -> Prompt:
        self._build()
        return super().add_prompt(prompt)

    def get_prompt(self, name: str) -> Prompt | None:
        self._build()
        return super().get_prompt(name)

    def list_prompts(self) -> list[Prompt]:
        self._build()
        return super().list_prompts()

    def remove_prompt(self, name: str) -> None:
        self._build()
        super().remove_prompt(name)


class LazyResourceManager(ResourceManager):
    """The SDK's ResourceManager, building its resource templates on first use (static resources are
    built by the SDK before they are added, and stay as they are)."""

    def __init__(self, warn_on_duplicate_resources: bool = True, *, resources: list[Any] | None = None):
        super().__init__(warn_on_duplicate_resources, resources=resources)
        self._pending: dict[str, dict[str, Any]] = {}  # uri_template -> ResourceTemplate.from_function's arguments
        self._lock = threading.Lock()

    def add_template(self, fn: Callable[..., Any], uri_template: str, **spec: Any) -> None:  # type: ignore[override]
        spec = dict(fn=fn, uri_template=uri_template, **spec)
        with self._lock:  # as the SDK does, the last registration of a template wins, in the first one's place
            if uri_template in self._templates:
                self._templates[uri_template] = ResourceTemplate.from_function(**spec)
            else:
                self._pending[uri_template] = spec

    def _build(self) -> None:
        with self._lock:
            for key, spec in self._pending.items():
                self._templates[key] = ResourceTemplate.from_function(**spec)
            self._pending.clear()

    async def get_resource(self, uri: Any, context: Any) -> Any:
        self._build()
        return await super().get_resource(uri, context)

    def list_templates(self) -> list[ResourceTemplate]:
        self._build()
        return super().list_templates()
