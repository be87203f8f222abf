"""thoth.mcp.sdk: each private attribute it reaches does what the public path beside it does.

When an SDK release moves one of them, these fail first, naming the adapter function to change.
"""

from __future__ import annotations

import warnings

import anyio
from mcp.client import Client
from mcp.server.lowlevel import Server
from mcp.types import EmptyResult, ListResourcesResult, PaginatedRequestParams, Resource, SetLevelRequestParams

from thoth.mcp import sdk
from thoth.mcp.lazy_tools import LazyPromptManager, LazyResourceManager, LazyToolManager
from thoth.mcp.tools import ThothMCP


async def _list_resources(_ctx: object, _params: PaginatedRequestParams | None) -> ListResourcesResult:
    return ListResourcesResult(resources=[Resource(name="installed by the adapter", uri="note://adapter")])


async def _set_level(_ctx: object, _params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


def test_a_request_handler_is_installed_where_the_public_constructor_puts_it() -> None:
    with warnings.catch_warnings():  # on_set_logging_level is deprecated by 2026-07-28, still what 2025 clients use
        warnings.simplefilter("ignore")
        public = Server("public", on_list_resources=_list_resources, on_set_logging_level=_set_level)
    assert public.get_request_handler("resources/list").handler is _list_resources  # type: ignore[union-attr]
    assert public.get_request_handler("logging/setLevel").handler is _set_level  # type: ignore[union-attr]

    mcp = ThothMCP(name="adapter")
    sdk.add_request_handler(mcp, "resources/list", PaginatedRequestParams, _list_resources)

    async def listed() -> list[str]:  # a client connected in process asks the server, as any client would
        async with Client(mcp) as client:
            return [r.name for r in (await client.list_resources()).resources]

    assert anyio.run(listed) == ["installed by the adapter"]


def test_the_managers_installed_are_the_ones_the_public_listings_read() -> None:
    mcp = ThothMCP(name="adapter")
    assert isinstance(sdk.tool_manager(mcp), LazyToolManager)
    assert isinstance(sdk.prompt_manager(mcp), LazyPromptManager)
    assert isinstance(sdk.resource_manager(mcp), LazyResourceManager)

    @mcp.tool(title="Echo")
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    @mcp.resource("note://{name}")
    def note(name: str) -> str:
        """A note."""
        return name

    assert sdk.tool_manager(mcp).names() == ["echo"]
    assert [(t.name, t.title) for t in anyio.run(mcp.list_tools)] == [("echo", "Echo")]  # the public path
    assert [p.name for p in anyio.run(mcp.list_prompts)] == ["greet"]
    assert [t.uri_template for t in anyio.run(mcp.list_resource_templates)] == ["note://{name}"]


def test_a_request_context_without_a_connection_has_none() -> None:
    class Context:
        session = object()  # what a per-request proxy that no longer holds its connection would look like

    assert sdk.connection(Context()) is None  # type: ignore[arg-type]
