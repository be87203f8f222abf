"""The handbook surface (seed 004): search_handbook and list_topics."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from thoth.app import Thoth
from thoth.mcp.tools import call, read_only_tool, respond
from thoth.records import Hit
from thoth.retrieval.search import hybrid_search
from thoth.retrieval.topics import list_topics as topics_of


class HandbookHit(BaseModel):
    rank: int
    score: float = Field(description="fused relevance, 1.0 = ranked first by both keyword and vector search")
    similarity: float | None = Field(description="cosine similarity of query and passage, when vector search saw it")
    source: str = Field(description="file path inside the source")
    title: str | None
    section: str | None
    page: int | None = None
    source_ref: str
    content: str


class HandbookResults(BaseModel):
    query: str
    results: list[HandbookHit]


class Topic(BaseModel):
    topic: str
    chunks: int
    files: int


class TopicList(BaseModel):
    total_documents: int = Field(description="indexed passages (chunks)")
    unique_files: int
    topics: list[Topic]


def _render_hits(query: str, hits: list[HandbookHit]) -> str:
    if not hits:
        return f"No results for {query!r}."
    parts = [f"Found {len(hits)} results for {query!r}:"]
    for hit in hits:
        similarity = f", similarity {hit.similarity:.3f}" if hit.similarity is not None else ""
        where = hit.source + (f" (page {hit.page})" if hit.page else "")
        parts.append(
            f"\n## {hit.rank}. {hit.section or hit.title or hit.source}\n"
            f"Source: {where}\nRelevance: {hit.score:.3f}{similarity}\n\n{hit.content}"
        )
    return "\n".join(parts)


# The chunk fields a HandbookHit shows, and those by_document groups by: a search fetches no others.
HIT_FIELDS = ["key", "title", "section", "page_start", "source_ref", "text", "source_id", "partition_id"]


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

        def run() -> list[Hit]:
            return hybrid_search(app.store, app.embedder(), query, num_results, documents=True, fields=HIT_FIELDS)

        found = call("search_handbook", run)
        hits = [
            HandbookHit(
                rank=i,
                score=hit.score,
                similarity=round(hit.similarity, 4) if hit.similarity is not None else None,
                source=hit.chunk.key,
                title=hit.chunk.title,
                section=hit.chunk.section,
                page=hit.chunk.page_start,
                source_ref=hit.chunk.source_ref,
                content=hit.chunk.text,
            )
            for i, hit in enumerate(found, start=1)
        ]
        return respond(HandbookResults(query=query, results=hits), _render_hits(query, hits))

    @read_only_tool(mcp)
    def list_topics() -> Annotated[CallToolResult, TopicList]:
        """List the handbook's topics (top-level folders) with passage and file counts, largest first."""
        topics = call("list_topics", lambda: topics_of(app.store))
        data = TopicList(
            total_documents=topics["total_chunks"], unique_files=topics["unique_files"], topics=topics["topics"]
        )
        lines = [f"Total documents: {data.total_documents}", f"Unique files: {data.unique_files}", "", "Topics:"]
        lines += [f"- {t.topic}: {t.chunks} documents in {t.files} files" for t in data.topics]
        return respond(data, "\n".join(lines))
