"""Plain text: one partition, paragraphs split on blank lines."""

from __future__ import annotations

import re

from thoth.writes.parsers import Block, ParsedDocument, ParseError, RawFile, Section


def paragraphs(text: str) -> list[Block]:
    return [Block(p.strip()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def read(file: RawFile) -> ParsedDocument:
    blocks = paragraphs(file.text())
    if not blocks:
        raise ParseError("no text")
    return ParsedDocument(title=file.title, sections=[Section("section", blocks)])
