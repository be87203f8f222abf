"""Section headings of a PDF from the document's own typography (lines from layout.py).

Each document sets its body text in one size; a heading is set apart from it (larger, bold, or in
capitals: small caps or letter-spaced), stands on its own line with space above, and, where the
paper numbers its sections, fits that numbering ("3.2" comes under "3", after "3.1"). Labels inside
figures and tables ("ViT-L/16", axis ticks) fail one of those tests, numbered list items the
numbering. Headings typeset in capitals read as a person writes them ("5 RELATED WORK" ->
"5 Related Work"), words the text itself writes in capitals kept ("RNN").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from thoth.writes.parsers.pdf.layout import NAMED, Line

NUMBERED = re.compile(r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}\.?|[A-H](?:\.\d{1,2}){0,3}\.?)\s+(?P<title>\S.*)$")
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "via"}
_SMALL_WORDS |= {"vs", "with"}


def size_counts(lines: list[Line]) -> Counter[float]:
    """The characters of the text (not rotated, not furniture) by font size, to the half point."""
    sizes: Counter[float] = Counter()
    for line in lines:
        if not line.rotated and not line.furniture:
            sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes


def body_size(sizes: Counter[float]) -> float:
    """The size the document sets its body in: the one most of its characters have (`size_counts`)."""
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _capitals(text: str) -> bool:
    letters = list(filter(str.isalpha, text))
    return len(letters) >= 3 and all(map(str.isupper, letters))


def _set_apart(line: Line, body: float) -> bool:
    """Set in another style than the body: larger, bold, or in capitals (small caps, spaced capitals)."""
    larger = line.size >= body + 0.8 or line.top >= body + 1.5
    bold = line.bold and line.size >= body - 0.3
    return larger or bold or _capitals(NUMBERED.sub(r"\g<title>", line.plain.strip()))


def _space_above(line: Line, prev: Line | None, body: float) -> bool:
    """Its own line with room above it: the first on its page or column, or a gap wider than a line's."""
    if prev is None:
        return True
    gap = prev.y0 - line.y1
    return gap < -body or gap > 0.35 * body or line.x0 > prev.x1  # a new column, a blank, a column to the right


def _shape(line: Line) -> bool:
    """A heading's words: a few, with letters, not a sentence's middle or end, no address."""
    text = line.plain.strip()
    words = text.split()
    if (
        line.rotated
        or line.furniture
        or line.in_figure
        or line.role == "table"
        or not 1 <= len(words) <= 14
        or len(text) > 100
    ):
        return False
    if not re.search(r"[^\W\d_]{2}", text) or text.endswith((",", ";", ":")) or "@" in text:
        return False
    return True


@dataclass
class Numbering:
    """The section numbers seen so far: '3.2' may follow '3.1' or '3', never '7' after '2'."""

    last: list[str] = field(default_factory=list)

    def fits(self, num: str) -> bool:
        parts = num.rstrip(".").split(".")
        if len(parts) == 1:
            return self._next_top(parts[0])
        parent, own = parts[:-1], parts[-1]
        if not own.isdigit():
            return False
        if self.last[: len(parent)] == parent:
            below = self.last[len(parent)] if len(self.last) > len(parent) else "0"
            return below.isdigit() and int(below) < int(own) <= int(below) + 2
        # the parent heading was missed: its number still has to come next
        return len(parent) == 1 and self._next_top(parent[0]) and int(own) <= 2

    def _next_top(self, top: str) -> bool:
        current = self.last[0] if self.last else "0"
        if top.isdigit():
            return current.isdigit() and int(current) < int(top) <= int(current) + 2
        if current.isdigit():  # the first appendix
            return top == "A" and current != "0"
        return ord(current) < ord(top) <= ord(current) + 2

    def take(self, num: str) -> None:
        self.last = num.rstrip(".").split(".")


def first_section(line: Line) -> bool:
    """Whether `line` may be the heading of a paper's section 1 ('1 Introduction'), whatever its size:
    a paper numbers its sections when one such line is set apart from the body (`numbers_sections`)."""
    match = NUMBERED.match(line.plain.strip())
    return bool(match) and match.group("num").rstrip(".") == "1" and match.group("title")[:1].isupper()


def numbers_sections(first_sections: list[Line], body: float) -> bool:
    return any(_shape(x) and _set_apart(x, body) for x in first_sections)


def _level(line: Line, body: float, numbering: Numbering | None, prev: Line | None) -> int:
    """The heading level of `line` (0: not a heading)."""
    if not _shape(line) or not _set_apart(line, body) or not _space_above(line, prev, body):
        return 0
    text = line.plain.strip()
    if NAMED.match(text) and not text.endswith("."):
        return 1
    match = NUMBERED.match(text)
    if numbering is not None:
        if not match or not numbering.fits(match.group("num")):
            return 0
        title = match.group("title")
        if not title[0].isupper() or title.endswith("."):
            return 0
        numbering.take(match.group("num"))
        return min(4, match.group("num").rstrip(".").count(".") + 1)
    if match:  # an unnumbered paper's numbered line is a list item
        return 0
    larger = line.size >= body + 1.5 or line.top >= body + 2.5
    return 1 if larger and len(text.split()) <= 10 and not text.endswith(".") and text[0].isupper() else 0


def _continues(line: Line, prev: Line | None, body: float) -> bool:
    """`line` is the second line of the heading `prev` ('2 Towards Reducing Internal' / 'Covariate Shift')."""
    return (
        prev is not None
        and _shape(line)
        and abs(line.size - prev.size) < 0.3
        and line.bold == prev.bold
        and _capitals(line.plain) == _capitals(NUMBERED.sub(r"\g<title>", prev.plain.strip()))
        and 0 < prev.y0 - line.y1 < 1.0 * line.size
        and _set_apart(line, body)
        and not NUMBERED.match(line.plain.strip())
        and not NAMED.match(line.plain.strip())
    )


def mark_headings(
    pages: list[list[Line]], body: float, numbering: Numbering | None, start: tuple[int, int] = (0, 0)
) -> None:
    """Set `heading_level` on section titles from `start` (page, line index) on; join two-line titles.
    `numbering` (None where the paper does not number its sections) goes on from page to page."""
    for lines in pages:
        heading: Line | None = None
        prev: Line | None = None
        for line in lines:
            if (line.page, line.index) < start or line.furniture or line.rotated:
                continue
            if heading is not None and _continues(line, heading, body):
                heading.plain = f"{heading.plain} {line.plain}"
                line.heading_level = -1  # part of the heading above
                continue
            line.heading_level = _level(line, body, numbering, prev)
            heading = line if line.heading_level > 0 else None
            prev = line


def person_case(text: str, words: Counter[str]) -> str:
    """Title case for text typeset in capitals; a word the document writes in capitals stays so.

    `words` counts the document's words as written (case kept).
    """
    if not _capitals(text):
        return text
    out: list[str] = []
    for token in text.split(" "):
        # a title's first word (after any section number) and a subtitle's
        first = not any(ch.isalpha() for w in out for ch in w) or out[-1].endswith((":", "?", "!"))
        parts = re.split(r"([-–/])", token)
        out.append("".join(_word_case(p, first and j == 0, words) for j, p in enumerate(parts)))
    return " ".join(out)


def _word_case(word: str, first: bool, words: Counter[str]) -> str:
    core = re.sub(r"[^\w]", "", word)
    if not core or not core.isalpha():
        return word
    if len(core) > 1 and words.get(core, 0) > words.get(core.capitalize(), 0) + words.get(core.lower(), 0):
        return word  # an acronym the text writes so
    if not first and core.lower() in _SMALL_WORDS:
        return word.lower()
    return word[: word.index(core[0])] + core.capitalize() + word[word.index(core[0]) + len(core) :]
