"""The Qurio surface (seed 001): qurio_search, qurio_list_sources, qurio_list_pages, qurio_read_page.

Internal failures are JSON-RPC errors -32603 with a human message and the request's correlationId in
`data`; a client's mistake (bad filter, unknown source or page) is a tool error naming the argument.
"""

# No `from __future__ import annotations`: the argument bounds below use this server's settings, so the
# annotations must be evaluated where the tools are defined.
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from thoth.app import Thoth
from thoth.mcp.outputs.qurio import READ_HINT as READ_HINT  # tests read the hint from here
from thoth.mcp.outputs.qurio import QurioPageContent, QurioPages, QurioResults, QurioSources
from thoth.mcp.tools import call, correlation, read_only_tool, respond
from thoth.retrieval import pages

FilterValue = str | int | list[str] | list[int]


def qurio_search(
    app: Thoth,
    query: str,
    alpha: float = 0.5,
    limit: int = 10,
    source_id: str | None = None,
    filters: dict[str, FilterValue] | None = None,
    *,
    correlation_id: str,
) -> QurioResults:
    found = pages.search(
        app.store, app.settings, app.embedder, query, alpha=alpha, limit=limit, source_id=source_id, metadata=filters
    )
    return QurioResults.from_record(query, alpha, found, correlation_id)


def qurio_list_sources(app: Thoth) -> QurioSources:
    return QurioSources.from_record(pages.list_sources(app.store))


def qurio_list_pages(app: Thoth, source_id: str, limit: int = 100, cursor: str | None = None) -> QurioPages:
    return QurioPages.from_record(pages.list_pages(app.store, app.settings, source_id, limit, cursor))


def qurio_read_page(app: Thoth, url: str, max_chars: int | None = None, cursor: str | None = None) -> QurioPageContent:
    max_chars = app.settings.max_chars if max_chars is None else max_chars
    return QurioPageContent.from_record(pages.read_page(app.store, app.settings, url, max_chars, cursor))


# register() declares the tools under the bodies' names, so it calls the bodies by these.
_search, _list_sources, _list_pages, _read_page = qurio_search, qurio_list_sources, qurio_list_pages, qurio_read_page


def register(mcp: MCPServer, app: Thoth) -> None:
    settings = app.settings

    @read_only_tool(mcp)
    def qurio_search(
        query: Annotated[str, Field(description="the search query", min_length=1, max_length=2000)],
        alpha: Annotated[
            float,
            Field(
                description="hybrid balance: 0.0 keyword only (error codes, ids), 0.3 mostly keyword "
                "(function names), 0.5 hybrid, 1.0 vector only (conceptual questions)",
                ge=0.0,
                le=1.0,
            ),
        ] = 0.5,
        limit: Annotated[int, Field(description="maximum number of results", ge=1, le=50)] = 10,
        source_id: Annotated[
            str | None, Field(description="only this source (ids from qurio_list_sources)", max_length=200)
        ] = None,
        filters: Annotated[
            dict[str, FilterValue] | None,
            Field(
                description="metadata filters: type (text/code/table/diff), language (e.g. go, typescript), "
                "exercise_number, step_number, path; a list value matches any of its items"
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, QurioResults]:
        """Search & Exploration: hybrid (keyword + vector) search over every indexed source.

        Use it for specific questions, code snippets, or exploring topics across known sources.
        Each result has its title, type, language, source id, URL and content.
        """
        with correlation(ctx) as cid:

            def run() -> QurioResults:
                return _search(app, query, alpha, limit, source_id, filters, correlation_id=cid)

            data = call("qurio_search", run, "jsonrpc")
            return respond(data, data.render())

    @read_only_tool(mcp)
    def qurio_list_sources(ctx: Context | None = None) -> Annotated[CallToolResult, QurioSources]:
        """Discovery: list every documentation set (source) currently indexed, with its id, name and type."""
        with correlation(ctx):
            data = call("qurio_list_sources", lambda: _list_sources(app), "jsonrpc")
            return respond(data, data.render())

    @read_only_tool(mcp)
    def qurio_list_pages(
        source_id: Annotated[str, Field(description="the source's id (from qurio_list_sources)", min_length=1)],
        limit: Annotated[int, Field(description="pages per answer", ge=1, le=500)] = 100,
        cursor: Annotated[str | None, Field(description="nextCursor of the previous answer, to go on")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, QurioPages]:
        """Navigation: list the pages (documents) of one source, with their ids and URLs, sorted by path."""
        with correlation(ctx):
            data = call("qurio_list_pages", lambda: _list_pages(app, source_id, limit, cursor), "jsonrpc")
            return respond(data, data.render())

    @read_only_tool(mcp)
    def qurio_read_page(
        url: Annotated[str, Field(description="the page URL (from qurio_search or qurio_list_pages)", min_length=1)],
        max_chars: Annotated[
            int,
            Field(
                description="most characters to return; a longer page continues with nextCursor",
                ge=100,
                le=settings.max_chars_limit,
            ),
        ] = settings.max_chars,
        cursor: Annotated[str | None, Field(description="nextCursor of the previous answer, to read on")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, QurioPageContent]:
        """Deep Reading: the entire content of one page by its URL, its sections joined in order.

        Long pages come in parts: pass the answer's nextCursor back (with the same url) to read on.
        """
        with correlation(ctx):
            data = call("qurio_read_page", lambda: _read_page(app, url, max_chars, cursor), "jsonrpc")
            return respond(data, data.render())
