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
from pydantic import Field
from starlette.routing import BaseRoute

from thoth.app import Thoth
from thoth.mcp.outputs.research import (
    ChunkBibtex,
    ChunkDocument,
    ChunkInfo,
    ChunkPartition,
    Citation,
    CollectionList,
    DefaultCollection,
    DocumentChunks,
    FileList,
    Pong,
    SearchResults,
)
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


# -- tool bodies: what each tool does, callable without MCP (the caller is current_caller()) ---------------


def _named(app: Thoth, collection: str | None) -> str | None:
    # fetches by id: a named collection must exist; without one, the id alone decides
    return collections.find_collection(app.store, collection) if collection else None


def ping(app: Thoth) -> Pong:
    status, body = app.health()
    return Pong(status="ok" if status == 200 else "unavailable", index=body["status"], reason=body.get("reason"))


def list_collections(app: Thoth) -> CollectionList:
    return CollectionList.from_record(collections.list_collections(app.store, current_caller().key))


def set_default_collection(app: Thoth, name: str) -> DefaultCollection:
    chosen = collections.set_default_collection(app.store, name, current_caller().key)
    return DefaultCollection(default_collection=chosen)


def list_collection_files(
    app: Thoth, collection: str | None = None, limit: int = 200, batch_size: int = 256, offset: int | None = None
) -> FileList:
    source_id = collections.resolve(app.store, collection, owner=current_caller().key, required=True)
    assert source_id is not None  # required=True: resolve names one or raises
    return FileList.from_record(collections.list_collection_files(app.store, source_id, limit, offset or 0, batch_size))


def search(
    app: Thoth,
    query: str,
    top_k: int = 5,
    prefetch_k: int = 40,
    collection: str | None = None,
    retrieval_mode: str = "hybrid",
    include_partition: bool | None = None,
    include_document: bool | None = None,
) -> SearchResults:
    source_id = collections.resolve(app.store, collection, owner=current_caller().key)
    hits = research.search(
        app.store,
        app.embedder(),
        query,
        top_k=top_k,
        prefetch_k=prefetch_k,
        source_id=source_id,
        retrieval_mode=retrieval_mode,
        include_partition=bool(include_partition),
        include_document=bool(include_document),
    )
    return SearchResults.from_record(query, source_id, retrieval_mode, hits)


def fetch(app: Thoth, id: str, collection: str | None = None) -> ChunkInfo:
    chunk = documents.get_chunk(app.store, id, _named(app, collection))
    return ChunkInfo.from_record(documents.cite_chunks(app.store, [chunk])[0])


def resolve_citation(
    app: Thoth,
    source_ref: str | None = None,
    bucket: str | None = None,
    key: str | None = None,
    version_id: str | None = None,
    page: int | None = None,
    page_start: int | None = None,
    page_end: int | None = None,
    highlight: str | None = None,
    mode: str | None = None,
) -> Citation:
    citation = citations.resolve_citation(
        app.store,
        app.settings,
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
    return Citation.from_record(citation)


def fetch_document_chunks(
    app: Thoth,
    document_id: str | None = None,
    bucket: str | None = None,
    key: str | None = None,
    collection: str | None = None,
    limit: int = 500,
    offset: int | None = None,
) -> DocumentChunks:
    copies = documents.find_document(app.store, document_id, bucket, key, _named(app, collection))
    return DocumentChunks.from_record(documents.document_chunks(app.store, copies, limit, offset or 0))


def fetch_chunk_document(app: Thoth, id: str, collection: str | None = None, limit: int = 500) -> ChunkDocument:
    return ChunkDocument.from_record(documents.chunk_document(app.store, id, _named(app, collection), limit))


def fetch_chunk_partition(app: Thoth, id: str, collection: str | None = None) -> ChunkPartition:
    return ChunkPartition.from_record(documents.chunk_partition(app.store, id, _named(app, collection)))


def fetch_chunk_bibtex(app: Thoth, id: str, collection: str | None = None) -> ChunkBibtex:
    return ChunkBibtex.from_record(documents.chunk_bibtex(app.store, id, _named(app, collection)))


# -- the tools: names, arguments (the schema clients see) and descriptions; each calls its body ---------------


def register(mcp: MCPServer, app: Thoth) -> None:
    from thoth.mcp.toolsets import research as body  # the module's tool bodies (the tools below shadow their names)

    @read_only_tool(mcp)
    def ping() -> Annotated[CallToolResult, Pong]:
        """Health check: is the index readable and searchable?"""
        pong = body.ping(app)
        return respond(pong, pong.render())

    @read_only_tool(mcp)
    def list_collections() -> Annotated[CallToolResult, CollectionList]:
        """List the collections (one per bucket or ingested folder) with document and chunk counts."""
        data = call("list_collections", lambda: body.list_collections(app))
        return respond(data, data.render())

    @mcp.tool(annotations=WRITES_SETTING)
    def set_default_collection(
        name: Annotated[
            str, Field(description="an existing collection (see list_collections)", min_length=1, max_length=200)
        ],  # fmt: skip
    ) -> Annotated[CallToolResult, DefaultCollection]:
        """Set your default collection: the one search and the other tools use when none is given.

        It is yours alone (kept per caller in the index), so other callers' defaults do not change.
        """
        data = call("set_default_collection", lambda: body.set_default_collection(app, name))
        return respond(data, data.render())

    @read_only_tool(mcp)
    def list_collection_files(
        collection: Collection = None,
        limit: Annotated[int, Field(description="files to return", ge=1, le=1000)] = 200,
        batch_size: Annotated[int, Field(description="rows read per batch while scanning", ge=1, le=8192)] = 256,
        offset: Annotated[int | None, Field(description="files to skip: a previous next_offset", ge=0)] = None,
    ) -> Annotated[CallToolResult, FileList]:
        """List the files (documents) of a collection in key order, with status, title and citation base."""
        data = call(
            "list_collection_files", lambda: body.list_collection_files(app, collection, limit, batch_size, offset)
        )
        return respond(data, data.render())

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
        data = call(
            "search",
            lambda: body.search(
                app, query, top_k, prefetch_k, collection, retrieval_mode, include_partition, include_document
            ),
        )
        return respond(data, data.render())

    @read_only_tool(mcp)
    def fetch(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkInfo]:
        """Fetch one chunk by id, with its text and citation metadata."""
        chunk = call("fetch", lambda: body.fetch(app, id, collection))
        return respond(chunk, chunk.render())

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
        data = call(
            "resolve_citation",
            lambda: body.resolve_citation(
                app, source_ref, bucket, key, version_id, page, page_start, page_end, highlight, mode
            ),
        )
        return respond(data, data.render())

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
        data = call(
            "fetch_document_chunks",
            lambda: body.fetch_document_chunks(app, document_id, bucket, key, collection, limit, offset),
        )
        return respond(data, data.render())

    @read_only_tool(mcp)
    def fetch_chunk_document(
        id: ChunkId,
        collection: Collection = None,
        limit: Annotated[int, Field(description="chunks of the document to return", ge=1, le=2000)] = 500,
    ) -> Annotated[CallToolResult, ChunkDocument]:
        """A chunk together with its whole document: metadata, every key it is stored under, all chunks."""
        data = call("fetch_chunk_document", lambda: body.fetch_chunk_document(app, id, collection, limit))
        return respond(data, data.render())

    @read_only_tool(mcp)
    def fetch_chunk_partition(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkPartition]:
        """A chunk's partition (its page, or section) and every chunk in that page range."""
        data = call("fetch_chunk_partition", lambda: body.fetch_chunk_partition(app, id, collection))
        return respond(data, data.render())

    @read_only_tool(mcp)
    def fetch_chunk_bibtex(id: ChunkId, collection: Collection = None) -> Annotated[CallToolResult, ChunkBibtex]:
        """The BibTeX entry of a chunk's document (generated, or its {key}.bib sidecar)."""
        data = call("fetch_chunk_bibtex", lambda: body.fetch_chunk_bibtex(app, id, collection))
        return respond(data, data.render())


def routes(app: Thoth) -> list[BaseRoute]:
    from thoth.mcp.events import event_routes  # the ingest side is imported only when routes are built

    return event_routes(app)
