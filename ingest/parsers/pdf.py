"""PDF text per page with pypdfium2 (PDFium: fast, keeps reading order; Apache-2.0/BSD).

Measured on this machine (DESIGN.md): pypdfium2 about 1,100 pages/s, pypdf about
290, pdfplumber about 11; PyMuPDF is as fast but AGPL.
"""

from __future__ import annotations

import re

import pypdfium2 as pdfium

from ingest.parsers import Block, ParsedDocument, ParseError, Partition
from ingest.parsers.text import paragraphs


def _year(date: str) -> int | None:
    match = re.match(r"^D?:?(\d{4})", date or "")
    return int(match.group(1)) if match else None


_PLACEHOLDER_TITLE = re.compile(r"^(untitled|title|document\d*|microsoft word - .*|.*\.(dvi|docx?|tex|pdf|ps))$", re.I)
_PLACEHOLDER_AUTHOR = re.compile(r"^(anonymous|unknown|author|user|admin)$", re.I)


def _real_title(title: str) -> str:
    """The metadata title, or '' when it is a tool's placeholder ('untitled', 'paper.dvi')."""
    title = title.strip()
    return "" if _PLACEHOLDER_TITLE.match(title) else title


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # words hyphenated across lines
    return text.strip()


def _page_blocks(text: str) -> list[Block]:
    blocks = paragraphs(text)
    # PDFium gives one line per text line; join lines within a paragraph so sentences read whole.
    return [Block(re.sub(r"\s*\n\s*", " ", b.text)) for b in blocks]


def parse(data: bytes, fallback_title: str, password: str | None = None) -> ParsedDocument:
    if not data:
        raise ParseError("empty file")
    try:
        pdf = pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            if password:
                raise ParseError("encrypted PDF: the configured password does not open it") from None
            raise ParseError("encrypted PDF: a password is required (set THOTH_PDF_PASSWORD)") from None
        raise ParseError(f"corrupt or unreadable PDF: {message}") from None
    try:
        meta = pdf.get_metadata_dict(skip_empty=True)
        partitions = []
        first_page = ""
        for number in range(1, len(pdf) + 1):
            page = pdf[number - 1]
            textpage = page.get_textpage()
            try:
                # text outside the page box (e.g. ImageMagick's labels) is still the page's text layer
                text = _clean(textpage.get_text_bounded() or textpage.get_text_range())
            finally:
                textpage.close()
                page.close()
            if number == 1:
                first_page = text
            if text:
                partitions.append(Partition("page", _page_blocks(text), page_start=number, page_end=number))
        page_count = len(pdf)
    except pdfium.PdfiumError as exc:
        raise ParseError(f"corrupt PDF: {exc}") from None
    finally:
        pdf.close()
    if page_count == 0:
        raise ParseError("PDF has no pages")
    if not partitions:
        raise ParseError(f"no text layer (image-only PDF, {page_count} pages): it would need OCR")
    authors = [a.strip() for a in re.split(r"[;,]| and ", meta.get("Author", "")) if a.strip()]
    authors = [a for a in authors if not _PLACEHOLDER_AUTHOR.match(a)]
    title = _real_title(meta.get("Title") or "")
    return ParsedDocument(
        title=title or fallback_title,
        partitions=partitions,
        authors=authors,
        year=_year(meta.get("CreationDate", "")),
        page_count=page_count,
        first_page=first_page,
        title_from_metadata=bool(title),
    )
