"""DOCX: mammoth turns the document's styles into HTML (headings, lists, tables, links), and the HTML
converter (html.py) turns that into the same Markdown sections a web page gets."""

from __future__ import annotations

import io
import zipfile

from thoth.writes.parsers import ParsedDocument, ParseError, RawFile, html


def read(file: RawFile) -> ParsedDocument:
    import mammoth

    data = file.data
    try:
        result = mammoth.convert_to_html(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError(f"not a readable DOCX file ({type(exc).__name__})") from None
    page = f"<html><body><main>{result.value}</main></body></html>"
    if not result.value.strip():
        raise ParseError("no text (the DOCX document is empty)")
    parsed = html.parse(page.encode(), file.title)
    title = _core_title(data)
    if title:
        parsed.title = title
    return parsed


def _core_title(data: bytes) -> str:
    """The title from the document's properties (docProps/core.xml), '' when it has none."""
    from lxml import etree

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            core = etree.fromstring(archive.read("docProps/core.xml"))
    except (KeyError, zipfile.BadZipFile, etree.XMLSyntaxError):
        return ""
    found = core.xpath("//*[local-name()='title']/text()")
    return " ".join(found[0].split()) if found else ""
