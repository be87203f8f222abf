"""The Qurio surface's outputs (docs/qurio.md): a document is a `page` with an `id` (its doc_id) and a `url`,
a partition's text is `content`, and the JSON keys are camelCase where Qurio's are."""

from __future__ import annotations

from pydantic import Field, PrivateAttr

from thoth.mcp.outputs import Flagged, Output, from_fields
from thoth.records import Source
from thoth.retrieval import figures
from thoth.retrieval.origins import Origin
from thoth.retrieval.pages import Page, PageHit, PageList, PageText
from thoth.retrieval.paging import OffsetCursor

# What continues qurio_list_pages and qurio_read_page, and what a caller is told when a cursor is not theirs.
PAGES_CURSOR = OffsetCursor(
    "qurio_list_pages", "cursor belongs to another source_id; pass the same source_id as before"
)
PAGE_TEXT_CURSOR = OffsetCursor(
    "qurio_read_page", "cursor belongs to another page, or the page changed since; read it again from the start"
)
# Where a caller finds the URLs of pages (added to the errors of a URL that names none).
URL_EXAMPLE = ", e.g. one from qurio_search or qurio_list_pages"
URL_ADVICE = "; use a URL from qurio_search or qurio_list_pages(source_id=...)"
READ_HINT = 'Use qurio_read_page(url="...") to read the full content of any result.'


class QurioResult(Flagged):
    title: str | None
    type: str = Field(description="content type: text, code, table or diff")
    language: str | None
    source_id: str
    url: str = Field(description="the page's URL: pass it to qurio_read_page")
    section: str | None
    score: float = Field(description="fused relevance, 1.0 = ranked first by every search that ran")
    content: str
    # a figure's caption: its picture's figure:// URI, linked beside the answer (not a field: Qurio has none)
    _picture: str | None = PrivateAttr(None)

    @classmethod
    def from_record(cls, found: PageHit) -> QurioResult:
        chunk = found.hit.chunk
        result = from_fields(
            cls,
            chunk,
            type=chunk.content_type or "text",
            language=chunk.language or None,
            url=found.url,
            section=chunk.section or None,
            score=found.hit.score,
            content=chunk.text,
            flags=cls.flags_of(chunk.text),
        )
        if chunk.content_type == figures.FIGURE:
            result._picture = figures.figure_uri(chunk.source_id, chunk.chunk_id)
        return result


class QurioResults(Output):
    query: str
    alpha: float
    results: list[QurioResult]
    correlationId: str

    @classmethod
    def from_record(cls, query: str, alpha: float, found: list[PageHit], correlation_id: str) -> QurioResults:
        results = [QurioResult.from_record(hit) for hit in found]
        return cls(query=query, alpha=alpha, results=results, correlationId=correlation_id)

    def pictures(self) -> list[tuple[str, str]]:
        """(figure:// URI, caption) of each figure found: the answer links their pictures."""
        return [(r._picture, r.content) for r in self.results if r._picture]

    def render(self) -> str:
        query = self.query
        lines = [f"Found {len(self.results)} results for {query!r}." if self.results else f"No results for {query!r}."]
        for i, hit in enumerate(self.results, start=1):
            lines.append(
                f"\n## {i}. {hit.title or hit.url}\n"
                f"Type: {hit.type} | Language: {hit.language or '-'} | SourceID: {hit.source_id}\n"
                f"URL: {hit.url}\n"
                + (f"Section: {hit.section}\n" if hit.section else "")
                + hit.flag_note()
                + f"\n{hit.content}"
            )
        lines.append(f"\n{READ_HINT}")
        return "\n".join(lines)


class QurioSource(Output):
    id: str
    name: str
    type: str = Field(description="handbook, pdf, workshop or text")
    pages: int | None
    chunks: int | None
    origin: str = Field(description="where it comes from: folder, bucket, web or git")
    location: str = Field(description="the folder, gs:// prefix, site URL or repository URL (#ref)")
    lastRead: str | None = Field(description="when it was last crawled (web), read (git) or written")
    commit: str | None = Field(description="git sources: the commit indexed")

    @classmethod
    def from_record(cls, source: Source, origin: Origin) -> QurioSource:
        return from_fields(
            cls,
            source,
            origin,
            id=source.source_id,
            type=source.kind,
            pages=source.document_count,
            chunks=source.chunk_count,
            origin=origin.kind,
            lastRead=origin.read_at.isoformat() if origin.read_at else None,
        )


class QurioSources(Output):
    sources: list[QurioSource]

    @classmethod
    def from_record(cls, sources: list[Source], origins: dict[str, Origin]) -> QurioSources:
        return cls(sources=[QurioSource.from_record(s, origins[s.source_id]) for s in sources])

    def render(self) -> str:
        lines = [f"{len(self.sources)} sources:"]
        lines += [
            f"- {s.id}: {s.name} ({s.type}, {s.pages} pages) from {s.origin} {s.location}"
            + (f" at {s.commit[:12]}" if s.commit else "")
            for s in self.sources
        ]
        return "\n".join(lines)


class QurioPage(Output):
    id: str
    url: str
    title: str | None
    path: str

    @classmethod
    def from_record(cls, page: Page) -> QurioPage:
        return cls(id=page.document.doc_id, url=page.url, title=page.document.title, path=page.document.key)


class QurioPages(Output):
    source_id: str
    total: int
    pages: list[QurioPage]
    nextCursor: str | None

    @classmethod
    def from_record(cls, found: PageList) -> QurioPages:
        pages = [QurioPage.from_record(page) for page in found.pages]
        return cls(source_id=found.source_id, total=found.total, pages=pages, nextCursor=found.next_cursor)

    def render(self) -> str:
        shown = f" (showing {len(self.pages)})" if self.nextCursor else ":"
        lines = [f"{self.total} pages in {self.source_id}{shown}"]
        lines += [f"- {p.id[:12]}  {p.url}" + (f"  {p.title}" if p.title else "") for p in self.pages]
        if self.nextCursor:
            lines.append(f'\nMore pages: qurio_list_pages(source_id="{self.source_id}", cursor="{self.nextCursor}")')
        return "\n".join(lines)


class QurioPageContent(Output):
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

    @classmethod
    def from_record(cls, found: PageText) -> QurioPageContent:
        document = found.page.document
        return from_fields(
            cls,
            found,
            document,
            url=found.page.url,
            id=document.doc_id,
            path=document.key,
            totalChars=found.total_chars,
            nextCursor=found.next_cursor,
        )

    def render(self) -> str:
        text = f"Page: {self.title or self.path}\nURL: {self.url}\n\n{self.content}"
        if self.nextCursor:
            end = self.offset + len(self.content)
            text += (
                f"\n\n[Page continues: characters {end} of {self.totalChars} shown. "
                f'Read on with qurio_read_page(url="{self.url}", cursor="{self.nextCursor}")]'
            )
        return text
