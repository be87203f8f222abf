"""The console's pages (docs/console.md): each reads through `thoth.retrieval`, the same functions the tools
call; plain GETs with their state in the query string; a bad argument is a 400 page that names it."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.errors import ClientError, NotFound, check_choice
from thoth.mcp.outputs.research import Citation as CitationInfo
from thoth.mcp.outputs.research import CollectionInfo, DocumentChunks
from thoth.mcp.outputs.workshop import ContextBundle
from thoth.records import Hit, IngestRun, Source
from thoth.retrieval import citations, collections, documents, origins, page_images, sources, tree, workshops
from thoth.retrieval.search import explained_search, ranking_for
from thoth.retrieval.sources import source_ids
from thoth.retrieval.workshops import StepChanges
from thoth.store import ModelMismatch, StoreError
from thoth.ui.dates import when
from thoth.ui.failures import advice
from thoth.ui.markdown import markdown
from thoth.ui.ranking import explain

DOCUMENTS_PER_PAGE = 50
CHUNKS_PER_PAGE = 20
NODES_PER_PAGE = 25
SEARCH_LIMITS = (10, 20, 50)
SEARCH_MODES = {"hybrid": None, "keyword": 0.0, "vector": 1.0}  # mode -> alpha (None: the ranking's own weights)
LEARNING_CHARS = 6000
RUNS_SHOWN = 20  # a collection's ingest runs on its page, newest first (the history keeps more)


@functools.cache
def _templates() -> Any:
    """The Jinja2 environment, made on the first page (jinja2 is not imported at server start)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a typo in a template fails its test, not silently blank
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["advice"] = advice
    env.filters["when"] = when
    env.filters["markdown"] = markdown
    env.filters["page_range"] = documents.pages
    return env


class BadArgument(ClientError):
    """A query-string argument that cannot be used; the message names it and what is allowed."""


def _int(request: Request, name: str, default: int | None, low: int, high: int = 10**9) -> int | None:
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadArgument(f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise BadArgument(f"{name} must be between {low} and {high}, got {value}")
    return value


def _page_count(total: int, per_page: int, number: int) -> int:
    """How many pages `total` rows make (at least one); a page `number` past the last is a bad argument."""
    pages = max(1, -(-total // per_page))
    if number > pages:
        raise BadArgument(f"page must be between 1 and {pages}, got {number}")
    return pages


def _choice(request: Request, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = request.query_params.get(name, "").strip() or default
    check_choice(name, value, allowed, BadArgument)
    return value


class Console:
    """The pages over one Thoth app."""

    def __init__(self, app: Thoth):
        self.app = app

    @property
    def store(self) -> Any:
        return self.app.store

    # -- rendering -------------------------------------------------------------------------------

    def _render(self, request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
        def link(path: str, **params: object) -> str:
            """A console URL: the mount point, a path, and the non-empty parameters."""
            query = urlencode({k: v for k, v in params.items() if v not in (None, "", False)})
            return request.scope.get("root_path", "") + path + (f"?{query}" if query else "")

        html = _templates().get_template(template).render(request=request, link=link, q=quote, **context)
        return HTMLResponse(html, status_code=status)

    @staticmethod
    def page(fn: Callable[[Console, Request], Response]) -> Callable[[Console, Request], Response]:
        """Time the page (Server-Timing header) and turn a client's mistake into a page, never a 500."""

        @functools.wraps(fn)
        def wrapper(self: Console, request: Request) -> Response:
            started = time.perf_counter()
            try:
                response = fn(self, request)
            except BadArgument as exc:
                response = self._render(request, "error.html", 400, title="Bad request", message=str(exc))
            except (NotFound, workshops.ScopeError) as exc:
                response = self._render(request, "error.html", 404, title="Not found", message=str(exc))
            except (ModelMismatch, EmbedderUnavailable) as exc:
                response = self._render(request, "error.html", 503, title="Search unavailable", message=str(exc))
            except StoreError as exc:  # no index yet, a lost data file: the server's state, not the link
                response = self._render(request, "error.html", 503, title="Index unavailable", message=str(exc))
            except ClientError as exc:
                response = self._render(request, "error.html", 400, title="Cannot show this", message=str(exc))
            elapsed = (time.perf_counter() - started) * 1000
            response.headers["server-timing"] = f"render;dur={elapsed:.1f}"
            return response

        return wrapper

    # -- pages ------------------------------------------------------------------------------------

    @page
    def index(self, request: Request) -> Response:
        listed = sources.listing(self.store)  # before the first ingest: IndexMissing, a 503 that says so
        known = origins.origins(self.store, [s.source for s in listed])
        rows = [CollectionInfo.from_record(s, known[s.source_id]) for s in listed]
        trees = {s.source_id: s for s in listed}
        last_runs: dict[str, IngestRun] = {}
        for run in self.store.recent_runs():  # newest first: the first of each source is its last run
            last_runs.setdefault(run.source_id, run)
        return self._render(
            request,
            "collections.html",
            title="Collections",
            rows=rows,
            trees=trees,
            last_runs=last_runs,
            # per table, as /health has it (docs/operations.md, "Health"); counts of every collection: only
            # for a caller who reads them all
            health=self.app.table_health() if self.app.shows_index_details else {},
        )

    @page
    def collection(self, request: Request) -> Response:
        name = collections.find_collection(self.store, request.path_params["name"])
        status = _choice(request, "status", ("all", *documents.DOCUMENT_STATUSES), "all")
        sort = _choice(request, "sort", documents.DOCUMENT_SORTS, "name")
        order = _choice(request, "order", ("asc", "desc"), "asc")
        number = _int(request, "page", 1, 1)
        found = documents.list_documents(
            self.store,
            name,
            status=None if status == "all" else status,
            sort=sort,
            descending=order == "desc",
            limit=DOCUMENTS_PER_PAGE,
            offset=(number - 1) * DOCUMENTS_PER_PAGE,
        )
        source = self.store.first(Source, {"source_id": name}) or Source(name)
        pages = _page_count(found.total, DOCUMENTS_PER_PAGE, number)
        state = {"status": None if status == "all" else status, "sort": sort, "order": order}
        return self._render(
            request,
            "collection.html",
            title=f"Collection {name}",
            name=name,
            source=source,
            listing=found,
            last_run=next(iter(self.store.recent_runs(name, limit=1)), None),
            state=state,
            number=number,
            pages=pages,
        )

    @page
    def runs(self, request: Request) -> Response:
        name = collections.find_collection(self.store, request.path_params["name"])
        source = self.store.first(Source, {"source_id": name}) or Source(name)
        found = self.store.recent_runs(name, limit=RUNS_SHOWN)
        return self._render(request, "runs.html", title=f"Ingest runs of {name}", name=name, source=source, runs=found)

    @page
    def document(self, request: Request) -> Response:
        document_id = request.path_params["document_id"]
        wanted = request.query_params.get("collection") or None
        collection = collections.find_collection(self.store, wanted) if wanted else None
        rows = documents.find_document(self.store, document_id, source_id=collection)
        first = rows[0]
        chunk_id = request.query_params.get("chunk") or None
        number = _int(request, "page", None, 1)
        if number is None and chunk_id:  # a citation followed here: open the page of chunks that holds it
            chunk = documents.get_chunk(self.store, chunk_id, first.source_id)
            number = chunk.chunk_index // CHUNKS_PER_PAGE + 1
        number = number or 1
        page = documents.document_chunks(self.store, rows, CHUNKS_PER_PAGE, (number - 1) * CHUNKS_PER_PAGE)
        listing = DocumentChunks.from_record(page)
        pages = _page_count(listing.total_chunks, CHUNKS_PER_PAGE, number)
        outline = documents.document_outline(self.store, first.source_id, first.doc_id)
        doc = listing.document
        return self._render(
            request,
            "document.html",
            title=doc.title or first.key,
            doc=doc,
            bibtex=first.bibtex,
            unmapped=first.unmapped_glyphs,
            hidden=first.hidden_dropped or (),
            outline=outline,
            listing=listing,
            chunk_id=chunk_id,
            on_page=bool(chunk_id) and page_images.has_place(self.store, chunk_id),
            number=number,
            pages=pages,
        )

    @page
    def page_image(self, request: Request) -> Response:
        """A document's page as a PNG with a passage highlighted (`?chunk=`): the cited passage where it is printed."""
        chunk_id = request.query_params.get("chunk", "").strip()
        if not chunk_id:
            raise BadArgument("chunk must be the id of the passage to show on its page")
        rows = documents.find_document(self.store, request.path_params["document_id"])
        shown = page_images.highlighted_page(self.store, self.app.settings, chunk_id, rows[0].source_id)
        if shown.chunk.doc_id != rows[0].doc_id:
            raise NotFound(f"chunk {chunk_id!r} is not a passage of this document")
        return Response(shown.png, media_type="image/png", headers={"cache-control": "private, max-age=300"})

    @page
    def cite(self, request: Request) -> Response:
        ref = request.query_params.get("ref", "").strip()
        if not ref:
            raise BadArgument("ref must be a citation (source_ref), e.g. doc://collection/key#page=2")
        citation = citations.resolve_citation(self.store, self.app.settings, source_ref=ref)
        resolved = CitationInfo.from_record(citation)
        url = resolved.url
        if url.startswith(("https://", "http://")):
            return RedirectResponse(url, status_code=303)
        # a local file: browsers will not follow a web page's link to file://, so it is shown to copy
        return self._render(request, "cite.html", title="Citation", resolved=resolved, ref=ref)

    @page
    def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        mode = _choice(request, "mode", tuple(SEARCH_MODES), "hybrid")
        limit = _int(request, "limit", SEARCH_LIMITS[0], 1, SEARCH_LIMITS[-1])
        wanted = request.query_params.get("collection") or None
        collection = collections.find_collection(self.store, wanted) if wanted else None
        hits: list[Hit] = []
        explanation: list[str] = []
        if query:
            alpha = SEARCH_MODES[mode]
            embedder = None if alpha == 0.0 else self.app.embedder()
            hits = explained_search(
                self.store, embedder, query, limit, alpha=alpha, match={"source_id": collection}
            ).hits
            explanation = explain(ranking_for(embedder, self.store), alpha, limit)  # the ranking explained_search used
        return self._render(
            request,
            "search.html",
            title=f"Search: {query}" if query else "Search",
            query=query,
            mode=mode,
            modes=tuple(SEARCH_MODES),
            limit=limit,
            limits=SEARCH_LIMITS,
            collection=collection,
            collections=source_ids(self.store),
            hits=hits,
            explanation=explanation,
        )

    @page
    def tree_levels(self, request: Request) -> Response:
        dataset = request.path_params["collection"]
        sizes = tree.level_sizes(self.store, dataset)
        level = _int(request, "level", len(sizes) - 1, 0, len(sizes) - 1)
        number = _int(request, "page", 1, 1)
        total, nodes = tree.level_nodes(self.store, dataset, level, NODES_PER_PAGE, (number - 1) * NODES_PER_PAGE)
        pages = _page_count(total, NODES_PER_PAGE, number)
        pointer = self.store.tree_pointer(dataset)
        return self._render(
            request,
            "tree.html",
            title=f"Tree of {dataset}",
            dataset=dataset,
            sizes=sizes,
            level=level,
            nodes=nodes,
            pointer=pointer,
            number=number,
            pages=pages,
            total=total,
        )

    @page
    def node(self, request: Request) -> Response:
        dataset, node_id = request.path_params["collection"], request.path_params["node_id"]
        tree.get_dataset(self.store, dataset)
        node = tree.get_node(self.store, node_id, source_id=dataset)
        kids = tree.children(self.store, node_id)[1] if node.children else []
        number = _int(request, "page", 1, 1)
        pages = _page_count(len(kids), NODES_PER_PAGE, number)
        path = tree.path_to_root(self.store, node_id)
        return self._render(
            request,
            "node.html",
            title=f"Node {node_id[:12]}",
            dataset=dataset,
            node=node,
            children=kids[(number - 1) * NODES_PER_PAGE : number * NODES_PER_PAGE],
            total_children=len(kids),
            path=list(reversed(path)),
            number=number,
            pages=pages,
        )

    @page
    def workshop(self, request: Request) -> Response:
        name = request.path_params["workshop"]
        workshops.require_workshop(self.store, name)
        source = self.store.first(Source, {"source_id": name}) or Source(name)
        cov = workshops.coverage(self.store, [name])[name]
        steps = workshops.step_changes(self.store, name)
        exercise = _int(request, "exercise", None, 0)
        step = _int(request, "step", None, 0)
        cursor = request.query_params.get("cursor") or None
        bundle = None
        if exercise is not None or cursor:
            bundle = ContextBundle.from_record(
                workshops.context_page(
                    self.store,
                    cursor_kind="retrieve_learning_context",
                    source_id=name if exercise is not None else None,  # with only a cursor: the cursor's scope
                    exercise=exercise,
                    step=step,
                    random_scope=False,
                    max_chars=LEARNING_CHARS,
                    cursor=cursor,
                )
            )
            if bundle.workshop != name:
                raise BadArgument(f"cursor continues workshop {bundle.workshop!r}, not {name!r}")
        exercises = [
            {
                "number": number,
                "title": info.title,
                "steps": [{"number": s, **vars(steps.get((number, s), StepChanges()))} for s in sorted(info.steps)],
            }
            for number, info in sorted(cov.exercises.items())
        ]
        return self._render(
            request,
            "workshop.html",
            title=f"Workshop {source.name or name}",
            name=name,
            source=source,
            coverage=cov,
            exercises=exercises,
            bundle=bundle,
            exercise=exercise,
            step=step,
        )
