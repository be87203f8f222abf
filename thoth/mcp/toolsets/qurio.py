"""The Qurio surface (seed 001): qurio_search, qurio_list_sources, qurio_list_pages, qurio_read_page.

Internal failures are JSON-RPC errors -32603 with a human message and the request's correlationId in
`data`; a client's mistake (bad filter, unknown source or page) is a tool error naming the argument.
"""

# No `from __future__ import annotations`: the argument bounds below use this server's settings, so the
# annotations must be evaluated where the tools are defined.
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from thoth.app import Thoth
from thoth.mcp.tools import call, correlation, read_only_tool, respond
from thoth.retrieval import pages

READ_HINT = 'Use qurio_read_page(url="...") to read the full content of any result.'

FilterValue = str | int | list[str] | list[int]


class QurioResult(BaseModel):
    title: str | None
    type: str = Field(description="content type: text, code, table or diff")
    language: str | None
    source_id: str
    url: str = Field(description="the page's URL: pass it to qurio_read_page")
    section: str | None
    score: float = Field(description="fused relevance, 1.0 = ranked first by every search that ran")
    content: str


class QurioResults(BaseModel):
    query: str
    alpha: float
    results: list[QurioResult]
    correlationId: str


class QurioSource(BaseModel):
    id: str
    name: str
    type: str = Field(description="handbook, pdf, workshop or text")
    pages: int | None
    chunks: int | None


class QurioSources(BaseModel):
    sources: list[QurioSource]


class QurioPage(BaseModel):
    id: str
    url: str
    title: str | None
    path: str


class QurioPages(BaseModel):
    source_id: str
    total: int
    pages: list[QurioPage]
    nextCursor: str | None


class QurioPageContent(BaseModel):
    url: str
    id: str
    title: str | None
    source_id: str
    path: str
    content: str
    offset: int = Field(description="character offset of this content in the whole page")
    totalChars: int
    truncated: bool
    nextCursor: str | None = Field(description="pass as cursor to read on; null at the end of the page")


def _render_results(query: str, results: list[QurioResult]) -> str:
    lines = [f"Found {len(results)} results for {query!r}." if results else f"No results for {query!r}."]
    for i, hit in enumerate(results, start=1):
        lines.append(
            f"\n## {i}. {hit.title or hit.url}\n"
            f"Type: {hit.type} | Language: {hit.language or '-'} | SourceID: {hit.source_id}\n"
            f"URL: {hit.url}\n" + (f"Section: {hit.section}\n" if hit.section else "") + f"\n{hit.content}"
        )
    lines.append(f"\n{READ_HINT}")
    return "\n".join(lines)


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
            rows = call(
                "qurio_search",
                lambda: pages.search(
                    app.store,
                    settings,
                    app.embedder,
                    query,
                    alpha=alpha,
                    limit=limit,
                    source_id=source_id,
                    metadata=filters,
                ),
                "jsonrpc",
            )
            results = [
                QurioResult(
                    title=row.get("title"),
                    type=row.get("content_type") or "text",
                    language=row.get("language") or None,
                    source_id=row["source_id"],
                    url=row["url"],
                    section=row.get("section") or None,
                    score=row["score"],
                    content=row["text"],
                )
                for row in rows
            ]
            data = QurioResults(query=query, alpha=alpha, results=results, correlationId=cid)
            return respond(data, _render_results(query, results))

    @read_only_tool(mcp)
    def qurio_list_sources(ctx: Context | None = None) -> Annotated[CallToolResult, QurioSources]:
        """Discovery: list every documentation set (source) currently indexed, with its id, name and type."""
        with correlation(ctx):
            rows = call("qurio_list_sources", lambda: pages.list_sources(app.store), "jsonrpc")
            sources = [
                QurioSource(
                    id=r["source_id"],
                    name=r["name"],
                    type=r["kind"],
                    pages=r.get("document_count"),
                    chunks=r.get("chunk_count"),
                )
                for r in rows
            ]
            lines = [f"{len(sources)} sources:"] + [f"- {s.id}: {s.name} ({s.type}, {s.pages} pages)" for s in sources]
            return respond(QurioSources(sources=sources), "\n".join(lines))

    @read_only_tool(mcp)
    def qurio_list_pages(
        source_id: Annotated[str, Field(description="the source's id (from qurio_list_sources)", min_length=1)],
        limit: Annotated[int, Field(description="pages per answer", ge=1, le=500)] = 100,
        cursor: Annotated[str | None, Field(description="nextCursor of the previous answer, to go on")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, QurioPages]:
        """Navigation: list the pages (documents) of one source, with their ids and URLs, sorted by path."""
        with correlation(ctx):
            data = call(
                "qurio_list_pages", lambda: pages.list_pages(app.store, settings, source_id, limit, cursor), "jsonrpc"
            )
            result = QurioPages(
                source_id=source_id,
                total=data["total"],
                pages=[QurioPage(**p) for p in data["pages"]],
                nextCursor=data["next_cursor"],
            )
            lines = [
                f"{result.total} pages in {source_id}"
                + (f" (showing {len(result.pages)})" if result.nextCursor else ":")
            ]
            lines += [f"- {p.id[:12]}  {p.url}" + (f"  {p.title}" if p.title else "") for p in result.pages]
            if result.nextCursor:
                lines.append(f'\nMore pages: qurio_list_pages(source_id="{source_id}", cursor="{result.nextCursor}")')
            return respond(result, "\n".join(lines))

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
            data = call(
                "qurio_read_page", lambda: pages.read_page(app.store, settings, url, max_chars, cursor), "jsonrpc"
            )
            fields = {k: v for k, v in data.items() if k not in ("next_cursor", "total_chars")}
            result = QurioPageContent(**fields, totalChars=data["total_chars"], nextCursor=data["next_cursor"])
            text = f"Page: {result.title or result.path}\nURL: {result.url}\n\n{result.content}"
            if result.nextCursor:
                end = result.offset + len(result.content)
                text += (
                    f"\n\n[Page continues: characters {end} of {result.totalChars} shown. "
                    f'Read on with qurio_read_page(url="{result.url}", cursor="{result.nextCursor}")]'
                )
            return respond(result, text)
