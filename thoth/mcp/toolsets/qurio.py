"""The Qurio surface (docs/qurio.md): qurio_search, qurio_list_sources, qurio_list_pages, qurio_read_page."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from thoth.app import Thoth
from thoth.errors import ClientError, NotFound
from thoth.mcp.completions import source_names
from thoth.mcp.outputs.qurio import (
    PAGE_TEXT_CURSOR,
    PAGES_CURSOR,
    URL_ADVICE,
    URL_EXAMPLE,
    QurioPageContent,
    QurioPages,
    QurioResults,
    QurioSources,
)
from thoth.mcp.prompts import Question
from thoth.mcp.tools import advice, expose
from thoth.mcp.toolsets import Toolset
from thoth.retrieval import origins, pages
from thoth.retrieval.paging import MAX_CHARS, MAX_CHARS_LIMIT
from thoth.retrieval.sources import all_sources

FilterValue = str | int | list[str] | list[int]


def qurio_search(
    app: Thoth,
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
            description="metadata filters: type (text/code/table/diff/references/caption/footnote/ocr), "
            "language (e.g. go, typescript), exercise_number, step_number, path; a list value matches any of "
            "its items; exclude_type leaves those types out (e.g. references: a paper's bibliography)"
        ),
    ] = None,
    *,
    correlation_id: str,
) -> QurioResults:
    """Search & Exploration: hybrid (keyword + vector) search over every indexed source.

    Use it for specific questions, code snippets, or exploring topics across known sources.
    Each result has its title, type, language, source id, URL and content.
    """
    found = pages.search(
        app.store, app.settings, app.embedder, query, alpha=alpha, limit=limit, source_id=source_id, metadata=filters
    )
    return QurioResults.from_record(query, alpha, found.hits, correlation_id).noting(found.keyword_only)


def qurio_list_sources(app: Thoth) -> QurioSources:
    """Discovery: list every documentation set (source) currently indexed, with its id, name and type."""
    sources = all_sources(app.store)
    return QurioSources.from_record(sources, origins.origins(app.store, sources))


def qurio_list_pages(
    app: Thoth,
    source_id: Annotated[str, Field(description="the source's id (from qurio_list_sources)", min_length=1)],
    limit: Annotated[int, Field(description="pages per answer", ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Field(description="nextCursor of the previous answer, to go on")] = None,
) -> QurioPages:
    """Navigation: list the pages (documents) of one source, with their ids and URLs, sorted by path."""
    return QurioPages.from_record(pages.list_pages(app.store, app.settings, source_id, limit, cursor, PAGES_CURSOR))


def qurio_read_page(
    app: Thoth,
    url: Annotated[str, Field(description="the page URL (from qurio_search or qurio_list_pages)", min_length=1)],
    max_chars: Annotated[
        int,
        Field(
            description="most characters to return; a longer page continues with nextCursor", ge=100, le=MAX_CHARS_LIMIT
        ),
    ] = MAX_CHARS,
    cursor: Annotated[str | None, Field(description="nextCursor of the previous answer, to read on")] = None,
) -> QurioPageContent:
    """Deep Reading: the entire content of one page by its URL, its sections joined in order.

    Long pages come in parts: pass the answer's nextCursor back (with the same url) to read on.
    """
    with advice(ClientError, URL_EXAMPLE), advice(NotFound, URL_ADVICE):
        page = pages.read_page(app.store, app.settings, url, max_chars, cursor, PAGE_TEXT_CURSOR)
    return QurioPageContent.from_record(page)


def register(mcp: MCPServer, app: Thoth) -> None:
    expose(mcp, app, qurio_search, title="Search all documentation", surface="jsonrpc")
    expose(mcp, app, qurio_list_sources, title="List documentation sources", surface="jsonrpc")
    expose(mcp, app, qurio_list_pages, title="List pages of a source", surface="jsonrpc")
    expose(mcp, app, qurio_read_page, title="Read a page", surface="jsonrpc")


def prompts(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Look it up in the docs")
    def docs_lookup(
        question: Question,
        source: Annotated[str | None, Field(description="a documentation source id (qurio_list_sources)")] = None,
    ) -> str:
        """Find the documentation pages that answer a question, read them whole, and answer with their URLs."""
        scope = f' with source_id="{source}"' if source else ""
        return (
            f"Answer this from the indexed documentation: {question}\n\n"
            f"1. Call qurio_search{scope}.\n"
            "2. Read the one or two best pages whole with qurio_read_page(url=...).\n"
            "3. Answer with the URL of every page you used."
        )


TOOLSET = Toolset(
    "qurio",
    register,
    prompts=prompts,
    completions={("docs_lookup", "source"): source_names},
)
