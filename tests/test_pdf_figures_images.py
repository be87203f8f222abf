"""A PDF's figures as pictures (thoth/writes/parsers/pdf/figures.py, thoth.store.figures, get_figure): a generated
paper with a captioned plot, ingested, and its figure shown over HTTP as MCP image content."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from examples.pdfgen import PANEL_TITLES, write_paper_pdf
from tests.conftest import GcsEmulator, LiveServer, call, error_text, job_env, make_settings, ok
from thoth.config import Settings
from thoth.gcs import storage_client
from thoth.records import Chunk
from thoth.store import Store
from thoth.writes.parsers import parse
from thoth.writes.writer import Writer

BODY = "Dense retrieval finds passages by meaning, and a reader model answers from what it finds. " * 3
CAPTION = "Figure 2: Exact match of the retriever as the index grows."


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    root = tmp_path_factory.mktemp("figures")
    folder = root / "papers"
    folder.mkdir()
    pages = [[("h1", "1 Introduction"), ("p", BODY), ("figure", CAPTION), ("p", BODY)]]
    write_paper_pdf(folder / "paper.pdf", "Retrieval For Readers", [("Ann Lee", "")], pages)
    settings = make_settings(root / "db")
    Writer(settings).run(str(folder), name="papers")
    with LiveServer(settings) as server:
        yield server, root / "db"


def test_a_figure_caption_is_a_chunk_naming_its_picture_beside_the_index(live: tuple[LiveServer, Path]) -> None:
    _, db = live
    settings = make_settings(db)
    figures = Store(settings).find(Chunk, {"content_type": "figure"})
    assert len(figures) == 1 and figures[0].text.startswith(CAPTION)
    figure = figures[0]
    assert figure.page_start == 1 and figure.figure and len(figure.figure_box or ()) == 4
    left, bottom, right, top = figure.figure_box
    assert right - left > 150 and top - bottom > 100  # the plot's frame (200 x 120 points) and its labels
    assert (db / "figures" / figure.figure).is_file()  # named by content hash, beside the tables


def test_panels_titles_set_apart_over_two_drawings_are_the_figure_s(tmp_path: Path) -> None:
    """Two drawings side by side, titled on one line whose centre falls between them: the titles are the
    figure's (inside its picture, with its caption), not running text."""
    caption = "Figure 3: (left) One head. (right) Several heads in parallel."
    pages = [[("h1", "1 Introduction"), ("p", BODY), ("panels", caption), ("p", BODY)]]
    pdf = write_paper_pdf(tmp_path / "panels.pdf", "Retrieval For Readers", [("Ann Lee", "")], pages)
    doc = parse("panels.pdf", pdf.read_bytes(), pdf_figures=True)
    [picture] = doc.figures.values()
    [figure] = [b for s in doc.sections for b in s.blocks if b.kind == "figure"]
    running = " ".join(b.text for s in doc.sections for b in s.blocks if b.kind == "text")
    assert all(title in figure.text and title not in running for title in PANEL_TITLES)
    left, bottom, right, top = picture.box
    assert right - left > 320 and top - bottom > 110  # both frames (150 x 100 points each) and the titles over them


def test_get_figure_returns_the_picture_as_image_content(live: tuple[LiveServer, Path]) -> None:
    server, _ = live
    hits = ok(server, "search", {"query": "exact match as the index grows", "content_type": "figure"})["hits"]
    assert hits and hits[0]["content_type"] == "figure"
    for arguments in ({"id": hits[0]["id"]}, {"key": "paper.pdf", "figure": 2}, {"source_ref": hits[0]["source_ref"]}):
        result = call(server, "get_figure", arguments)
        assert not result["isError"], result["content"]
        image, text = result["content"][0], result["content"][1]
        assert image["type"] == "image" and image["mimeType"] == "image/png"
        picture = Image.open(io.BytesIO(base64.b64decode(image["data"])))
        info = result["structuredContent"]
        assert picture.format == "PNG" and picture.size == (info["width"], info["height"])
        assert info["label"] == "Figure 2" and info["page"] == 1 and text["text"].startswith("Figure 2")
    assert "no Figure 9" in error_text(server, "get_figure", {"key": "paper.pdf", "figure": 9})
    text_hit = ok(server, "search", {"query": "dense retrieval reader model", "content_type": "text"})["hits"][0]
    assert "not a figure" in error_text(server, "get_figure", {"id": text_hit["id"]})


def test_a_figure_hit_links_its_picture_and_the_resource_reads_it(live: tuple[LiveServer, Path]) -> None:
    server, _ = live
    result = call(server, "search", {"query": "exact match as the index grows", "content_type": "figure"})
    links = [c for c in result["content"] if c["type"] == "resource_link" and c["uri"].startswith("figure://")]
    assert links and links[0]["mimeType"] == "image/png"
    read = server.rpc("resources/read", {"uri": links[0]["uri"]}).json()["result"]["contents"][0]
    assert read["mimeType"] == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(read["blob"]))).format == "PNG"
    qurio = call(server, "qurio_search", {"query": "exact match as the index grows", "filters": {"type": "figure"}})
    found = [r for r in qurio["structuredContent"]["results"] if r["type"] == "figure"]
    pictures = [c["uri"] for c in qurio["content"] if c["type"] == "resource_link" and c["uri"].startswith("figure:")]
    assert found and len(pictures) == len(found) and links[0]["uri"] in pictures


def test_pictures_lie_in_the_bucket_beside_a_gs_index(
    gcs_emulator: GcsEmulator, onnx_cache: Path, tmp_path: Path
) -> None:
    """With the tables in gs://, a figure's picture is written into the same bucket (figures/ under the
    tables' prefix) and read back through the store."""
    settings = Settings.from_env(job_env(STORAGE_EMULATOR_HOST=gcs_emulator.host, THOTH_DB_URI="gs://figs/lancedb"))
    bucket = storage_client(settings).create_bucket("figs")
    folder = tmp_path / "papers"
    folder.mkdir()
    pages = [[("h1", "1 Introduction"), ("p", BODY), ("figure", CAPTION), ("p", BODY)]]
    write_paper_pdf(folder / "paper.pdf", "Retrieval For Readers", [("Ann Lee", "")], pages)
    Writer(settings).run(str(folder), name="papers")
    store = Store(settings)
    [figure] = store.find(Chunk, {"content_type": "figure"})
    blob = bucket.get_blob(f"lancedb/figures/{figure.figure}")
    assert blob is not None and blob.content_type == "image/png"
    assert store.figures.get(figure.figure) == blob.download_as_bytes()
    assert Image.open(io.BytesIO(store.figures.get(figure.figure))).format == "PNG"
