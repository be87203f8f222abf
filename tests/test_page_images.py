"""The cited passage on its page (thoth/retrieval/page_images.py): where each chunk's text is printed is kept at
ingest, and resolve_citation(id=…, page_image=true) answers the page as a PNG with those lines highlighted."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from examples.pdfgen import write_tables_pdf
from tests.conftest import LiveServer, call, error_text, make_settings, ok
from thoth.records import Chunk
from thoth.store import Store
from thoth.writes.writer import Writer


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    root = tmp_path_factory.mktemp("pages")
    folder = root / "papers"
    folder.mkdir()
    write_tables_pdf(folder / "tables.pdf")
    (folder / "notes.md").write_text("# Notes\n\nA Markdown page has no printed page to show.\n")
    settings = make_settings(root / "db")
    Writer(settings).run(str(folder), name="papers")
    with LiveServer(settings) as server:
        yield server, root / "db"


def test_each_pdf_chunk_keeps_where_its_text_is_printed(live: tuple[LiveServer, Path]) -> None:
    _, db = live
    store = Store(make_settings(db))
    chunks = store.find(Chunk, {"key": "tables.pdf"}, fields=["chunk_id", "content_type", "page_start", "boxes"])
    assert chunks and all(c.boxes and len(c.boxes) % 5 == 0 for c in chunks)
    table = next(c for c in chunks if c.content_type == "table")
    pages = {int(p) for p in table.boxes[::5]}
    assert pages == {1} and all(0 < v < 850 for v in table.boxes)
    # searches never read them: a hit's chunk comes without (they are read when asked for)
    assert store.find(Chunk, {"key": "tables.pdf"})[0].boxes is None


def test_resolve_citation_shows_the_passage_highlighted_on_its_page(live: tuple[LiveServer, Path]) -> None:
    server, _ = live
    hit = ok(server, "search", {"query": "PReLU-net 24.27 error rates", "content_type": "table"})["hits"][0]
    result = call(server, "resolve_citation", {"id": hit["id"], "page_image": True})
    assert not result["isError"], result["content"]
    info = result["structuredContent"]
    assert info["source_ref"] == hit["source_ref"] and info["page_image"]["page"] == 1
    [image] = [c for c in result["content"] if c["type"] == "image"]
    page = Image.open(io.BytesIO(base64.b64decode(image["data"]))).convert("RGB")
    assert page.format is None and page.size == (info["page_image"]["width"], info["page_image"]["height"])
    scale = page.size[0] / 595.27  # A4 in points
    left, bottom, right, top = info["page_image"]["boxes"][0]
    inside = page.getpixel((int((left + 2) * scale), int((841.89 - (top + bottom) / 2) * scale)))
    assert inside[2] < 200 and inside[0] > 200  # yellow over white paper: blue drops, red stays
    outside = page.getpixel((5, 5))
    assert outside == (255, 255, 255)
    plain = call(server, "resolve_citation", {"id": hit["id"]})
    assert not [c for c in plain["content"] if c["type"] == "image"]  # only when asked for
    bare = call(server, "resolve_citation", {"source_ref": hit["source_ref"], "page_image": True})  # the page alone
    assert bare["structuredContent"]["page_image"]["boxes"] == [] and bare["content"][-1]["type"] == "image"
    assert "has no printed pages" in error_text(server, "resolve_citation", {"bucket": "papers", "key": "notes.md",
                                                                             "page_image": True})  # fmt: skip
    markdown = ok(server, "search", {"query": "Markdown page printed page"})["hits"][0]
    assert markdown["key"] == "notes.md"
    assert "no place on a page" in error_text(server, "resolve_citation", {"id": markdown["id"], "page_image": True})


def test_the_passage_resource_reads_the_highlighted_page(live: tuple[LiveServer, Path]) -> None:
    server, _ = live
    hit = ok(server, "search", {"query": "PReLU-net 24.27 error rates", "content_type": "table"})["hits"][0]
    read = server.rpc("resources/read", {"uri": f"passage://{hit['collection']}/{hit['id']}"}).json()["result"]
    content = read["contents"][0]
    assert content["mimeType"] == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(content["blob"]))).format == "PNG"
