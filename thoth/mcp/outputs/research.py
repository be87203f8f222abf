"""The research surface's output models (docs/research.md): a `Source` is a `collection`, a `doc_id` a
`document_id` (a chunk's `doc_hash`), an `object_id` a `source_id`, a `version` a `version_id`, a `uri` a `source`."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, PrivateAttr

from thoth.mcp.outputs import Flagged, Output, from_fields
from thoth.records import Document, Partition
from thoth.retrieval import citations, documents, figures, page_images, research
from thoth.retrieval.documents import CitedChunk, pages
from thoth.retrieval.origins import Origin
from thoth.retrieval.sources import SourceListing
from thoth.source_ref import SourceRef


class ObjectInfo(Output):
    document_id: str = Field(description="SHA-256 of the file's bytes")
    collection: str
    source_id: str | None = Field(description="SHA-1 of gs://{bucket}/{key}?version_id={generation}")
    bucket: str | None
    key: str
    version_id: str | None = Field(description="object generation (gs://); none for local files")
    source: str | None = Field(description="where the file lives (gs:// or file:// URI)")
    source_ref: str
    title: str | None
    authors: list[str]
    year: int | None
    page_count: int | None
    status: str = Field(description="ok, or failed (see error)")
    error: str | None
    hidden_dropped: dict[str, int] | None = Field(
        None,
        description="characters of text a person never sees that were left out, by reason (html_hidden, "
        "html_comment, mdx_comment, zero_width, pdf_invisible, pdf_background, pdf_tiny); {} none; null: indexed "
        "before this was counted",
    )

    @classmethod
    def from_record(cls, document: Document) -> ObjectInfo:
        hidden = document.hidden_dropped
        return from_fields(
            cls,
            document,
            hidden_dropped=dict(hidden) if hidden is not None else None,
            document_id=document.doc_id,
            collection=document.source_id,
            source_id=document.object_id,
            version_id=document.version,
            source=document.uri or None,
            source_ref=SourceRef(document.bucket or document.source_id, document.key, document.version).base,
        )


class DocumentInfo(Output):
    document_id: str
    collection: str
    title: str | None
    authors: list[str]
    year: int | None
    page_count: int | None
    objects: list[ObjectInfo] = Field(description="every key the same bytes are stored under")

    @classmethod
    def from_record(cls, copies: Sequence[Document]) -> DocumentInfo:
        """A document from its records, one per key (the first, in key order, speaks for it)."""
        first = copies[0]
        objects = [ObjectInfo.from_record(d) for d in copies]
        return from_fields(cls, first, document_id=first.doc_id, collection=first.source_id, objects=objects)


class PartitionInfo(Output):
    partition_id: str
    partition_hash: str | None
    document_id: str
    kind: str = Field(description="page (PDF) or section")
    heading_path: str
    pages: list[int]
    page_start: int | None
    page_end: int | None
    text: str
    ocr_confidence: float | None = Field(
        None, description="a scanned page read by OCR: the recogniser's mean confidence, 0..1; null for a text layer"
    )

    @classmethod
    def from_record(cls, partition: Partition) -> PartitionInfo:
        return from_fields(
            cls,
            partition,
            document_id=partition.doc_id,
            heading_path=partition.heading_path or "",
            pages=pages(partition.page_start, partition.page_end),
        )


def _chunk_fields(cited: CitedChunk) -> dict:
    """ChunkInfo's fields in the surface's names; the rest (key, title, text, pages...) are the chunk's own."""
    chunk, document = cited.chunk, cited.document
    return {
        "id": chunk.chunk_id,
        "collection": chunk.source_id,
        "document_id": chunk.doc_id,
        "doc_hash": chunk.doc_id,
        "source_id": document.object_id if document else None,
        "source": (document.uri or None) if document else None,
        "bucket": document.bucket if document else None,
        "version_id": document.version if document else None,
        "pages": pages(chunk.page_start, chunk.page_end),
    }


class ChunkInfo(Output):
    id: str = Field(description="chunk (point) id: UUIDv5 of {collection}|{doc_hash}|{chunk_hash}")
    collection: str
    document_id: str
    doc_hash: str
    partition_id: str | None
    partition_hash: str | None
    chunk_hash: str | None
    chunk_index: int
    source_id: str | None = Field(description="SHA-1 of gs://{bucket}/{key}?version_id={generation}")
    source: str | None
    bucket: str | None
    key: str
    version_id: str | None
    source_ref: str = Field(description="doc://{bucket}/{key}[?version_id=…][#page=N]: give it to resolve_citation")
    title: str | None
    section: str | None
    pages: list[int]
    page_start: int | None
    page_end: int | None
    content_type: str | None
    text: str

    @classmethod
    def from_record(cls, cited: CitedChunk) -> ChunkInfo:
        return from_fields(cls, cited.chunk, **_chunk_fields(cited))

    def where(self) -> str:
        """Title (or key), pages and source_ref: the line that says where a chunk is."""
        pages = f", p. {self.page_start}" + (f"-{self.page_end}" if self.page_end != self.page_start else "")
        return f"{self.title or self.key}{pages if self.page_start else ''} [{self.source_ref}]"

    def render(self) -> str:
        return f"{self.where()}\n\n{self.text}"


def render_chunks(chunks: Sequence[ChunkInfo]) -> str:
    return "\n\n".join(f"### {c.chunk_index}. {c.where()}\nid: {c.id}\n{c.text}" for c in chunks)


class SearchHit(ChunkInfo, Flagged):
    score: float = Field(description="fused relevance, 1.0 = ranked first by every search that ran")
    similarity: float | None = Field(description="cosine similarity, when vector search saw the chunk")
    partition: PartitionInfo | None = None
    document: DocumentInfo | None = None

    @classmethod
    def from_record(cls, cited: research.CitedHit) -> SearchHit:  # type: ignore[override]
        hit = cited.hit
        return from_fields(
            cls,
            hit.chunk,
            **_chunk_fields(CitedChunk(hit.chunk, cited.document)),
            score=hit.score,
            similarity=round(hit.similarity, 4) if hit.similarity is not None else None,
            partition=PartitionInfo.from_record(cited.partition) if cited.partition else None,
            document=DocumentInfo.from_record(cited.copies) if cited.copies else None,
            flags=cls.flags_of(hit.chunk.text),
        )


class Pong(Output):
    status: str = Field(description="ok when the index is readable and searchable")
    index: str
    reason: str | None = None

    def render(self) -> str:
        return f"pong: {self.status}" + (f" ({self.reason})" if self.reason else "")


class CollectionInfo(Output):
    collection: str
    name: str
    kind: str
    uri: str | None
    documents: int
    failed: int
    chunks: int
    embed_model: str | None
    updated_at: str | None
    is_default: bool
    origin: str = Field(description="where it comes from: folder, bucket, web or git")
    last_read_at: str | None = Field(description="when it was last crawled (web), read (git) or written")
    commit: str | None = Field(description="git sources: the commit indexed")

    @classmethod
    def from_record(cls, counts: SourceListing, origin: Origin) -> CollectionInfo:
        source = counts.source
        updated_at = source.updated_at.isoformat() if source.updated_at else None
        return from_fields(
            cls,
            counts,
            source,
            collection=source.source_id,
            uri=origin.location or None,
            updated_at=updated_at,
            origin=origin.kind,
            last_read_at=origin.read_at.isoformat() if origin.read_at else None,
            commit=origin.commit,
        )


class CollectionList(Output):
    default_collection: str | None
    collections: list[CollectionInfo]

    @classmethod
    def from_record(cls, sources: Sequence[SourceListing], origins: dict[str, Origin]) -> CollectionList:
        return cls(
            default_collection=next((s.source.source_id for s in sources if s.is_default), None),
            collections=[CollectionInfo.from_record(s, origins[s.source_id]) for s in sources],
        )

    def render(self) -> str:
        lines = [
            f"- {c.collection}{' (default)' if c.is_default else ''}: {c.documents} documents, {c.chunks} chunks"
            + (f", {c.failed} failed" if c.failed else "")
            + (f" — {c.origin} {c.uri}" if c.uri else "")
            + (f" at {c.commit[:12]}" if c.commit else "")
            for c in self.collections
        ]
        return "Collections:\n" + "\n".join(lines) if lines else "No collections yet."


class DefaultCollection(Output):
    default_collection: str

    def render(self) -> str:
        return f"Default collection: {self.default_collection}"


class FileList(Output):
    collection: str
    total: int
    offset: int
    next_offset: int | None = Field(description="pass as offset for the next page; null at the end")
    files: list[ObjectInfo]

    @classmethod
    def from_record(cls, page: documents.DocumentPage) -> FileList:
        return from_fields(
            cls, page, collection=page.source_id, files=[ObjectInfo.from_record(d) for d in page.documents]
        )

    def render(self) -> str:
        lines = [
            f"- {f.key} ({f.status}{': ' + f.error if f.error else ''}) {f.title or ''} document_id={f.document_id}"
            + (f" hidden_dropped={f.hidden_dropped}" if f.hidden_dropped else "")
            for f in self.files
        ]
        more = f"\nMore: offset={self.next_offset}" if self.next_offset is not None else ""
        return f"{self.total} files in {self.collection}:\n" + "\n".join(lines) + more


class SearchResults(Output):
    query: str
    collection: str | None = Field(description="the collection searched; null: all of them")
    retrieval_mode: str
    hits: list[SearchHit]

    @classmethod
    def from_record(
        cls, query: str, source_id: str | None, retrieval_mode: str, hits: Sequence[research.CitedHit]
    ) -> SearchResults:
        return cls(
            query=query,
            collection=source_id,
            retrieval_mode=retrieval_mode,
            hits=[SearchHit.from_record(h) for h in hits],
        )

    def render(self) -> str:
        if not self.hits:
            return f"No results for {self.query!r}."
        parts = [f"{len(self.hits)} hits for {self.query!r}:"]
        parts += [
            f"\n## {i}. {h.where()} (score {h.score:.3f})\nid: {h.id}\n{h.flag_note()}{h.text}"
            for i, h in enumerate(self.hits, 1)
        ]
        return "\n".join(parts)


class PageImageInfo(Output):
    id: str | None = Field(description="the chunk whose passage is highlighted (none: the page alone)")
    page: int
    width: int = Field(description="pixels")
    height: int = Field(description="pixels")
    boxes: list[list[float]] = Field(description="the highlighted rectangles: left, bottom, right, top, in points")
    mime_type: str = "image/png"

    @classmethod
    def from_record(cls, page: page_images.PageImage) -> PageImageInfo:
        return from_fields(cls, page, id=page.chunk.chunk_id or None, boxes=[list(b) for b in page.boxes])


class Citation(Output):
    url: str
    mode: str = Field(description="signed | gs | portal | file")
    source_ref: str
    document_id: str
    bucket: str | None
    key: str
    version_id: str | None
    indexed_version_id: str | None
    page_start: int | None
    page_end: int | None
    highlight: str | None
    highlight_applied: bool
    expires_at: str | None = Field(description="when a signed URL stops working (ISO 8601)")
    version_available: bool | None = Field(
        None, description="signed mode: whether the cited generation can still be opened (false: see note)"
    )
    note: str | None = Field(None, description="what the URL opens when it is not the cited version")
    page_image: PageImageInfo | None = Field(
        None, description="page_image: the page shown (the result's image content) with the passage highlighted"
    )
    _png: bytes = PrivateAttr(default=b"")

    @property
    def png(self) -> bytes:
        return self._png

    def with_page(self, page: page_images.PageImage) -> Citation:
        """This citation with the page of a passage, highlighted: the picture as image content, its facts here."""
        shown = self.model_copy(update={"page_image": PageImageInfo.from_record(page)})
        shown._png = page.png
        return shown

    @classmethod
    def from_record(cls, citation: citations.Citation) -> Citation:
        document = citation.document
        return from_fields(
            cls,
            citation,
            document,
            document_id=document.doc_id,
            version_id=citation.version,
            indexed_version_id=document.version,
            expires_at=citation.expires_at.isoformat() if citation.expires_at else None,
        )

    def render(self) -> str:
        expires = f"\nexpires {self.expires_at}" if self.expires_at else ""
        note = f"\nnote: {self.note}" if self.note else ""
        return f"{self.url}{expires}{note}"


class DocumentChunks(Output):
    document: DocumentInfo
    total_chunks: int
    offset: int
    next_offset: int | None
    chunks: list[ChunkInfo]

    @classmethod
    def _fields(cls, page: documents.ChunkPage) -> dict:
        chunks = [ChunkInfo.from_record(c) for c in page.chunks]
        return {"document": DocumentInfo.from_record(page.copies), "total_chunks": page.total, "chunks": chunks}

    @classmethod
    def from_record(cls, page: documents.ChunkPage) -> DocumentChunks:
        return from_fields(cls, page, **cls._fields(page))

    def render(self) -> str:
        return f"{self.document.title} — {self.total_chunks} chunks\n\n{render_chunks(self.chunks)}"


class ChunkDocument(DocumentChunks):
    chunk: ChunkInfo

    @classmethod
    def from_record(cls, page: documents.ChunkPage) -> ChunkDocument:
        assert page.chunk is not None, "chunk_document's page names its chunk"
        return from_fields(cls, page, **cls._fields(page), chunk=ChunkInfo.from_record(page.chunk))

    def render(self) -> str:
        return f"chunk {self.chunk.id} of {self.document.title}\n\n{render_chunks(self.chunks)}"


class ChunkPartition(Output):
    chunk: ChunkInfo
    partition: PartitionInfo
    chunks: list[ChunkInfo] = Field(description="every chunk of the document in the partition's page range")

    @classmethod
    def from_record(cls, found: documents.PartitionChunks) -> ChunkPartition:
        return cls(
            chunk=ChunkInfo.from_record(found.chunk),
            partition=PartitionInfo.from_record(found.partition),
            chunks=[ChunkInfo.from_record(c) for c in found.chunks],
        )

    def render(self) -> str:
        pages = f"pages {self.partition.pages}" if self.partition.pages else self.partition.heading_path
        return f"partition {self.partition.partition_id} ({pages})\n\n{self.partition.text}"


class ChunkBibtex(Output):
    id: str
    document_id: str
    source_ref: str
    bibtex: str
    bibtex_source: str = Field(
        description="generated (PDF metadata and first page), sidecar ({key}.bib), or cited (a reference-list "
        "chunk: the entries of the works it cites)"
    )

    @classmethod
    def from_record(cls, found: documents.Bibtex) -> ChunkBibtex:
        return from_fields(cls, found, found.chunk, id=found.chunk.chunk_id, document_id=found.chunk.doc_id)

    def render(self) -> str:
        return self.bibtex


class FigureInfo(Output):
    """A figure: its caption chunk's citation fields, and its picture's page, box and size (the picture itself
    is the result's image content, and `uri` reads it again)."""

    id: str = Field(description="the figure's caption chunk id")
    collection: str
    key: str
    title: str | None
    label: str = Field(description='"Figure N" as the caption names it')
    caption: str
    page: int | None
    box: list[float] | None = Field(description="the figure on its page: left, bottom, right, top, in points")
    width: int = Field(description="the picture's width in pixels")
    height: int = Field(description="the picture's height in pixels")
    mime_type: str = "image/png"
    source_ref: str = Field(description="doc://…#page=N of the figure's page: give it to resolve_citation")
    uri: str = Field(description="figure://{collection}/{id}: the picture as a resource (resources/read)")
    _png: bytes = PrivateAttr(default=b"")

    @classmethod
    def from_record(cls, picture: figures.Picture) -> FigureInfo:
        chunk = picture.chunk
        info = from_fields(
            cls,
            picture,
            chunk,
            id=chunk.chunk_id,
            collection=chunk.source_id,
            caption=chunk.text,
            page=chunk.page_start,
            box=list(chunk.figure_box) if chunk.figure_box else None,
            uri=figures.figure_uri(chunk.source_id, chunk.chunk_id),
        )
        info._png = picture.png
        return info

    @property
    def png(self) -> bytes:
        return self._png

    def render(self) -> str:
        where = f"{self.title or self.key}, p. {self.page}" if self.page else self.title or self.key
        return f"{self.label} ({self.width}x{self.height} PNG) — {where} [{self.source_ref}]\n\n{self.caption}"
