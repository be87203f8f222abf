"""Real files of the formats beyond Markdown/PDF/text, written by the tests: a DOCX (the OOXML parts
Word writes), a Jupyter notebook, an HTML page, source code."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

_CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml"
 ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml"
 ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
</Types>"""
_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1"
 Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
<Relationship Id="rId2"
 Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
 Target="docProps/core.xml"/>
</Relationships>"""
_DOC_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles"
 Target="styles.xml"/>
</Relationships>"""
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="{_W}">
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>
</w:styles>"""


def _paragraph(text: str, style: str = "") -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"


def _table(rows: list[list[str]]) -> str:
    cells = "".join("<w:tr>" + "".join(f"<w:tc>{_paragraph(c)}</w:tc>" for c in row) + "</w:tr>" for row in rows)
    return f"<w:tbl>{cells}</w:tbl>"


def write_docx(path: Path, title: str, parts: list[tuple[str, str]], table: list[list[str]]) -> Path:
    """A DOCX with document properties, styled headings ('h1'/'h2' parts), paragraphs and one table."""
    body = "".join(_paragraph(text, {"h1": "Heading1", "h2": "Heading2"}.get(kind, "")) for kind, text in parts)
    document = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}">'
        f"<w:body>{body}{_table(table)}</w:body></w:document>"
    )
    core = (
        '<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties '
        'xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></cp:coreProperties>'
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/_rels/document.xml.rels", _DOC_RELS)
        archive.writestr("word/document.xml", document)
        archive.writestr("word/styles.xml", _STYLES)
        archive.writestr("docProps/core.xml", core)
    return path


def write_notebook(path: Path, cells: list[tuple[str, str]], language: str = "python") -> Path:
    """An nbformat 4 notebook: ('markdown' | 'code', source) cells, code cells with an output."""
    out = []
    for kind, source in cells:
        cell: dict = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell |= {"execution_count": 1, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]}
        out.append(cell)
    meta = {"kernelspec": {"name": "python3", "language": language}, "language_info": {"name": language}}
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": out}))
    return path


def page_html(title: str, body: str, canonical: str | None = None, links: tuple[str, ...] = ()) -> str:
    """A documentation page as generators write it: navigation, a <main>, a footer."""
    nav = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return (
        f"<!doctype html><html><head><title>{title}</title>{link}<script>var x = 1;</script></head>"
        f"<body><nav>{nav}</nav><main>{body}</main><footer>Copyright Example Corp</footer></body></html>"
    )
