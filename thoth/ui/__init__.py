"""The console: read-only, server-rendered web pages over the index at /ui (docs/console.md)."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles

from thoth.app import Thoth
from thoth.ui.views import Console

STATIC = Path(__file__).parent / "static"


def console_app(app: Thoth) -> Router:
    """The console's routes, to mount at /ui."""
    pages = Console(app)
    return Router(
        routes=[
            Route("/", pages.index, methods=["GET"], name="collections"),
            Route("/collections/{name:path}", pages.collection, methods=["GET"], name="collection"),
            Route("/runs/{name:path}", pages.runs, methods=["GET"], name="runs"),
            Route("/documents/{document_id}", pages.document, methods=["GET"], name="document"),
            Route("/documents/{document_id}/page.png", pages.page_image, methods=["GET"], name="page_image"),
            Route("/cite", pages.cite, methods=["GET"], name="cite"),
            Route("/search", pages.search, methods=["GET"], name="search"),
            Route("/trees/{collection}", pages.tree_levels, methods=["GET"], name="tree"),
            Route("/trees/{collection}/nodes/{node_id}", pages.node, methods=["GET"], name="node"),
            Route("/workshops/{workshop}", pages.workshop, methods=["GET"], name="workshop"),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ],
        redirect_slashes=True,
    )
