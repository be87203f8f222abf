"""The handbook surface (seed 004): search_handbook and list_topics."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from thoth.app import Thoth
from thoth.mcp.outputs.handbook import HandbookResults, TopicList
from thoth.mcp.tools import expose
from thoth.retrieval import topics
from thoth.retrieval.search import hybrid_search


def search_handbook(
    app: Thoth,
    query: Annotated[str, Field(description="natural-language search query", min_length=1, max_length=2000)],
    num_results: Annotated[int, Field(description="number of results to return", ge=1, le=20)] = 5,
) -> HandbookResults:
    """Search the handbook (hybrid keyword + semantic search) and return the most relevant passages.

    Files are ranked (each by its best passage plus a share of its others) and each file's best
    passage comes once before any file repeats. Each result has its relevance score, source file
    path, section and content.
    """
    found = hybrid_search(app.store, app.embedder(), query, num_results, documents=True)
    return HandbookResults.from_record(query, found)


def list_topics(app: Thoth) -> TopicList:
    """List the handbook's topics (top-level folders) with passage and file counts, largest first."""
    return TopicList.from_record(topics.list_topics(app.store))


def register(mcp: MCPServer, app: Thoth) -> None:
    expose(mcp, app, search_handbook)
    expose(mcp, app, list_topics)
