"""The handbook surface (README.md, "Tools"): search_handbook, list_topics and get_recent_updates."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from thoth.app import Thoth
from thoth.mcp.outputs.handbook import HandbookResults, RecentUpdates, TopicList
from thoth.mcp.prompts import Question
from thoth.mcp.tools import expose
from thoth.mcp.toolsets import Toolset
from thoth.retrieval import origins, topics
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
    return HandbookResults.from_record(query, found.hits).noting(found.keyword_only)


def list_topics(app: Thoth) -> TopicList:
    """List the handbook's topics (top-level folders) with passage and file counts, largest first."""
    return TopicList.from_record(topics.list_topics(app.store))


def get_recent_updates(
    app: Thoth,
    days: Annotated[int, Field(description="how far back to look, in days", ge=1, le=365)] = 7,
    topic: Annotated[
        str | None, Field(description="only this topic (a top-level folder, see list_topics)", max_length=200)
    ] = None,
) -> RecentUpdates:
    """What changed in the handbook recently: each file of a git source whose last commit is at most `days`
    old, newest first, with its title, path, the commit's subject and date, and a citation."""
    return RecentUpdates.from_record(days, topic, origins.recent_updates(app.store, app.settings, days, topic))


def register(mcp: MCPServer, app: Thoth) -> None:
    expose(mcp, app, search_handbook, title="Search the handbook")
    expose(mcp, app, list_topics, title="List handbook topics")
    expose(mcp, app, get_recent_updates, title="Recent handbook changes")


def prompts(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Ask the handbook")
    def handbook_question(question: Question) -> str:
        """Answer a question from the handbook, citing the page and section of every passage used."""
        return (
            f"Answer this question from the handbook: {question}\n\n"
            "1. Call search_handbook with the question (num_results 5); search again with other words if the "
            "hits do not answer it.\n"
            "2. Answer only from the passages found. After each statement cite its `source` and `section` "
            "(and `page` for a PDF).\n"
            "3. If the handbook does not answer the question, say so instead of guessing."
        )


TOOLSET = Toolset(
    "handbook",
    register,
    prompts=prompts,
)
