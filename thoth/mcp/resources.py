"""Citations as MCP resources: every `doc://` reference a tool returns can be read with `resources/read`
(the templates: docs/clients.md, "Citations as resources"). The SDK tries templates in registration order,
so the most specific comes first."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListResourcesResult, PaginatedRequestParams, Resource, ResourceLink

from thoth.app import Thoth
from thoth.errors import ClientError
from thoth.mcp import sdk
from thoth.mcp.failures import answered, to_client
from thoth.retrieval import figures, page_images, readable
from thoth.retrieval.paging import OffsetCursor
from thoth.source_ref import SourceRef

DOCUMENT_TEMPLATE = "doc://{collection}/{+key}{?version_id}"
PAGE_TEMPLATE = "doc://{collection}/{+key}#page={page}"
# The SDK's matcher needs the query present when the template names one before a fragment: a second template.
VERSIONED_PAGE_TEMPLATE = "doc://{collection}/{+key}{?version_id}#page={page}"
CHUNK_TEMPLATE = "chunk://{collection}/{chunk_id}"
FIGURE_TEMPLATE = "figure://{collection}/{chunk_id}"
PASSAGE_TEMPLATE = "passage://{collection}/{chunk_id}"
LIST_PAGE_SIZE = 100
DOCUMENTS_CURSOR = OffsetCursor(
    "resources/list", "cursor is not valid: pass the nextCursor of a previous resources/list unchanged"
)


def _page_number(page: str) -> int:
    if not page.isdigit() or int(page) < 1:
        raise ResourceNotFoundError(f"page must be a page number from 1, not {page!r}")
    return int(page)


def _unversioned(read_page: Callable[..., str]) -> Callable[[str, str, str], str]:
    def document_page(collection: str, key: str, page: str) -> str:  # the template's variables, exactly
        return read_page(collection, key, page)

    return document_page


def register_resources(mcp: MCPServer, app: Thoth) -> None:
    # `app.store` asked at each read, never held: it is the index as that read's caller sees it (thoth.access)
    def document_page(collection: str, key: str, page: str, version_id: str | None = None) -> str:
        ref = SourceRef(collection, key, version_id)
        return answered(
            "document_page", lambda: readable.read_page(app.store, ref, _page_number(page)).text, "resource"
        )

    for template, name in ((PAGE_TEMPLATE, "document_page"), (VERSIONED_PAGE_TEMPLATE, "versioned_document_page")):
        mcp.resource(
            template,
            name=name,
            title="A page of a cited document",
            description="One page of a paged document (a PDF), as a citation doc://…#page=N names it",
            mime_type="text/markdown",
        )(document_page if "version_id" in template else _unversioned(document_page))

    @mcp.resource(
        DOCUMENT_TEMPLATE,
        name="document",
        title="A cited document",
        description="A whole document (every page or section, in order), as a citation doc://… names it",
        mime_type="text/markdown",
    )
    def document(collection: str, key: str, version_id: str | None = None) -> str:
        return answered(
            "document",
            lambda: readable.read_document(app.store, SourceRef(collection, key, version_id)).text,
            "resource",
        )

    @mcp.resource(
        FIGURE_TEMPLATE,
        name="figure",
        title="A figure's picture",
        description="A paper's figure as a PNG (the `id` of a search hit of content_type figure)",
        mime_type="image/png",
    )
    def figure(collection: str, chunk_id: str) -> bytes:
        return answered(
            "figure", lambda: figures.figure(app.store, chunk_id=chunk_id, source_id=collection).png, "resource"
        )

    @mcp.resource(
        PASSAGE_TEMPLATE,
        name="passage_on_page",
        title="A cited passage on its page",
        description="A PDF passage (the `id` of a search hit) on its printed page, as a PNG with its lines highlighted",
        mime_type="image/png",
    )
    def passage(collection: str, chunk_id: str) -> bytes:
        return answered(
            "passage_on_page",
            lambda: page_images.highlighted_page(app.store, app.settings, chunk_id, collection).png,
            "resource",
        )

    @mcp.resource(
        CHUNK_TEMPLATE,
        name="chunk",
        title="A cited passage",
        description="One chunk (the `id` of a search hit) with its document title and section",
        mime_type="text/markdown",
    )
    def chunk(collection: str, chunk_id: str) -> str:
        return answered("chunk", lambda: readable.read_chunk(app.store, collection, chunk_id).text, "resource")

    async def list_resources(_ctx: object, params: PaginatedRequestParams | None) -> ListResourcesResult:
        cursor = params.cursor if params else None
        try:
            infos, next_cursor = await anyio.to_thread.run_sync(
                readable.list_documents, app.store, LIST_PAGE_SIZE, cursor, DOCUMENTS_CURSOR
            )
        except ClientError as exc:  # a cursor from elsewhere
            raise MCPError(INVALID_PARAMS, str(exc)) from exc
        except Exception as exc:
            raise to_client("resources/list", exc, "jsonrpc") from exc
        resources = [
            Resource(
                uri=info.uri,
                name=f"{info.source_id}/{info.key}",
                title=info.title or info.key,
                description=f"{info.key} in collection {info.source_id}"
                + (f" ({info.page_count} pages)" if info.page_count else ""),
                mime_type="text/markdown",
            )
            for info in infos
        ]
        return ListResourcesResult(resources=resources, next_cursor=next_cursor)

    # MCPServer lists only static resources, without paging: the index's documents are listed instead.
    sdk.add_request_handler(mcp, "resources/list", PaginatedRequestParams, list_resources)


def citation_links(data: dict, pictures: list[tuple[str, str]] | None = None) -> list[ResourceLink]:
    """A `resource_link` for each distinct doc:// citation in a tool's structured result (its own
    `source_ref`, and those of the items of its lists), so a client opens a citation without a tool call;
    and one for each figure's picture (its caption's items, and `pictures`: (figure:// URI, caption))."""
    items = [data] + [item for value in data.values() if isinstance(value, list) for item in value]
    links: dict[str, ResourceLink] = {}
    for item in items:
        ref = item.get("source_ref") if isinstance(item, dict) else None
        if not isinstance(ref, str) or not ref.startswith("doc://") or ref in links:
            continue
        where = item.get("section") or (f"page {item['page']}" if item.get("page") else None)
        name = item.get("source") or item.get("key") or ref.removeprefix("doc://")
        title = " · ".join(filter(None, [item.get("title") or name, where]))
        links[ref] = ResourceLink(name=str(name), title=title, uri=ref, mime_type="text/markdown")
    captions = [
        (figures.figure_uri(str(item.get("collection")), str(item["id"])), item.get("text"))
        for item in items
        if isinstance(item, dict) and item.get("content_type") == figures.FIGURE and item.get("id")
    ]
    for uri, caption in [*captions, *(pictures or [])]:  # a figure's caption: its picture too
        title = (caption or "figure").split(". ")[0][:80]
        links[uri] = ResourceLink(name=uri.rsplit("/", 1)[-1], title=title, uri=uri, mime_type="image/png")
    return list(links.values())
