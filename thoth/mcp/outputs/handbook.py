"""The handbook surface's outputs (README.md, "Tools"): its words are `source` for a file's path and `documents`
for passages (chunks)."""

from __future__ import annotations

from pydantic import Field

from thoth.mcp.outputs import Flagged, Output, from_fields
from thoth.records import Hit
from thoth.retrieval import origins, topics


class HandbookHit(Flagged):
    rank: int
    score: float = Field(description="fused relevance, 1.0 = ranked first by both keyword and vector search")
    similarity: float | None = Field(description="cosine similarity of query and passage, when vector search saw it")
    source: str = Field(description="file path inside the source")
    title: str | None
    section: str | None
    page: int | None = None
    source_ref: str
    content: str

    @classmethod
    def from_record(cls, rank: int, hit: Hit) -> HandbookHit:
        chunk = hit.chunk
        similarity = round(hit.similarity, 4) if hit.similarity is not None else None
        return from_fields(
            cls,
            hit,
            chunk,
            rank=rank,
            similarity=similarity,
            source=chunk.key,
            page=chunk.page_start,
            content=chunk.text,
            flags=cls.flags_of(chunk.text),
        )


class HandbookResults(Output):
    query: str
    results: list[HandbookHit]

    @classmethod
    def from_record(cls, query: str, hits: list[Hit]) -> HandbookResults:
        return cls(query=query, results=[HandbookHit.from_record(i, hit) for i, hit in enumerate(hits, start=1)])

    def render(self) -> str:
        if not self.results:
            return f"No results for {self.query!r}."
        parts = [f"Found {len(self.results)} results for {self.query!r}:"]
        for hit in self.results:
            similarity = f", similarity {hit.similarity:.3f}" if hit.similarity is not None else ""
            where = hit.source + (f" (page {hit.page})" if hit.page else "")
            parts.append(
                f"\n## {hit.rank}. {hit.section or hit.title or hit.source}\n"
                f"Source: {where}\nRelevance: {hit.score:.3f}{similarity}\n{hit.flag_note()}\n{hit.content}"
            )
        return "\n".join(parts)


class Topic(Output):
    topic: str
    chunks: int
    files: int


class TopicList(Output):
    total_documents: int = Field(description="indexed passages (chunks)")
    unique_files: int
    topics: list[Topic]

    @classmethod
    def from_record(cls, found: topics.Topics) -> TopicList:
        return cls(
            total_documents=found.chunk_count,
            unique_files=found.file_count,
            topics=[Topic(topic=t.topic, chunks=t.chunk_count, files=t.file_count) for t in found.topics],
        )

    def render(self) -> str:
        lines = [f"Total documents: {self.total_documents}", f"Unique files: {self.unique_files}", "", "Topics:"]
        lines += [f"- {t.topic}: {t.chunks} documents in {t.files} files" for t in self.topics]
        return "\n".join(lines)


class HandbookUpdate(Output):
    title: str
    source: str = Field(description="file path inside the source")
    topic: str
    commit: str = Field(description="the last commit that changed the file")
    subject: str = Field(description="that commit's subject line")
    date: str = Field(description="that commit's date (ISO 8601)")
    source_ref: str
    url: str = Field(description="where to read the file")


class RecentUpdates(Output):
    days: int
    topic: str | None
    updates: list[HandbookUpdate]

    @classmethod
    def from_record(cls, days: int, topic: str | None, found: list[origins.Update]) -> RecentUpdates:
        updates = [from_fields(HandbookUpdate, u, source=u.key, date=u.date.isoformat()) for u in found]
        return cls(days=days, topic=topic, updates=updates)

    def render(self) -> str:
        where = f" in {self.topic}" if self.topic else ""
        if not self.updates:
            return f"No handbook changes{where} in the last {self.days} days (only git sources record changes)."
        lines = [f"{len(self.updates)} files changed{where} in the last {self.days} days:"]
        lines += [
            f"- {u.date[:10]} {u.title} ({u.source}): {u.subject} [commit {u.commit[:12]}]\n  {u.url}"
            for u in self.updates
        ]
        return "\n".join(lines)
