"""A cited passage on its page: the PDF page rendered as a PNG with the passage's lines highlighted.

Where a chunk's text is printed was kept at ingest (`Chunk.boxes`: page and rectangle per run of lines),
so only the page is rendered here (PDFium, `SCALE`), from the document's bytes where the index found them
(a local file, or the gs:// object of the cited generation).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from thoth.config import Settings
from thoth.errors import ClientError, NotFound
from thoth.records import Chunk, Document, field_names
from thoth.retrieval.documents import get_chunk
from thoth.store import Store

SCALE = 1.5  # 108 dpi: a page's text legible, a letter page about 920 x 1190 pixels
_FILL = (255, 220, 0, 90)  # the highlight: translucent yellow, outlined
_LINE = (230, 140, 0, 255)


@dataclass(frozen=True)
class PageImage:
    """A page as a PNG, the passage whose lines are highlighted on it, and those rectangles (points)."""

    chunk: Chunk
    page: int
    png: bytes
    width: int
    height: int
    boxes: tuple[tuple[float, float, float, float], ...]


def passage_boxes(chunk: Chunk) -> list[tuple[int, tuple[float, float, float, float]]]:
    flat = list(chunk.boxes or ())
    return [(int(flat[i]), tuple(flat[i + 1 : i + 5])) for i in range(0, len(flat) - 4, 5)]  # type: ignore[misc]


def _chunk_document(store: Store, chunk: Chunk) -> Document:
    document = store.first(Document, {"source_id": chunk.source_id, "doc_id": chunk.doc_id, "status": "ok"})
    if document is None:
        raise NotFound(f"the document of chunk {chunk.chunk_id!r} is no longer in the index")
    return document


def _document_bytes(settings: Settings, document: Document) -> bytes:
    if not document.page_count or not document.key.lower().endswith(".pdf"):
        raise ClientError(f"{document.key} has no printed pages to show: a page picture is for PDFs")
    if document.bucket:
        from thoth.gcs import storage_client

        blob = storage_client(settings).bucket(document.bucket).blob(document.key, generation=document.version)
        return blob.download_as_bytes()
    uri = document.uri or ""
    path = Path(unquote(urlsplit(uri).path)) if uri.startswith("file://") else None
    if path is None or not path.is_file():
        raise NotFound(f"{document.key} has no file this server can read ({uri or 'no location'}): ingest it again")
    return path.read_bytes()


def has_place(store: Store, chunk_id: str) -> bool:
    """Whether the index kept where chunk `chunk_id`'s text is printed (a PDF passage ingested with boxes)."""
    found = store.first(Chunk, {"chunk_id": chunk_id.strip()}, fields=["boxes"])
    return bool(found and found.boxes)


def highlighted_page(store: Store, settings: Settings, chunk_id: str, source_id: str | None = None) -> PageImage:
    """The page of chunk `chunk_id` (its first) as a PNG, with the lines of its text highlighted there."""
    get_chunk(store, chunk_id, source_id)  # NotFound / a wrong collection, in its words
    chunk = store.first(Chunk, {"chunk_id": chunk_id.strip()}, fields=list(field_names(Chunk)))
    assert chunk is not None
    boxes = passage_boxes(chunk)
    if not boxes:
        raise ClientError(
            f"chunk {chunk_id!r} has no place on a page kept (not a PDF passage, or ingested before places were "
            "kept: ingest it again)"
        )
    page_number = boxes[0][0]
    return _render(_document_bytes(settings, _chunk_document(store, chunk)), page_number, chunk, boxes)


def cited_page(settings: Settings, document: Document, page: int) -> PageImage:
    """A cited page of `document` as a PNG, nothing highlighted (a citation without a passage)."""
    if document.page_count and not 1 <= page <= document.page_count:
        raise NotFound(f"{document.key} has no page {page}: it has pages 1 to {document.page_count}")
    return _render(_document_bytes(settings, document), page, Chunk(chunk_id="", key=document.key), [])


def _render(data: bytes, page_number: int, chunk: Chunk, boxes: list) -> PageImage:
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    pdf = pdfium.PdfDocument(data)
    try:
        page = pdf[page_number - 1]
        height = page.get_height()
        image = page.render(scale=SCALE).to_pil().convert("RGBA")
    finally:
        pdf.close()
    layer = ImageDraw.Draw(overlay := image.copy())
    on_page = tuple(box for number, box in boxes if number == page_number)
    for left, bottom, right, top in on_page:
        xy = [(left - 1) * SCALE, (height - top - 1) * SCALE, (right + 1) * SCALE, (height - bottom + 1) * SCALE]
        layer.rectangle(xy, fill=_FILL, outline=_LINE, width=2)
    out = io.BytesIO()
    Image.alpha_composite(image, overlay).convert("RGB").save(out, format="PNG", compress_level=6)
    return PageImage(chunk, page_number, out.getvalue(), image.width, image.height, on_page)
