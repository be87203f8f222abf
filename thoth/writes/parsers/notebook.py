"""Jupyter notebooks (.ipynb, nbformat 4): Markdown cells as Markdown, code cells as fenced code in the
kernel's language; outputs are left out (they are results, often large, rarely what a reader searches)."""

from __future__ import annotations

import json

from thoth.writes.parsers import ParsedDocument, ParseError, RawFile, markdown


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def to_markdown(data: bytes) -> str:
    try:
        notebook = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParseError(f"not a Jupyter notebook (invalid JSON: {exc})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ParseError("not a Jupyter notebook (no cells; only nbformat 4 is read)")
    meta = notebook.get("metadata") or {}
    language = str(
        (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language") or ""
    )
    parts = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict):
            continue
        text = _source(cell).strip()
        if not text:
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(text)
        elif cell.get("cell_type") == "code":
            parts.append(f"```{language.lower()}\n{text}\n```")
    return "\n\n".join(parts)


def read(file: RawFile) -> ParsedDocument:
    text = to_markdown(file.data)
    if not text:
        raise ParseError("no text (the notebook has no cells with content)")
    return markdown.parse(text, fallback_title=file.title)
