"""Text a person never sees, found the same way by every parser: hidden HTML, comments, invisible characters.

A page can carry text for a machine only, such as instructions for an AI assistant that no reader sees. The
parsers leave it out and count it by reason (`documents.hidden_dropped`; docs/security.md lists the reasons).
Stylesheet rules are not read: what a class hides depends on the page's CSS and the screen's width."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

# zero-width space, LRM/RLM, bidi embeddings and overrides, word joiner and invisible operators,
# bidi isolates, BOM used inside text, Mongolian vowel separator
_ALWAYS = "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u180e"
_TAGS = "\U000e0000-\U000e007f"  # tag characters: an emoji flag's subdivision (🏴 + tags), else a hidden copy of ASCII
_FLAG = "\U0001f3f4"
_INVISIBLE = re.compile(f"[{_ALWAYS}]+|(?<![{_FLAG}{_TAGS}])[{_TAGS}]+|[\u200c\u200d]+")
_JOINERS = "\u200c\u200d"


def _joins(before: str, after: str) -> bool:
    """Whether a joiner between these two characters can change what is drawn: both beyond Latin."""
    return all(c and ord(c) > 0x2FF and not c.isspace() for c in (before, after))


def drop_invisible_chars(text: str, counts: Counter) -> str:
    """`text` without zero-width, bidi and tag characters (joiners kept where they join), counted in `counts`."""
    if text.isascii():
        return text
    dropped = 0

    def drop(match: re.Match) -> str:
        nonlocal dropped
        run = match.group()
        if run[0] in _JOINERS:
            start, end = match.span()
            before, after = text[start - 1 : start], text[end : end + 1]
            if _joins(before, after):
                return run
        dropped += len(run)
        return ""

    kept = _INVISIBLE.sub(drop, text)
    if dropped:
        counts["zero_width"] += dropped
    return kept


_HIDING_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|opacity\s*:\s*0*(?:\.0*)?\s*(?:;|$|!)"
    r"|font-size\s*:\s*0+(?:\.0*)?(?:px|pt|em|rem|%)?\s*(?:;|$|!))",
    re.I,
)
UNSEEN_ELEMENTS = ("template", "noscript")  # never shown to a reader whose browser runs scripts


def hidden_by_attributes(attributes: Mapping[str, str | None]) -> bool:
    """Whether an element's own attributes hide it (names lower case; a value None: present without one)."""
    if "hidden" in attributes:
        return True
    if (attributes.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(_HIDING_STYLE.search(attributes.get("style") or ""))


def ink(text: str) -> int:
    """How many characters a count of left-out text adds: blanks are not counted."""
    return len(text) - sum(map(str.isspace, text))


def drop_hidden_elements(tree, counts: Counter) -> None:  # noqa: ANN001 — an lxml HTML document
    """Remove from an HTML page's tree what its reader never sees: elements hidden by their attributes,
    `<template>`, `<noscript>`, and the body's comments; counted in `counts`."""
    from lxml import etree

    root = tree.getroottree().getroot()
    condition = " or ".join(["@hidden", "@aria-hidden", "@style", *(f"self::{name}" for name in UNSEEN_ELEMENTS)])
    for element in tree.xpath(f"//*[{condition}]"):
        if element.tag not in UNSEEN_ELEMENTS and not hidden_by_attributes(
            {k.lower(): v for k, v in element.attrib.items()}
        ):
            continue
        if element.getparent() is None or root not in element.iterancestors():
            continue  # its ancestor went already, and was counted with it
        counts["html_hidden"] += ink(element.text_content())
        element.drop_tree()
    for comment in tree.xpath("//body//comment()"):
        if comment.getparent() is not None and isinstance(comment, etree._Comment):
            counts["html_comment"] += ink(comment.text or "")
            comment.drop_tree()


_CODE_SPAN = re.compile(r"(`+)(?:(?!\n\s*\n).)+?\1", re.S)  # inline code, within one paragraph
_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)\s*(/?)>")
_ATTRIBUTE = re.compile(r"([^\s=>/]+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+))?")
_VOID = {"br", "img", "input", "hr", "meta", "link", "source", "wbr", "area", "col", "embed", "track"}


# a comment's opening -> (its closing, the reason it is counted under)
COMMENTS = {"<!--": ("-->", "html_comment"), "{/*": ("*/}", "mdx_comment")}


def drop_comments(line: str, counts: Counter, open_comment: str | None = None) -> tuple[str, str | None]:
    """A line of Markdown prose without its comments (`COMMENTS`; code spans kept as written), and the
    opening of a comment still open at its end (None: none); `open_comment`: the line starts inside one."""
    kept: list[str] = []
    at = 0
    while True:
        if open_comment is not None:
            closing, reason = COMMENTS[open_comment]
            close = line.find(closing, at)
            counts[reason] += ink(line[at : close if close >= 0 else len(line)])
            if close < 0:
                return "".join(kept), open_comment
            at, open_comment = close + len(closing), None
        found = [(i, opening) for opening in COMMENTS if (i := line.find(opening, at)) >= 0]
        if not found:
            return "".join(kept) + line[at:], None
        start, opening = min(found)
        code = next((m for m in _CODE_SPAN.finditer(line, at) if m.start() < start < m.end()), None)
        if code is not None:
            kept.append(line[at : code.end()])
            at = code.end()
            continue
        kept.append(line[at:start])
        at, open_comment = start + len(opening), opening


def _attributes(text: str) -> dict[str, str | None]:
    return {m.group(1).lower(): (m.group(2).strip("\"'") if m.group(2) else None) for m in _ATTRIBUTE.finditer(text)}


def _element_end(text: str, tag: re.Match) -> int:
    """Where the element an opening tag starts ends: after its matching closing tag (same name, nested ones
    counted), or at the end of the text when it is never closed."""
    name = tag.group(2).lower()
    if tag.group(4) or name in _VOID:
        return tag.end()
    depth = 1
    for other in _TAG.finditer(text, tag.end()):
        if other.group(2).lower() != name or other.group(4):
            continue
        depth += -1 if other.group(1) else 1
        if not depth:
            return other.end()
    return len(text)


def drop_hidden_markup(prose: str, counts: Counter) -> str:
    """Markdown prose (no fenced code in it) without the raw-HTML elements that hide themselves; inline code
    spans are left as they are."""
    if "<" not in prose:
        return prose
    code = [m.span() for m in _CODE_SPAN.finditer(prose)]
    out: list[str] = []
    at = 0
    for tag in _TAG.finditer(prose):
        if tag.start() < at or tag.group(1) or any(a <= tag.start() < b for a, b in code):
            continue
        if tag.group(2).lower() in UNSEEN_ELEMENTS or hidden_by_attributes(_attributes(tag.group(3))):
            end = _element_end(prose, tag)
            counts["html_hidden"] += ink(re.sub(r"<[^>]*>", "", prose[tag.end() : end]))
            out.append(prose[at : tag.start()])
            at = end
    return "".join(out) + prose[at:]
