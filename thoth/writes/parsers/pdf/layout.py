"""Lines of a PDF page with their geometry, and what the layout says about them.

PDFium gives every character its font size, weight and box (`FPDFText_GetFontSize`,
`FPDFText_GetFontWeight`, `FPDFText_GetLooseCharBox`; chars.py). lines.py builds most
lines from them page-wide; a line with a raised letter or an accent is built here, character by
character (`make_line`). From the lines this module decides, for the PDF parser:

- page furniture: running headers and footers (the same line at the same height on
  many pages), page numbers, the rotated arXiv margin stamp;
- (section headings are headings.py's, from these lines);
- the first page's citation: the title is the largest text near the top, the
  authors the name lines under it (superscript marks dropped), the arXiv stamp's
  identifier, class and first-version year, a DOI.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from operator import sub

from thoth.writes.parsers.pdf.chars import Char
from thoth.writes.parsers.pdf.text import COMBINING, HYPHEN

MARKS = set("∗*†‡§¶⋆")
ACCENTS = frozenset(COMBINING)
_BLANKS = re.compile(r"[ \t]+")
RAISED = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")  # a footnote number as the page sets it
ARXIV_STAMP = re.compile(
    r"arXiv:\s*(?P<id>\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?P<version>v\d+)?"
    r"\s*(?:\[(?P<cls>[\w.-]+)\])?\s*(?P<date>\d{1,2}\s+[A-Z][a-z]{2,8}\s+(?:19|20)\d\d)?"
)
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)
NAMED = re.compile(
    r"^(abstract|introduction|related work|background|conclusions?|discussion|acknowledge?ments?|"
    r"references|bibliography|appendix(?:\s+[A-Z])?|appendices|supplementary material)\b",
    re.I,
)
REFERENCES = re.compile(r"^(references|bibliography|literature cited|works cited)$", re.I)
_CONTINUED = re.compile(r"^\(?(?:continued on (?:the )?next page|continued from (?:the )?previous page)\)?\.?$", re.I)
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.I)


@dataclass(slots=True)
class Line:
    text: str  # with HYPHEN at line-break hyphens; superscripts kept
    plain: str  # what chunks read: footnote marks after words kept raised ("competitions¹"), not glued to digits
    names: str  # superscripts and wide gaps as ", " (what the author reader splits)
    size: float  # the most common font size of its characters
    bold: bool
    x0: float
    y0: float  # bottom (PDF coordinates: y grows upwards)
    x1: float
    y1: float
    rotated: bool
    page: int
    index: int = 0  # position on its page, in PDFium's reading order
    heading_level: int = 0  # >0: a section heading at that level
    furniture: bool = False
    top: float = 0.0  # the largest size of its letters (small caps: the capitals' size)
    in_figure: bool = False  # inside a figure's drawing (drawings.py): a label, never a heading
    role: str = ""  # caption | footnote (floats.py) | table (tables.py): kept out of the running text
    table: int = -1  # a table's line (its caption's too): the table's number in the document
    figure: str = ""  # a figure caption's first line: the name of the figure's picture (figures.py)


def _attach_accents(chars: list[Char]) -> list[Char]:
    """Put each accent TeX drew as a glyph of its own on the letter under it ('Montr ´ eal' -> 'Montréal').

    PDFium lists the accent where the drawing order puts it, often words away; its box says which
    letter it sits on. The spaces PDFium added around a moved accent go with it.
    """
    accents = [i for i, c in enumerate(chars) if c.ch in COMBINING]
    if not accents:
        return chars
    gone: set[int] = set()
    for i in accents:
        a = chars[i]
        if i and chars[i - 1].ch == "/" and a.ch == "˜":  # a URL's tilde ('/˜schwenk'): a character, no accent
            chars[i] = a._replace(ch="~")
            continue
        mid = (a.box[0] + a.box[2]) / 2
        under = [
            j
            for j, c in enumerate(chars)
            if j not in gone and c.ch[:1].isalpha() and c.box[0] <= mid <= c.box[2] and j != i
        ]
        if not under:
            continue
        k = min(under, key=lambda j: abs((chars[j].box[0] + chars[j].box[2]) / 2 - mid))
        chars[k] = chars[k]._replace(ch=unicodedata.normalize("NFC", chars[k].ch + COMBINING[a.ch]))
        gone.add(i)
    for i in sorted(gone):  # a space PDFium set beside a moved accent, where the letters around it touch
        for j in (i - 1, i + 1):
            if 0 <= j < len(chars) and j not in gone and chars[j].generated and _touching(chars, j, gone):
                gone.add(j)
    return [c for j, c in enumerate(chars) if j not in gone]


def _touching(chars: list[Char], j: int, gone: set[int]) -> bool:
    before = [c for k, c in enumerate(chars[:j]) if k not in gone and not c.ch.isspace()]
    after = [c for k, c in enumerate(chars[j + 1 :], start=j + 1) if k not in gone and not c.ch.isspace()]
    return bool(before and after) and after[0].box[0] - before[-1].box[2] < 0.15 * max(before[-1].size, 1.0)


def _mode(values: list[float]) -> float:
    """The most common value to the half point (the first seen wins a tie)."""
    if not values:
        return 0.0
    if values.count(values[0]) == len(values):  # most lines: one value
        return round(values[0] * 2) / 2
    counts = Counter(values)  # a line repeats a few values: round those, not every character's
    halves: dict[float, int] = {}
    for value, n in counts.items():
        key = round(value * 2) / 2
        halves[key] = halves.get(key, 0) + n
    return max(halves, key=halves.__getitem__)  # max keeps the first of equals, as most_common(1) does


def make_line(chars: list[Char], page: int, angle: float) -> Line | None:
    joined = "".join([c.ch for c in chars])
    if not ACCENTS.isdisjoint(joined):
        chars = _attach_accents(chars)
        joined = "".join([c.ch for c in chars])
    ink = [c for c in chars if not c.ch.isspace()]
    if not ink:
        return None
    sizes = [c.size for c in ink]
    size = _mode(sizes)
    small, wide = 0.85 * size, 1.2 * size
    boxes = tuple(zip(*[c.box for c in ink], strict=True))  # lefts, bottoms, rights, tops
    weights, letters = [c.weight for c in ink], [c.ch for c in ink]
    if min(sizes) >= small and max(map(sub, boxes[0][1:], boxes[2]), default=0.0) <= wide:
        # nothing raised, no wide gap, so the three texts are the characters as they come
        return _line(joined, joined, joined, weights, letters, sizes, size, boxes, page, angle)
    base = _mode([c.box[1] for c in ink if abs(c.size - size) < 0.3])
    text, plain, names = [], [], []
    raised = base + 0.1 * size
    prev_right: float | None = None
    for c in chars:
        ch = c.ch
        if ch.isspace():
            text.append(ch)
            plain.append(ch)
            names.append(ch)
            continue
        if prev_right is not None and c.box[0] - prev_right > wide:
            text.append(" ")
            plain.append(" ")
            names.append(", ")
        text.append(ch)
        prev_right = c.box[2]
        if not (c.size < small and c.box[1] > raised):
            plain.append(ch)
            names.append(ch)
        # a raised mark after a word is a footnote's ("Bengio∗", "competitions¹"): it stays, raised, so the
        # word reads whole; the author reader splits names there
        elif ch == "," or (ch in MARKS or ch.isdigit()) and after_word(plain):
            plain.append(ch.translate(RAISED))
            names.append(", ")
        else:
            plain.append(ch)
            names.append(", ")
    return _line("".join(text), "".join(plain), "".join(names), weights, letters, sizes, size, boxes, page, angle)


def _line(
    text: str,
    plain: str,
    names: str,
    weights: list[int],
    letters: list[str],  # the ink's characters
    sizes: list[float],
    size: float,
    boxes: tuple,  # the ink's lefts, bottoms, rights, tops
    page: int,
    angle: float,
) -> Line:
    if weights.count(weights[0]) == len(weights):
        bold = weights[0] >= 600
    else:
        bold = sum(w >= 600 for w in weights) / len(weights) > 0.8
    if sizes.count(sizes[0]) == len(sizes):  # one size: the letters' largest is it, if there is a letter
        top = sizes[0] if any(map(str.isalpha, letters)) else size
    else:
        top = max((z for z, ch in zip(sizes, letters, strict=True) if ch.isalpha()), default=size)
    lefts, bottoms, rights, tops = boxes
    bounds = (min(lefts), min(bottoms), max(rights), max(tops))
    return new_line(text, plain, names, size, bold, top, bounds, page, angle)


def new_line(
    text: str, plain: str, names: str, size: float, bold: bool, top: float, bounds: tuple, page: int, angle: float
) -> Line:
    """A line from its texts and the facts its characters gave (bounds: left, bottom, right, top)."""
    if "\t" in plain or "  " in plain:
        plain = _BLANKS.sub(" ", plain)
    return Line(
        text=text.strip(),
        plain=plain.strip(),
        names=names.strip(),
        size=size,
        bold=bold,
        x0=bounds[0],
        y0=bounds[1],
        x1=bounds[2],
        y1=bounds[3],
        rotated=abs(angle) > 0.1 and abs(angle - 6.283) > 0.1,
        page=page,
        top=top,
    )


def after_word(plain: list[str]) -> bool:
    """A footnote number follows a word of three letters or more ('competitions1'), not a variable ('x2')."""
    tail = re.search(r"([^\W\d_]+)[.,;:)]?\s*$", "".join(plain[-12:]))
    return bool(tail) and len(tail.group(1)) >= 3


def _superscript(a: Line, b: Line) -> bool:
    """b is a raised, smaller fragment right after a: a footnote mark or an exponent PDFium split off."""
    return (
        b.size < 0.85 * a.size
        and a.y0 + 0.15 * a.size < b.y0 < a.y1
        and -0.5 * a.size < b.x0 - a.x1 < 0.5 * a.size
        and len(b.text) <= 4
    )


def mergeable(a: Line, b: Line) -> bool:
    """b continues a on the same baseline (PDFium split a line at a kern, a hyphen glyph or a superscript)."""
    if a.rotated or b.rotated:
        return False
    same_line = (
        abs(a.size - b.size) < 0.5 and abs(a.y0 - b.y0) < 0.3 * a.size and -0.5 * a.size < b.x0 - a.x1 < 1.0 * a.size
    )
    return same_line or _superscript(a, b)


def merge(a: Line, b: Line) -> Line:
    if _superscript(a, b):
        marks = (all(ch in MARKS or ch in ", " for ch in b.text) or b.text.isdigit()) and after_word(list(a.plain))
        a.text, a.names = a.text + b.text, a.names + ", "
        a.plain += "".join(b.plain.split()).translate(RAISED) if marks else b.plain
        a.x1 = max(a.x1, b.x1)
        return a
    glue = "" if b.x0 - a.x1 < 0.15 * a.size or b.text == "-" else " "
    a.text, a.plain, a.names = a.text + glue + b.text, a.plain + glue + b.plain, a.names + glue + b.names
    a.x1, a.y0, a.y1, a.top = max(a.x1, b.x1), min(a.y0, b.y0), max(a.y1, b.y1), max(a.top, b.top)
    return a


# -- furniture -------------------------------------------------------------------------------------


def furniture_key(line: Line) -> str:
    """What a running header or footer is known by: its words, digits as '#', and its height on the page."""
    words = re.sub(r"\d+", "#", " ".join(line.text.lower().split()))
    return f"{words}@{round(line.y0 / 4)}"


def page_furniture(lines: list[Line], found: dict) -> list[Line]:
    """Mark the page's page number, running notes and arXiv stamp (`found` takes the stamp's fields); returns
    its edge lines, the ones a running header or footer may be (`mark_repeated` decides, over all pages)."""
    upright = sorted((x for x in lines if not x.rotated), key=lambda x: -x.y1)
    # a page's only lines are its text, even when every page says the same thing
    edge = (upright[:3] + upright[-3:] if len(upright) > 6 else upright) if len(upright) > 3 else []
    if len(upright) > 1:  # a page number alone at the very top or bottom of the page
        for line in (upright[0], upright[-1]):
            if _PAGE_NUMBER.match(line.text.strip()):
                line.furniture = True
    for line in upright:  # a long table's running note, on its own line
        if _CONTINUED.match(line.text.strip()):
            line.furniture = True
    for line in lines:
        stamp = ARXIV_STAMP.search(line.text)
        if stamp and (line.rotated or _whole_stamp(line, stamp)):
            line.furniture = True
            if "eprint" not in found:
                found.update(_stamp(stamp))
    return edge


def repeated_keys(pages_with: dict[str, set[int]], page_count: int) -> set[str]:
    """The edge lines' keys (`furniture_key`) found on enough of the document's pages to be furniture."""
    if page_count < 3:
        return set()
    return {k for k, v in pages_with.items() if len(v) >= max(3, 0.4 * page_count)}


def mark_repeated(edge: list[Line], repeated: set[str], other_text: bool) -> None:
    """Mark a page's edge lines that repeat on many pages, if the page says something else (`other_text`: a
    line off its edge that is neither furniture nor rotated): a page whose every line repeats (a
    one-line-per-page report: "Report 1, page 2: ...") is content."""
    marked = [x for x in edge if not x.furniture and furniture_key(x) in repeated]
    if marked and (other_text or any(not x.furniture and all(x is not m for m in marked) for x in edge)):
        for line in marked:
            line.furniture = True


def other_text(lines: list[Line], edge: list[Line]) -> bool:
    """Whether the page has a line off its edge that is text (not furniture, not rotated)."""
    ids = {id(x) for x in edge}
    return any(not (x.furniture or x.rotated) and id(x) not in ids for x in lines)


def _whole_stamp(line: Line, stamp: re.Match[str]) -> bool:
    """An upright line that is the margin stamp itself (version and class or date), not a citation of an
    arXiv id: a reference ('preprint arXiv:2002.08909.') keeps its line."""
    full = stamp.group("version") and (stamp.group("cls") or stamp.group("date"))
    return bool(full) and len(line.text) < len(stamp.group(0)) + 20


def _stamp(match: re.Match[str]) -> dict:
    ident = match.group("id")
    yy = ident.split("/")[-1][:2] if "/" in ident else ident[:2]
    year = 1900 + int(yy) if int(yy) >= 91 else 2000 + int(yy)  # arXiv began in 1991
    out = {"eprint": ident, "year": year}
    if match.group("cls"):
        out["primary_class"] = match.group("cls")
    if match.group("version"):
        out["arxiv_version"] = match.group("version")
    if match.group("date"):
        out["arxiv_date"] = match.group("date")
    return out


# -- the first page --------------------------------------------------------------------------------

_NOT_NAMES = re.compile(
    r"\b(university|universit\w*|institute|college|school|department|dept|laborator\w*|lab|research|inc|corp|"
    r"company|center|centre|google|brain|microsoft|facebook|meta|deepmind|openai|abstract|introduction|"
    r"equal|contribution|correspondence|work|email|preprint|conference|proceedings)\b",
    re.I,
)
_NAME = re.compile(r"^[A-ZÀ-ÞŁ][\w'’.-]*(?:\s+(?:[A-ZÀ-ÞŁ][\w'’.-]*|de|van|von|der|da|di|la|le))*$")


def _names(text: str) -> list[str]:
    if "@" in text or _NOT_NAMES.search(text) or text.rstrip().endswith(".") and len(text) > 40:
        return []
    names: list[str] = []
    for part in re.split(r",|\band\b|&|;|\s{2,}", text):
        part = part.strip(" .*∗†‡§¶⋆0123456789")
        if not part:
            continue
        tokens = part.split()
        if not _NAME.match(part) or len(tokens) > 8:
            return []
        if len(tokens) >= 4 and len(tokens) % 2 == 0 and not any(t.endswith(".") for t in tokens):
            names += [" ".join(tokens[i : i + 2]) for i in range(0, len(tokens), 2)]  # "Ann Lee Bo Chan"
        elif len(tokens) >= 2:
            names.append(part)
        else:
            return []
    return names


def read_title_page(lines: list[Line], height: float, body: float) -> dict:
    """Title and authors from the first page's layout (each may be missing)."""
    found: dict = {}
    upright = [x for x in lines if not x.rotated and not x.furniture and x.y1 > 0.35 * height]
    if not upright:
        return found
    top = max(x.size for x in upright)
    if top < body * 1.2:  # nothing set larger than the text: no typeset title to read
        return found
    title_lines = [x for x in upright if abs(x.size - top) < 0.4]
    first = title_lines[0]
    title_lines = [x for x in title_lines if first.y1 - x.y1 < 4 * top]
    found["title"] = _title_text(title_lines)
    last = title_lines[-1]
    authors: list[str] = []
    for line in lines[last.index + 1 :]:
        if line.rotated or line.furniture or line.index in {x.index for x in title_lines}:
            continue
        if NAMED.match(line.plain.strip()) or line.y1 < 0.3 * height:
            break
        if line.size < body - 0.6 or sum(any(ch.isalpha() for ch in w) for w in line.plain.split()) > 16:
            continue
        authors += _names(line.names)
    if authors:
        found["authors"] = list(dict.fromkeys(authors))
    return found


def _title_text(lines: list[Line]) -> str:
    text = " ".join(x.plain.strip() for x in lines)
    text = re.sub(r"[\s∗*†‡§¶⋆,⁰¹²³⁴⁵⁶⁷⁸⁹]+$", "", text)  # the title's footnote marks
    return re.sub(r"\s+", " ", text.replace(HYPHEN + " ", "").replace(HYPHEN, "-")).strip()
