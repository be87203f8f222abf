"""Scanned pages (no text layer) read by OCR (thoth/writes/parsers/pdf/ocr.py): a generated PDF whose
page is only a picture of text, parsed, ingested and found by search."""

from __future__ import annotations

import gc
import io
from pathlib import Path

import lancedb
import pytest
from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from examples.pdfgen import write_image_only_pdf
from tests.conftest import make_settings
from thoth.app import Thoth
from thoth.embedders import get_embedder
from thoth.mcp.toolsets.research import fetch_chunk_partition
from thoth.records import Partition
from thoth.retrieval import research
from thoth.store import Store
from thoth.store.schema import META_INDEX_FORMAT
from thoth.writes.parsers import ParseError, parse
from thoth.writes.parsers import pdf as pdf_parser
from thoth.writes.parsers.pdf.ocr import reading_order
from thoth.writes.writer import Writer

LINES = [
    "The quokka lives on Rottnest Island near Perth.",
    "Photosynthesis converts sunlight into chemical energy.",
]


def _scanned_pdf(path: Path, text_page: bool = False) -> Path:
    """A page that is only an image of text (as a scanner makes it); optionally a text page before it."""
    image = Image.new("RGB", (1200, 300), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)  # Pillow's own font: no system fonts needed
    for i, line in enumerate(LINES):
        draw.text((40, 60 + 80 * i), line, fill="black", font=font)
    return _pdf_of(image, path, text_page)


def _pdf_of(image: Image.Image, path: Path, text_page: bool = False) -> Path:
    """A PDF whose page is only `image`, set across the page's width; optionally a text page before it."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(612, 792))
    if text_page:
        c.setFont("Helvetica", 11)
        c.drawString(72, 700, "A typed cover page about island wildlife and plants.")
        c.showPage()
    c.drawImage(ImageReader(image), 36, 500, width=540, height=135)
    c.showPage()
    c.save()
    path.write_bytes(buf.getvalue())
    return path


def test_a_scanned_page_is_read_by_ocr_and_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _scanned_pdf(tmp_path / "scan.pdf", text_page=True).read_bytes()
    collecting: list[bool] = []  # the cyclic collector runs during OCR (slow), paused around the text layer
    real = pdf_parser.read_page
    monkeypatch.setattr(pdf_parser, "read_page", lambda page: collecting.append(gc.isenabled()) or real(page))
    doc = parse("scan.pdf", data, pdf_ocr=True)
    assert collecting == [True] and gc.isenabled()
    typed, scanned = doc.sections
    assert (typed.page_start, typed.blocks[0].kind) == (1, "text")
    assert (scanned.page_start, scanned.page_end, scanned.blocks[0].kind) == (2, 2, "ocr")
    assert "Rottnest Island" in scanned.text and "chemical energy" in scanned.text
    # the confidence is a field of its own: the page's heading path is the section it follows, as for text
    assert scanned.ocr_confidence is not None and 0.8 <= scanned.ocr_confidence <= 1.0
    assert typed.ocr_confidence is None and scanned.heading_path == typed.heading_path
    # Without the setting, the typed page is kept and the scanned one yields nothing.
    assert [s.page_start for s in parse("scan.pdf", data).sections] == [1]


def test_pages_with_nothing_legible_still_fail_with_their_reason(tmp_path: Path) -> None:
    data = write_image_only_pdf(tmp_path / "shapes.pdf").read_bytes()
    for ocr, reason in ((False, "set THOTH_PDF_OCR=true"), (True, "OCR found no legible text")):
        try:
            parse("shapes.pdf", data, pdf_ocr=ocr)
        except ParseError as exc:
            assert reason in str(exc)
        else:
            raise AssertionError("an image-only PDF without text parsed")


def test_ocr_text_is_ingested_and_found_by_search(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    _scanned_pdf(folder / "scan.pdf", text_page=True)
    settings = make_settings(tmp_path / "db", pdf_ocr=True)
    summary = Writer(settings).run(str(folder), name="scans")
    assert not summary.failed, summary.render()
    store, embedder = Store(settings), get_embedder(settings)
    hit = research.search(store, embedder, "quokka Rottnest Island", top_k=1).hits[0].hit
    assert "quokka" in hit.chunk.text and hit.chunk.content_type == "ocr"
    assert (hit.chunk.page_start, hit.chunk.page_end) == (2, 2)
    # the chunk's partition carries the recogniser's confidence; the typed page's has none
    confidence = {p.page_start: p.ocr_confidence for p in store.find(Partition, {"source_id": "scans"})}
    assert confidence[1] is None and 0.8 <= (confidence[2] or 0) <= 1.0
    # and the research surface's fetch_chunk_partition shows it
    shown = fetch_chunk_partition(Thoth(settings, store), hit.chunk_id, "scans").partition
    assert shown.ocr_confidence == confidence[2] and shown.pages == [2]

    # an index written before the column existed still reads (None), and the next ingest adds it
    lancedb.connect(settings.db_uri).open_table("partitions").drop_columns(["ocr_confidence"])
    Store(settings).delete_settings([META_INDEX_FORMAT])  # written before formats were recorded
    assert {p.ocr_confidence for p in store.find(Partition, {"source_id": "scans"})} == {None}
    _scanned_pdf(folder / "again.pdf")
    assert not Writer(settings).run(str(folder), name="scans").failed
    found = {p.ocr_confidence for p in Store(settings).find(Partition, {"source_id": "scans"})}
    assert None in found and any(c is not None and c >= 0.8 for c in found)


LEFT = ["Glaciers carve deep valleys", "over many thousands of", "years of slow movement."]
RIGHT = ["Honeybees dance to tell", "their sisters where the", "best flowers are found."]


def _two_column_scan(path: Path) -> Path:
    """A scanned page set in two columns under a title that spans both."""
    image = Image.new("RGB", (1600, 400), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)
    draw.text((560, 20), "Notes From The Field Station", fill="black", font=font)
    for i, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        draw.text((40, 100 + 70 * i), left, fill="black", font=font)
        draw.text((840, 100 + 70 * i), right, fill="black", font=font)
    return _pdf_of(image, path)


def test_a_two_column_scan_is_read_column_by_column(tmp_path: Path) -> None:
    data = _two_column_scan(tmp_path / "columns.pdf").read_bytes()
    text = " ".join(parse("columns.pdf", data, pdf_ocr=True).sections[0].text.split())
    # the recogniser lists lines top to bottom across the page; a reader reads the left column first
    assert text.index("Field Station") < text.index("Glaciers")
    assert text.index("Glaciers") < text.index("slow movement") < text.index("Honeybees") < text.index("flowers")


def test_reading_order_keeps_one_column_and_bands_under_a_spanning_line() -> None:
    # two columns of two lines, a line across both, then one more line in each column (pixels, y down)
    boxes = [(90, 100, 500, 130), (700, 100, 1100, 130), (90, 150, 480, 180), (700, 150, 1090, 180)]
    boxes += [(90, 200, 1100, 230), (90, 250, 500, 280), (700, 250, 1100, 280)]
    assert reading_order(boxes, 1224) == [0, 2, 1, 3, 4, 5, 6]
    # one column (lines across the middle, a short last line): the recogniser's order stays
    assert reading_order([(90, 10, 1100, 40), (90, 50, 1100, 80), (90, 90, 400, 120)], 1224) == [0, 1, 2]
