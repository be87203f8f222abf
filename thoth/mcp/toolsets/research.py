"""The research surface (docs/research.md): a PDF research library with citations back to the page."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from thoth.app import Thoth
from thoth.errors import ClientError, NotFound
from thoth.mcp.completions import source_names
from thoth.mcp.outputs.research import (
    ChunkBibtex,
    ChunkDocument,
    ChunkInfo,
    ChunkPartition,
    Citation,
    CollectionList,
    DefaultCollection,
    DocumentChunks,
    FigureInfo,
    FileList,
    Pong,
    SearchResults,
)
from thoth.mcp.prompts import Question
from thoth.mcp.roles import current_caller
from thoth.mcp.tools import advice, expose, respond
from thoth.mcp.toolsets import Toolset
from thoth.retrieval import citations, collections, documents, figures, origins, page_images, research

WRITES_SETTING = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

Collection = Annotated[
    str | None,
    Field(description="collection name (default: the one set with set_default_collection)", max_length=200),
]
Bucket = Annotated[str | None, Field(description="bucket (or local collection), with key", max_length=222)]
ChunkId = Annotated[str, Field(description="chunk id: the `id` of a search hit", min_length=1, max_length=200)]


def _named(app: Thoth, collection: str | None) -> str | None:
    # fetches by id: a named collection must exist; without one, the id alone decides
    return collections.find_collection(app.store, collection) if collection else None


def ping(app: Thoth) -> Pong:
    """Health check: is the index readable and searchable?"""
    report = app.health()
    return Pong(status=report.status, index=report.status, reason=report.reason)


def list_collections(app: Thoth) -> CollectionList:
    """List the collections (one per bucket or ingested folder) with document and chunk counts."""
    listed = collections.list_collections(app.store, current_caller().key)
    return CollectionList.from_record(listed, origins.origins(app.store, [s.source for s in listed]))


def set_default_collection(
    app: Thoth,
    name: Annotated[
        str, Field(description="an existing collection (see list_collections)", min_length=1, max_length=200)
    ],
) -> DefaultCollection:
    """Set your default collection: the one search and the other tools use when none is given.

    It is yours alone (kept per caller in the index), so other callers' defaults do not change.
    """
    try:
        chosen = collections.set_default_collection(app.store, name, current_caller().key)
    except NotFound as exc:  # in this tool's words: the argument is `name`
        raise NotFound(f"name: {exc}") from None
    return DefaultCollection(default_collection=chosen)


def list_collection_files(
    app: Thoth,
    collection: Collection = None,
    limit: Annotated[int, Field(description="files to return", ge=1, le=1000)] = 200,
    batch_size: Annotated[int, Field(description="rows read per batch while scanning", ge=1, le=8192)] = 256,
    offset: Annotated[int | None, Field(description="files to skip: a previous next_offset", ge=0)] = None,
) -> FileList:
    """List the files (documents) of a collection in key order, with status, title and citation base."""
    with advice(ClientError, " or set one with set_default_collection"):
        source_id = collections.resolve(app.store, collection, owner=current_caller().key, required=True)
    assert source_id is not None  # required=True: resolve names one or raises
    return FileList.from_record(documents.list_documents(app.store, source_id, limit=limit, offset=offset or 0))


def search(
    app: Thoth,
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
    exclude_references: Annotated[
        bool | None, Field(description="leave the papers' reference lists out (content_type references)")
    ] = None,
    content_type: Annotated[
        Literal["text", "table", "figure", "caption", "footnote", "algorithm", "references", "ocr", "code"] | None,
        Field(description="only hits of this type: table for a paper's tables (a Markdown table under its caption)"),
    ] = None,
) -> SearchResults:
    """Search the research library; hits are chunks with document, page and a source_ref to cite.

    Without a collection (and no default set) every collection is searched.
    """
    source_id = collections.resolve(app.store, collection, owner=current_caller().key)
    found = research.search(
        app.store,
        app.embedder(),
        query,
        top_k=top_k,
        prefetch_k=prefetch_k,
        source_id=source_id,
        retrieval_mode=retrieval_mode,
        include_partition=bool(include_partition),
        include_document=bool(include_document),
        exclude_references=bool(exclude_references),
        content_type=content_type,
    )
    return SearchResults.from_record(query, source_id, retrieval_mode, found.hits).noting(found.keyword_only)


def fetch(app: Thoth, id: ChunkId, collection: Collection = None) -> ChunkInfo:
    """Fetch one chunk by id, with its text and citation metadata."""
    chunk = documents.get_chunk(app.store, id, _named(app, collection))
    return ChunkInfo.from_record(documents.cite_chunks(app.store, [chunk])[0])


def resolve_citation(
    app: Thoth,
    source_ref: Annotated[
        str | None, Field(description="doc://{bucket}/{key}[?version_id=…][#page=N]", max_length=2000)
    ] = None,
    bucket: Bucket = None,
    key: Annotated[str | None, Field(description="object key inside the bucket", max_length=1024)] = None,
    version_id: Annotated[str | None, Field(description="object generation", max_length=64)] = None,
    page: Annotated[int | None, Field(description="page to open", ge=1)] = None,
    page_start: Annotated[int | None, Field(description="first page of a range", ge=1)] = None,
    page_end: Annotated[int | None, Field(description="last page of a range", ge=1)] = None,
    highlight: Annotated[
        str | None, Field(description="text to highlight where the mode allows", max_length=500)
    ] = None,
    mode: Annotated[
        Literal["signed", "gs", "portal", "file"] | None,
        Field(description="signed (V4 signed URL), gs (gs:// URI), portal (THOTH_PORTAL_BASE_URL), file (local)"),
    ] = None,
    id: Annotated[
        str | None,
        Field(
            description="a chunk id (a search hit's `id`): cite its page, and show it with page_image", max_length=200
        ),
    ] = None,
    page_image: Annotated[
        bool | None,
        Field(description="also return the cited page as a PNG (a PDF's), with the passage of id highlighted"),
    ] = None,
) -> Citation:
    """Turn a source_ref (or bucket + key, or a chunk's id) into a URL that opens the document at the page;
    with page_image, the page itself as a PNG, the chunk's passage highlighted."""
    if id and not (source_ref or bucket or key):
        source_ref = documents.get_chunk(app.store, id).source_ref
    with advice(NotFound, "; list_collection_files shows what there is"):
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
    answer = Citation.from_record(citation)
    if page_image and id:
        answer = answer.with_page(page_images.highlighted_page(app.store, app.settings, id))
    elif page_image:
        answer = answer.with_page(page_images.cited_page(app.settings, citation.document, citation.page_start or 1))
    return answer


def _citation(answer: Citation) -> CallToolResult:
    """A citation's URL as text (and its links); with page_image, the page as image content after it."""
    result = respond(answer, answer.render())
    if answer.png:
        image = ImageContent(type="image", data=base64.b64encode(answer.png).decode("ascii"), mime_type="image/png")
        result = result.model_copy(update={"content": [*result.content, image]})
    return result


def fetch_document_chunks(
    app: Thoth,
    document_id: Annotated[str | None, Field(description="SHA-256 document id", max_length=64)] = None,
    bucket: Bucket = None,
    key: Annotated[str | None, Field(description="object key", max_length=1024)] = None,
    collection: Collection = None,
    limit: Annotated[int, Field(description="chunks to return", ge=1, le=2000)] = 500,
    offset: Annotated[int | None, Field(description="chunks to skip: a previous next_offset", ge=0)] = None,
) -> DocumentChunks:
    """Every chunk of one document in reading order, by document_id or by bucket + key."""
    copies = documents.find_document(app.store, document_id, bucket, key, _named(app, collection))
    return DocumentChunks.from_record(documents.document_chunks(app.store, copies, limit, offset or 0))


def fetch_chunk_document(
    app: Thoth,
    id: ChunkId,
    collection: Collection = None,
    limit: Annotated[int, Field(description="chunks of the document to return", ge=1, le=2000)] = 500,
) -> ChunkDocument:
    """A chunk together with its whole document: metadata, every key it is stored under, all chunks."""
    return ChunkDocument.from_record(documents.chunk_document(app.store, id, _named(app, collection), limit))


def fetch_chunk_partition(app: Thoth, id: ChunkId, collection: Collection = None) -> ChunkPartition:
    """A chunk's partition (its page, or section) and every chunk in that page range."""
    return ChunkPartition.from_record(documents.chunk_partition(app.store, id, _named(app, collection)))


def fetch_chunk_bibtex(app: Thoth, id: ChunkId, collection: Collection = None) -> ChunkBibtex:
    """The BibTeX entry of a chunk's document (generated, or its {key}.bib sidecar); for a chunk of a
    paper's reference list, the entries of the works it cites."""
    return ChunkBibtex.from_record(documents.chunk_bibtex(app.store, id, _named(app, collection)))


def get_figure(
    app: Thoth,
    id: Annotated[
        str | None, Field(description="a figure chunk's id (a search hit of content_type figure)", max_length=200)
    ] = None,
    source_ref: Annotated[
        str | None,
        Field(description="doc://{bucket}/{key}[#page=N]: the figure's document (and page)", max_length=2000),
    ] = None,
    key: Annotated[str | None, Field(description="the figure's document, by key", max_length=1024)] = None,
    figure: Annotated[int | None, Field(description='the figure\'s number: 3 for "Figure 3"', ge=1, le=999)] = None,
    collection: Collection = None,
) -> FigureInfo:
    """Show a paper's figure: its picture (a PNG cut from the page) with its caption, page and box.

    By id (a search hit of content_type figure), or by figure number of a document (source_ref or key);
    a source_ref with #page=N and no number gives that page's first figure.
    """
    picture = figures.figure(
        app.store,
        chunk_id=id,
        source_ref=source_ref,
        key=key,
        number=figure,
        source_id=_named(app, collection),
    )
    return FigureInfo.from_record(picture)


def _with_picture(info: FigureInfo) -> CallToolResult:
    """The figure as MCP image content (base64 PNG), then its caption as text; its fields as structured content."""
    image = ImageContent(type="image", data=base64.b64encode(info.png).decode("ascii"), mime_type=info.mime_type)
    text = TextContent(type="text", text=info.render())
    return CallToolResult(content=[image, text], structured_content=info.model_dump(mode="json"))


def register(mcp: MCPServer, app: Thoth) -> None:
    expose(mcp, app, ping, title="Check the index")
    expose(mcp, app, list_collections, title="List collections")
    # Its description keeps the indentation of the docstring it was first declared with (raw, not dedented):
    # clients have always seen it so (tests/fixtures/tool_golden.json pins it).
    raw = (set_default_collection.__doc__ or "").replace("\n    ", "\n        ")
    title = "Set the default collection"
    expose(mcp, app, set_default_collection, title=title, annotations=WRITES_SETTING, description=raw)
    expose(mcp, app, list_collection_files, title="List files of a collection")
    expose(mcp, app, search, title="Search the research library")
    expose(mcp, app, fetch, title="Fetch a chunk")
    expose(mcp, app, resolve_citation, title="Open a citation", result=_citation)
    expose(mcp, app, fetch_document_chunks, title="Read a document's chunks")
    expose(mcp, app, fetch_chunk_document, title="Get a chunk's document")
    expose(mcp, app, fetch_chunk_partition, title="Get a chunk's page or section")
    expose(mcp, app, fetch_chunk_bibtex, title="Get a BibTeX entry")
    expose(mcp, app, get_figure, title="Show a figure", result=_with_picture)


def prompts(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Answer with citations")
    def answer_with_citations(
        question: Question,
        collection: Annotated[
            str | None, Field(description="the collection to search (list_collections); default: the default one")
        ] = None,
    ) -> str:
        """Search the research library, read the passages in context, and answer citing page and section."""
        scope = f' with collection="{collection}"' if collection else ""
        return (
            f"Answer this question from the research library: {question}\n\n"
            f"1. Call search{scope} with the question; try a second query if the first hits miss.\n"
            "2. For each hit you use, read it in context with fetch_chunk_partition (the whole page or section).\n"
            "3. Answer from what you read. Cite every claim with its document title, page and section, and give "
            "its `source_ref`; resolve_citation turns a source_ref into a link the user can open.\n"
            "4. Say plainly what the library does not cover."
        )


TOOLSET = Toolset(
    "research",
    register,
    prompts=prompts,
    completions={("answer_with_citations", "collection"): source_names},
)
