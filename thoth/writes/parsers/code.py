"""Source code files: the file as code blocks with its language, so `type='code'` and `language=`
filters find them. Blocks are cut at blank lines between top-level definitions, so a chunk holds
whole functions where they fit."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from thoth.formats import CODE_LANGUAGES
from thoth.writes.parsers import Block, ParsedDocument, ParseError, RawFile, Section

_TOP_LEVEL = re.compile(r"^\S")
_MAX_LINES = 60  # a block longer than this is cut at its next blank line


def language_of(key: str) -> str:
    return CODE_LANGUAGES.get(PurePosixPath(key).suffix.lower(), "")


def _blocks(text: str, language: str) -> list[Block]:
    """Pieces of the file, each ending at a blank line followed by a top-level line (a new definition)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    current: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        current.append(line)
        boundary = not line.strip() and (_TOP_LEVEL.match(following) or len(current) >= _MAX_LINES)
        if boundary and "".join(current).strip():
            blocks.append(Block("\n".join(current).strip("\n"), kind="code", language=language))
            current = []
    if "".join(current).strip():
        blocks.append(Block("\n".join(current).strip("\n"), kind="code", language=language))
    return blocks


def read(file: RawFile) -> ParsedDocument:
    key = file.key
    blocks = _blocks(file.text(), language_of(key))
    if not blocks:
        raise ParseError("no text")
    return ParsedDocument(title=PurePosixPath(key).name, sections=[Section("section", blocks, [key])])
