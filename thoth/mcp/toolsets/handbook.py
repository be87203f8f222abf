"""The handbook surface (seed 004): search_handbook and list_topics."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from thoth.app import Thoth
from thoth.mcp.outputs.handbook import HandbookResults, TopicList
from thoth.mcp.tools import call, read_only_tool, respond
from thoth.retrieval import topics
from thoth.retrieval.search import hybrid_search

# The chunk fields a HandbookHit shows, and those by_document groups by: a search fetches no others.
HIT_FIELDS = ["key", "title", "section", "page_start", "source_ref", "text", "source_id", "partition_id"]


def search_handbook(app: Thoth, query: str, num_results: int = 5) -> HandbookResults:
    """The passages of the best files for `query`, each file's best passage before any file repeats."""
    found = hybrid_search(app.store, app.embedder(), query, num_results, documents=True, fields=HIT_FIELDS)
    return HandbookResults.from_record(query, found)


def list_topics(app: Thoth) -> TopicList:
    return TopicList.from_record(topics.list_topics(app.store))


# register() declares the tools under the bodies' names, so it calls the bodies by these.
_search_handbook, _list_topics = search_handbook, list_topics


def register(mcp: MCPServer, app: Thoth) -> None:
    @read_only_tool(mcp)
    def search_handbook(
        query: Annotated[str, Field(description="natural-language search query", min_length=1, max_length=2000)],
        num_results: Annotated[int, Field(description="number of results to return", ge=1, le=20)] = 5,
    ) -> Annotated[CallToolResult, HandbookResults]:
        """Search the handbook (hybrid keyword + semantic search) and return the most relevant passages.

        Files are ranked (each by its best passage plus a share of its others) and each file's best
        passage comes once before any file repeats. Each result has its relevance score, source file
        path, section and content.
        """
        data = call("search_handbook", lambda: _search_handbook(app, query, num_results))
        return respond(data, data.render())

    @read_only_tool(mcp)
    def list_topics() -> Annotated[CallToolResult, TopicList]:
        """List the handbook's topics (top-level folders) with passage and file counts, largest first."""
        data = call("list_topics", lambda: _list_topics(app))
        return respond(data, data.render())
