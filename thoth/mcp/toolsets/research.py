"""The research surface (seed 002): a PDF research library with citations back to the page.

Eleven tools with the seed's names and arguments: ping, list_collections,
set_default_collection, list_collection_files, search, fetch, resolve_citation,
fetch_document_chunks, fetch_chunk_document, fetch_chunk_partition,
fetch_chunk_bibtex. Plus the HTTP route `POST /internal/gcs-events` that takes
Cloud Storage Pub/Sub push messages (admin token).
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute

from thoth.app import Thoth
from thoth.mcp.roles import current_caller
from thoth.mcp.tools import call, read_only_tool, respond
from thoth.retrieval import citations, collections, documents, research

WRITES_SETTING = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

Collection = Annotated[
    str | None,
    Field(description="collection name (default: the one set with set_default_collection)", max_length=200),
]
ChunkId = Annotated[str, Field(description="chunk id: the `id` of a search hit", min_length=1, max_length=200)]


# -- result models ------------------------------------------------------------------------------


class ObjectInfo(BaseModel):
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


class DocumentInfo(BaseModel):
    document_id: str
    collection: str
    title: str | None
    authors: list[str]
    year: int | None
    page_count: int | None
    objects: list[ObjectInfo] = Field(description="every key the same bytes are stored under")


class PartitionInfo(BaseModel):
    partition_id: str
    partition_hash: str | None
    document_id: str
    kind: str = Field(description="page (PDF) or section")
    heading_path: str
    pages: list[int]
    page_start: int | None
    page_end: int | None
    text: str


class ChunkInfo(BaseModel):
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


class SearchHit(ChunkInfo):
    score: float = Field(description="fused relevance, 1.0 = ranked first by every search that ran")
    similarity: float | None = Field(description="cosine similarity, when vector search saw the chunk")
    partition: PartitionInfo | None = None
    document: DocumentInfo | None = None


class Pong(BaseModel):
    status: str = Field(description="ok when the index is readable and searchable")
    index: str
    reason: str | None = None


class CollectionInfo(BaseModel):
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


class CollectionList(BaseModel):
    default_collection: str | None
    collections: list[CollectionInfo]


class DefaultCollection(BaseModel):
    default_collection: str


class FileList(BaseModel):
    collection: str
    total: int
    offset: int
    next_offset: int | None = Field(description="pass as offset for the next page; null at the end")
    files: list[ObjectInfo]


class SearchResults(BaseModel):
    query: str
    collection: str | None = Field(description="the collection searched; null: all of them")
    retrieval_mode: str
    hits: list[SearchHit]


class Citation(BaseModel):
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


class DocumentChunks(BaseModel):
    document: DocumentInfo
    total_chunks: int
    offset: int
    next_offset: int | None
    chunks: list[ChunkInfo]


class ChunkDocument(DocumentChunks):
    chunk: ChunkInfo


class ChunkPartition(BaseModel):
    chunk: ChunkInfo
    partition: PartitionInfo
    chunks: list[ChunkInfo] = Field(description="every chunk of the document in the partition's page range")


class ChunkBibtex(BaseModel):
    id: str
    document_id: str
    source_ref: str
    bibtex: str
    bibtex_source: str = Field(description="generated (PDF metadata and first page) or sidecar ({key}.bib)")


# -- text renderings -------------------------------------------------------------------------------


def _where(chunk: ChunkInfo) -> str:
    pages = f", p. {chunk.page_start}" + (f"-{chunk.page_end}" if chunk.page_end != chunk.page_start else "")
    return f"{chunk.title or chunk.key}{pages if chunk.page_start else ''} [{chunk.source_ref}]"


def _render_chunks(chunks: list[ChunkInfo]) -> str:
    return "\n\n".join(f"### {c.chunk_index}. {_where(c)}\nid: {c.id}\n{c.text}" for c in chunks)


# -- tools ----------------------------------------------------------------------------------------------


def register(mcp: MCPServer, app: Thoth) -> None:
    store, settings = app.store, app.settings

    @read_only_tool(mcp)
    def ping() -> Annotated[CallToolResult, Pong]:
        """Health check: is the index readable and searchable?"""
        status, body = app.health()
        pong = Pong(status="ok" if status == 200 else "unavailable", index=body["status"], reason=body.get("reason"))
        return respond(pong, f"pong: {pong.status}" + (f" ({pong.reason})" if pong.reason else ""))

    @read_only_tool(mcp)
    def list_collections() -> Annotated[CallToolResult, CollectionList]:
        """List the collections (one per bucket or ingested folder) with document and chunk counts."""
        rows = call("list_collections", lambda: collections.list_collections(store, current_caller().key))
        data = CollectionList(
            default_collection=next((r["collection"] for r in rows if r["is_default"]), None), collections=rows
        )
        lines = [
            f"- {c.collection}{' (default)' if c.is_default else ''}: {c.documents} documents, {c.chunks} chunks"
            + (f", {c.failed} failed" if c.failed else "")
            + (f" — {c.uri}" if c.uri else "")
            for c in data.collections
        ]
        return respond(data, "Collections:\n" + "\n".join(lines) if lines else "No collections yet.")

    @mcp.tool(annotations=WRITES_SETTING)
    def set_default_collection(
        name: Annotated[
            str, Field(description="an existing collection (see list_collections)", min_length=1, max_length=200)
        ],  # fmt: skip
    ) -> Annotated[CallToolResult, DefaultCollection]:
        """Set your default collection: the one search and the other tools use when none is given.

        It is yours alone (kept per caller in the index), so other callers' defaults do not change.
        """
        owner = current_caller().key
        chosen = call("set_default_collection", lambda: collections.set_default_collection(store, name, owner))
        return respond(DefaultCollection(default_collection=chosen), f"Default collection: {chosen}")

    @read_only_tool(mcp)
    def list_collection_files(
        collection: Collection = None,
        limit: Annotated[int, Field(description="files to return", ge=1, le=1000)] = 200,
        batch_size: Annotated[int, Field(description="rows read per batch while scanning", ge=1, le=8192)] = 256,
        offset: Annotated[int | None, Field(description="files to skip: a previous next_offset", ge=0)] = None,
    ) -> Annotated[CallToolResult, FileList]:
        """List the files (documents) of a collection in key order, with status, title and citation base."""

        def run() -> dict:
            chosen = collections.resolve(store, collection, owner=current_caller().key, required=True)
            return collections.list_collection_files(store, chosen, limit, offset or 0, batch_size)

        data = FileList(**call("list_collection_files", run))
        lines = [
            f"- {f.key} ({f.status}{': ' + f.error if f.error else ''}) {f.title or ''} document_id={f.document_id}"
            for f in data.files
        ]
        more = f"\nMore: offset={data.next_offset}" if data.next_offset is not None else ""
        return respond(data, f"{data.total} files in {data.collection}:\n" + "\n".join(lines) + more)

    @read_only_tool(mcp)
    def search(
        query: Annotated[str, Field(description="what to look for", min_length=1, max_length=2000)],
        top_k: Annotated[int, Field(description="hits to return", ge=1, le=50)] = 5,
        prefetch_k: Annotated[int, Field(description="candidates each search ranks before fusing", ge=1, le=500)] = 40,
        collection: Collection = None,
        retrieval_mode: Annotated[
            Literal["hybrid", "cosine"],
            Field(description="hybrid: keyword (BM25) + vector, fused; cosine: vector only"),
        ] = "hybrid",
        include_partition: Annotated[bool | None, Field(description="add each hit's page/section")] = None,
        include_document: Annotated[bool | None, Field(description="add each hit's document and keys")] = None,
    ) -> Annotated[CallToolResult, SearchResults]:
        """Search the research library; hits are chunks with document, page and a source_ref to cite.

        Without a collection (and no default set) every collection is searched.
        """

        def run() -> tuple[str | None, list[dict]]:
            chosen = collections.resolve(store, collection, owner=current_caller().key)
            hits = research.search(
                store,
                app.embedder(),
                query,
                top_k=top_k,
                prefetch_k=prefetch_k,
                collection=chosen,
                retrieval_mode=retrieval_mode,
                include_partition=bool(include_partition),
                include_document=bool(include_document),
            )
            return chosen, hits

        chosen, hits = call("search", run)
        data = SearchResults(query=query, collection=chosen, retrieval_mode=retrieval_mode, hits=hits)
        if not data.hits:
            return respond(data, f"No results for {query!r}.")
        parts = [f"{len(data.hits)} hits for {query!r}:"]
        parts += [
            f"\n## {i}. {_where(h)} (score {h.score:.3f})\nid: {h.id}\n{h.text}" for i, h in enumerate(data.hits, 1)
        ]
        return respond(data, "\n".join(parts))

    @read_only_tool(mcp)
    def fetch(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkInfo]:
        """Fetch one chunk by id, with its text and citation metadata."""

        def run() -> dict:
            return documents.describe_chunks(store, [documents.get_chunk(store, id, _named(collection))])[0]

        chunk = ChunkInfo(**call("fetch", run))
        return respond(chunk, f"{_where(chunk)}\n\n{chunk.text}")

    @read_only_tool(mcp)
    def resolve_citation(
        source_ref: Annotated[
            str | None, Field(description="doc://{bucket}/{key}[?version_id=…][#page=N]", max_length=2000)
        ] = None,  # fmt: skip
        bucket: Annotated[
            str | None, Field(description="bucket (or local collection), with key", max_length=222)
        ] = None,
        key: Annotated[str | None, Field(description="object key inside the bucket", max_length=1024)] = None,
        version_id: Annotated[str | None, Field(description="object generation", max_length=64)] = None,
        page: Annotated[int | None, Field(description="page to open", ge=1)] = None,
        page_start: Annotated[int | None, Field(description="first page of a range", ge=1)] = None,
        page_end: Annotated[int | None, Field(description="last page of a range", ge=1)] = None,
        highlight: Annotated[
            str | None, Field(description="text to highlight where the mode allows", max_length=500)
        ] = None,  # fmt: skip
        mode: Annotated[
            Literal["signed", "gs", "portal", "file"] | None,
            Field(description="signed (V4 signed URL), gs (gs:// URI), portal (THOTH_PORTAL_BASE_URL), file (local)"),
        ] = None,
    ) -> Annotated[CallToolResult, Citation]:
        """Turn a source_ref (or bucket + key) into a URL that opens the document at the page."""

        def run() -> dict:
            return citations.resolve_citation(
                store,
                settings,
                source_ref=source_ref,
                bucket=bucket,
                key=key,
                version_id=version_id,
                page=page,
                page_start=page_start,
                page_end=page_end,
                highlight=highlight,
                mode=mode,
            )

        data = Citation(**call("resolve_citation", run))
        expires = f"\nexpires {data.expires_at}" if data.expires_at else ""
        note = f"\nnote: {data.note}" if data.note else ""
        return respond(data, f"{data.url}{expires}{note}")

    @read_only_tool(mcp)
    def fetch_document_chunks(
        document_id: Annotated[str | None, Field(description="SHA-256 document id", max_length=64)] = None,
        bucket: Annotated[
            str | None, Field(description="bucket (or local collection), with key", max_length=222)
        ] = None,
        key: Annotated[str | None, Field(description="object key", max_length=1024)] = None,
        collection: Collection = None,
        limit: Annotated[int, Field(description="chunks to return", ge=1, le=2000)] = 500,
        offset: Annotated[int | None, Field(description="chunks to skip: a previous next_offset", ge=0)] = None,
    ) -> Annotated[CallToolResult, DocumentChunks]:
        """Every chunk of one document in reading order, by document_id or by bucket + key."""

        def run() -> dict:
            rows = documents.find_document(store, document_id, bucket, key, _named(collection))
            return documents.document_chunks(store, rows, limit, offset or 0)

        data = DocumentChunks(**call("fetch_document_chunks", run))
        head = f"{data.document.title} — {data.total_chunks} chunks"
        return respond(data, f"{head}\n\n{_render_chunks(data.chunks)}")

    @read_only_tool(mcp)
    def fetch_chunk_document(
        id: ChunkId,
        collection: Collection = None,
        limit: Annotated[int, Field(description="chunks of the document to return", ge=1, le=2000)] = 500,
    ) -> Annotated[CallToolResult, ChunkDocument]:
        """A chunk together with its whole document: metadata, every key it is stored under, all chunks."""
        data = ChunkDocument(
            **call("fetch_chunk_document", lambda: documents.chunk_document(store, id, _named(collection), limit))
        )
        return respond(data, f"chunk {data.chunk.id} of {data.document.title}\n\n{_render_chunks(data.chunks)}")

    @read_only_tool(mcp)
    def fetch_chunk_partition(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkPartition]:
        """A chunk's partition (its page, or section) and every chunk in that page range."""
        data = ChunkPartition(
            **call("fetch_chunk_partition", lambda: documents.chunk_partition(store, id, _named(collection)))
        )
        pages = f"pages {data.partition.pages}" if data.partition.pages else data.partition.heading_path
        return respond(data, f"partition {data.partition.partition_id} ({pages})\n\n{data.partition.text}")

    @read_only_tool(mcp)
    def fetch_chunk_bibtex(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkBibtex]:
        """The BibTeX entry of a chunk's document (generated, or its {key}.bib sidecar)."""
        data = ChunkBibtex(**call("fetch_chunk_bibtex", lambda: documents.chunk_bibtex(store, id, _named(collection))))
        return respond(data, data.bibtex)

    def _named(collection: str | None) -> str | None:
        # fetches by id: a named collection must exist; without one, the id alone decides
        return collections.find_collection(store, collection) if collection else None


def routes(app: Thoth) -> list[BaseRoute]:
    from thoth.mcp.events import event_routes  # the ingest side is imported only when routes are built

    return event_routes(app)
