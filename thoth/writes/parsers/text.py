"""Plain text: one partition, paragraphs split on blank lines."""

from __future__ import annotations

import re

from thoth.writes.parsers import Block, ParsedDocument, ParseError, Section


def paragraphs(text: str) -> list[Block]:
    return [Block(p.strip()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def parse(text: str, fallback_title: str) -> ParsedDocument:
    blocks = paragraphs(text)
    if not blocks:
        raise ParseError("no text")
    return ParsedDocument(title=fallback_title, sections=[Section("section", blocks)])
