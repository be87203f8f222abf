"""Markdown and MDX: front matter, sections from headings, code blocks and tables kept as blocks."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

import yaml

from thoth.writes.parsers import Block, ParsedDocument, ParseError, RawFile, Section
from thoth.writes.parsers.unseen import drop_comments, drop_hidden_markup

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.-]*)")
_MDX_IMPORT = re.compile(r"^(import|export)\s")


def _front_matter(text: str) -> tuple[dict, str]:
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.DOTALL)
    if not match:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError:
        meta = {}
    return (meta if isinstance(meta, dict) else {}), text[match.end() :]


def _inline(text: str) -> str:
    """Heading text without Markdown decoration (links, emphasis, code ticks)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[*_`]", "", text).strip()


def _blocks(lines: list[str]) -> list[Block]:
    blocks: list[Block] = []
    para: list[str] = []
    table: list[str] = []
    fence: str | None = None
    code: list[str] = []
    language = ""

    def flush() -> None:
        if para and "".join(para).strip():
            blocks.append(Block("\n".join(para).strip()))
        if table:
            blocks.append(Block("\n".join(table).strip(), kind="table"))
        para.clear()
        table.clear()

    for line in lines:
        if fence is not None:
            if line.strip().startswith(fence):
                if "".join(code).strip():
                    blocks.append(Block("\n".join(code).rstrip(), kind="code", language=language.lower()))
                fence, code = None, []
            else:
                code.append(line)
            continue
        match = _FENCE.match(line)
        if match:
            flush()
            fence, language = match.group(1), match.group(2)
            continue
        if line.lstrip().startswith("|"):
            if para:
                flush()
            table.append(line.strip())
        elif not line.strip():
            flush()
        else:
            if table:
                flush()
            para.append(line)
    if fence is not None and "".join(code).strip():  # unclosed fence: keep what is there
        blocks.append(Block("\n".join(code).rstrip(), kind="code", language=language.lower()))
    flush()
    return blocks


def _prose_flags(body: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is prose: outside fenced code and not a fence line itself."""
    in_fence: str | None = None
    for line in body.splitlines():
        fence = _FENCE.match(line)
        if fence and in_fence is None:
            in_fence = fence.group(1)
            yield line, False
        elif in_fence is not None:
            if line.strip().startswith(in_fence):
                in_fence = None
            yield line, False
        else:
            yield line, True


def _visible(body: str, counts: Counter) -> str:
    """The body without what a reader of the rendered page never sees (unseen.py): HTML and MDX comments,
    a comment's lines included, and raw-HTML elements that hide themselves, both outside fenced code. A
    comment opened at a line's start runs to its end, fences inside it included, as CommonMark reads it."""
    if "<" not in body and "{/*" not in body:
        return body
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    in_comment: str | None = None  # the opening of a comment still open

    def flush() -> None:
        if prose:
            out.append(drop_hidden_markup("\n".join(prose), counts))
            prose.clear()

    for line in body.splitlines():
        if fence is not None:
            out.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(line) if in_comment is None else None
        if opened:
            flush()
            fence = opened.group(1)
            out.append(line)
            continue
        kept, in_comment = drop_comments(line, counts, in_comment)
        prose.append(kept)
    flush()
    return "\n".join(out)


def readable(text: str) -> str:
    """The Markdown as a person reads it: no front matter, no MDX import/export lines (outside code), nothing
    the rendered page hides (comments, hidden HTML)."""
    _, body = _front_matter(text)
    body = _visible(body, Counter())
    kept = [line for line, prose in _prose_flags(body) if not (prose and _MDX_IMPORT.match(line))]
    return "\n".join(kept).strip()


def read(file: RawFile) -> ParsedDocument:
    return parse(file.text(), file.title)


def parse(text: str, fallback_title: str) -> ParsedDocument:
    meta, body = _front_matter(text)
    hidden: Counter[str] = Counter()
    body = _visible(body, hidden)
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, lines)
    stack: list[tuple[int, str]] = []
    lines: list[str] = []
    first_h1: str | None = None
    for line, prose in _prose_flags(body):
        if prose:
            heading = _HEADING.match(line)
            if heading:
                sections.append(([h for _, h in stack], lines))
                level, title = len(heading.group(1)), _inline(heading.group(2))
                if level == 1 and first_h1 is None:
                    first_h1 = title
                stack = [(lv, h) for lv, h in stack if lv < level] + [(level, title)]
                lines = []
                continue
            if _MDX_IMPORT.match(line):
                continue
        lines.append(line)
    sections.append(([h for _, h in stack], lines))

    title = str(meta.get("title") or first_h1 or fallback_title).strip()
    partitions = [Section("section", blocks, path) for path, sec in sections if (blocks := _blocks(sec))]
    if not partitions:
        raise ParseError("no text (the Markdown file has no content besides front matter)")
    url = meta.get("url") or meta.get("canonical_url") or meta.get("canonical")
    authors = meta.get("authors") or meta.get("author") or []
    return ParsedDocument(
        title=title,
        sections=partitions,
        authors=[str(a) for a in (authors if isinstance(authors, list) else [authors])],
        url=str(url) if url else None,
        hidden_dropped=dict(hidden),
    )
