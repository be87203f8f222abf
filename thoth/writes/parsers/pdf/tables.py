"""Tables of a PDF page as rows and columns, from the characters' boxes and the page's ruling lines.

What pdfplumber and Camelot do, in the few steps Thoth's papers need, and only on the pages that
need it (a "Table N" caption on the page, or a table running on from the page before):

- ruling lines: the page's thin paths and images (some papers draw rules as images), and the straight
  segments of larger paths (a grid drawn as one path); horizontal rules of one width, stacked with no
  caption or running text between, frame a table (booktabs' top, middle and bottom rules, or a full
  grid); a sentence beside a vertical rule is a cell, not running text;
- a table without rules is the run of lines beside its caption whose words stand apart in
  columns (a gap wider than a word space);
- rows are the words' lines (by their vertical centres), or, where cells are running sentences and a
  rule is drawn between rows, the lines between two rules; columns are where no row has ink (a gap
  wider than a word space, a spanning header allowed to cross it), as in Camelot's stream mode;
- header rows are those above the table's lowest inner rule with no row of values over it, or those
  before the first row with a number; a header cell over several columns (its width, or the partial
  rule under it) is repeated in each.

A table is kept as its caption and cells (`Table`); the parser renders it as Markdown (`markdown`), one
partition of its own, and the chunker repeats caption and header in each chunk of a long one.
"""

from __future__ import annotations

import ctypes
import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import reduce
from itertools import groupby

import numpy as np
import pypdfium2.raw as pdfium_c

from thoth.writes.parsers.pdf.chars import PageChars
from thoth.writes.parsers.pdf.drawings import Box, holds, overlap, union
from thoth.writes.parsers.pdf.figures import FIGURE_CAPTION
from thoth.writes.parsers.pdf.floats import caption_lines
from thoth.writes.parsers.pdf.layout import Line
from thoth.writes.parsers.pdf.text import COMBINING, HYPHEN

# "Table 4." / "Table 4:" / "TABLE IV" alone on its line; "Table 4 shows ..." is running text
TABLE_CAPTION = re.compile(r"^(?:Table|Tab\.)\s*(\d{1,2}|[IVX]{1,5})(?:[:.]\s|[:.]?$)", re.I)
_THIN = 2.5  # points: a rule's thickness at most
_RULE_MIN = 10.0  # points: a rule's length at least
_SEGMENTS_MAX = 400  # a path with more segments is a drawing (a plot), not a grid
_CAPTION_REACH = 3.0  # line heights between a table and its caption
_CELL_PAD = 8.0  # points: at most between a cell's text and the vertical rule beside it
_STACK_GAP = 500.0  # points: the most between two rules of one table (prose between them splits them)
_ACCENT_CODES = np.array([ord(a) for a in COMBINING])
_DECIMAL = re.compile(r"^\d+\.\d+$")
_NUMBER = re.compile(r"^[-−–+±]?[(\[]?\d[\d,.]*(?:\s*[±×·]\s*\d[\d.]*)?[)\]]?[%∗*†‡§¶⋆a-z]{0,2}$")


@dataclass
class Table:
    """A table as printed: caption lines, then header rows and body rows of cells (raw text)."""

    page: int
    box: Box
    caption: list[Line]
    header: list[list[str]]  # usually one row; a spanning header's text repeated in each of its columns
    rows: list[list[str]]
    lines: list[Line] = field(default_factory=list)  # the page's lines it holds (caption included)
    open_end: bool = False  # reaches the foot of the page: a table on the next page's top may go on
    pages: list[int] = field(default_factory=list)


def is_number(cell: str) -> bool:
    cell = cell.strip().replace(" ", "")
    return bool(_NUMBER.match(cell)) and cell.count("(") == cell.count(")") and cell.count("[") == cell.count("]")


# -- ruling lines ----------------------------------------------------------------------------------


def rulings(drawn: list[tuple[int, int, Box]]) -> tuple[list[Box], list[Box]]:
    """The page's horizontal and vertical rules (left, bottom, right, top), from its paths and images (some
    papers draw rules as images) among its `drawn_objects`."""
    horizontal: list[Box] = []
    vertical: list[Box] = []
    for handle, kind, box in drawn:
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM or _classify(box, horizontal, vertical):
            continue
        if kind != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        obj = ctypes.cast(handle, pdfium_c.FPDF_PAGEOBJECT)
        count = pdfium_c.FPDFPath_CountSegments(obj)
        if 2 <= count <= _SEGMENTS_MAX:
            for segment in _segments(obj, count):
                _classify(segment, horizontal, vertical)
    return horizontal, vertical


def _classify(box: Box, horizontal: list[Box], vertical: list[Box]) -> bool:
    width, height = box[2] - box[0], box[3] - box[1]
    if height <= _THIN and width >= _RULE_MIN:
        horizontal.append(box)
        return True
    if width <= _THIN and height >= _RULE_MIN / 2:
        vertical.append(box)
        return True
    return False


def _segments(obj, count: int) -> list[Box]:
    """A path's straight, axis-parallel segments in page coordinates (a grid or a frame drawn as one path)."""
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix)):
        return []
    a, b, c, d, e, f = (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)
    x, y = ctypes.c_float(), ctypes.c_float()
    out: list[Box] = []
    start = prev = None
    for k in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, k)
        if not pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
            return []
        point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        kind = pdfium_c.FPDFPathSegment_GetType(segment)
        if kind == pdfium_c.FPDF_SEGMENT_LINETO and prev is not None:
            out.append(_span(prev, point))
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                out.append(_span(point, start))
        elif kind == pdfium_c.FPDF_SEGMENT_MOVETO:
            start = point
        elif kind != pdfium_c.FPDF_SEGMENT_LINETO:
            return []  # a curve: a drawing, not a grid
        prev = point
    return [s for s in out if s[2] - s[0] < 0.5 or s[3] - s[1] < 0.5]


def _span(p: tuple[float, float], q: tuple[float, float]) -> Box:
    return (min(p[0], q[0]), min(p[1], q[1]), max(p[0], q[0]), max(p[1], q[1]))


def _ruled_regions(
    horizontal: list[Box], vertical: list[Box], captions: list[Line], prose: list[Line] = (), lines: list[Line] = ()
) -> list[tuple[Box, list[Box]]]:
    """Stacks of horizontal rules of about one width, no caption or running text between two of them:
    (region, its rules)."""
    rules = sorted(horizontal, key=lambda r: -r[3])
    groups: list[list[Box]] = []
    for rule in rules:
        for group in groups:
            x0, x1 = min(r[0] for r in group), max(r[2] for r in group)
            low = min(r[1] for r in group)
            width = min(x1 - x0, rule[2] - rule[0])
            if overlap(x0, x1, rule[0], rule[2]) < 0.5 * width or low - rule[3] > _STACK_GAP:
                continue
            if any(overlap(x0, x1, c.x0, c.x1) > 0 and rule[3] < c.y0 and c.y1 < low for c in [*captions, *prose]):
                continue
            between = [x for x in lines if rule[3] < (x.y0 + x.y1) / 2 < low and overlap(x0, x1, x.x0, x.x1) > 0]
            if low - rule[3] > 24 and (  # a wide empty space under one or over the other: not one table's
                not between
                or low - max(x.y1 for x in between) > 2.5 * between[0].size
                or min(x.y0 for x in between) - rule[3] > 2.5 * between[0].size
            ):
                continue
            group.append(rule)
            break
        else:
            groups.append([rule])
    out = []
    for group in groups:
        widest = max(r[2] - r[0] for r in group)
        full = [r for r in group if r[2] - r[0] >= 0.6 * widest]
        if len(full) < 2:
            continue
        box = (min(r[0] for r in full), min(r[1] for r in full), max(r[2] for r in full), max(r[3] for r in full))
        if box[3] - box[1] < 6:
            continue  # a double rule, not a table
        sides = [v for v in vertical if overlap(box[1], box[3], v[1], v[3]) > 0 and box[0] - 3 <= v[0] <= box[2] + 3]
        out.append((box, [*group, *sides]))
    return out


# -- words, rows, columns --------------------------------------------------------------------------


@dataclass
class _Word:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def _words(chars: PageChars, box: Box) -> list[_Word]:
    """The words whose letters lie in `box`: characters next to each other in PDFium's order, on one
    baseline, with no space and no gap between (but an accent TeX drew as a glyph of its own, put on its
    letter)."""
    cx, cy = chars.centres
    inside = np.flatnonzero((cx >= box[0]) & (cx <= box[2]) & (cy >= box[1]) & (cy <= box[3]))
    accented = _accented(chars, inside, cx, cy)
    words: list[_Word] = []
    prev_index = -2
    bridged = False  # an accent between this character and the one before
    boxes = chars.ink_boxes[inside].tolist()  # left, top, right, bottom
    for k, index, (left, top, right, bottom), size in zip(
        inside.tolist(), chars.ink[inside].tolist(), boxes, chars.ink_sizes[inside].tolist(), strict=True
    ):
        size = size or (top - bottom)
        ch = accented.get(k, chars.chs[index]) if accented else chars.chs[index]
        if not ch:
            bridged = True
            continue
        if words and (index == prev_index + 1 or bridged and left - words[-1].x1 < 0.15 * size):
            w = words[-1]
            bridged = False
            same_line = bottom < w.y1 and top > w.y0
            ligature = right <= w.x1 + 0.5  # a ligature's second letter, in the first's box ("ﬁ": "f", "i")
            if same_line and (-0.3 * size < left - w.x1 or ligature) and left - w.x1 < 0.25 * max(size, w.size):
                w.text += ch
                w.x1, w.y0, w.y1 = max(w.x1, right), min(w.y0, bottom), max(w.y1, top)
                prev_index = index
                continue
        words.append(_Word(ch, left, bottom, right, top, size))
        prev_index = index
        bridged = False
    return [w for w in words if w.text.strip()]


def _accented(chars: PageChars, inside: np.ndarray, cx: np.ndarray, cy: np.ndarray) -> dict[int, str]:
    """Each accent TeX drew as a glyph of its own ('') and the letter under it, accented, by ink position
    (as the line reader does it: layout.py's `_attach_accents`)."""
    accents = np.isin(chars.codes[chars.ink[inside]], _ACCENT_CODES)
    out: dict[int, str] = {}
    if not accents.any():
        return out
    letters = inside[chars.ink_alpha[inside] & ~accents]
    lefts, rights, heights = chars.ink_boxes[letters, 0], chars.ink_boxes[letters, 2], cy[letters]
    for k in inside[accents].tolist():
        accent = chars.chs[int(chars.ink[k])]
        size = float(chars.ink_sizes[k]) or 10.0
        mid = float(cx[k])
        under = letters[(lefts <= mid) & (mid <= rights) & (np.abs(heights - cy[k]) < size)]
        under = [j for j in under.tolist() if j not in out]
        if under:
            letter = min(under, key=lambda j: abs(cx[j] - mid))
            out[letter] = unicodedata.normalize("NFC", chars.chs[int(chars.ink[letter])] + COMBINING[accent])
            out[k] = ""
    return out


def _rows(words: list[_Word]) -> list[list[_Word]]:
    """Words grouped by line: a word whose vertical centre lies in a row's band joins it (top to bottom)."""
    rows: list[list[_Word]] = []
    centres: list[float] = []
    for w in sorted(words, key=lambda w: -w.cy):
        cy = w.cy
        reach = 0.3 * min(w.y1 - w.y0, w.size * 1.2)  # loose boxes overlap the next line's: centres decide
        i = len(centres)  # rows come top to bottom: those within reach are the last few, the first of them joins
        while i and centres[i - 1] - cy <= reach:
            i -= 1
        if i < len(centres):
            rows[i].append(w)
        else:
            rows.append([w])
            centres.append(cy)
    return [sorted(row, key=lambda w: w.x0) for row in rows]


def _separators(rows: list[list[_Word]], box: Box, forced: list[float]) -> list[float]:
    """Column boundaries: x positions where (nearly) no row has ink over a gap wider than a word space."""
    if not rows:
        return []
    step = 0.5
    x0 = min(w.x0 for r in rows for w in r)
    x1 = max(w.x1 for r in rows for w in r)
    n = int((x1 - x0) / step) + 2
    counts = np.zeros(n, np.int32)
    sizes = sorted(w.size for r in rows for w in r)
    size = sizes[len(sizes) // 2]
    for row in rows:
        covered = np.zeros(n, bool)
        for w in _phrases(row):  # a word space inside a cell is no gap
            covered[int((w.x0 - x0) / step) : int((w.x1 - x0) / step) + 1] = True
        counts += covered
    allowed = 0 if len(rows) < 4 else max(1, len(rows) // 4)  # a spanning cell or two may cross a gap
    gap = max(4.0, 0.6 * size) / step
    empty = counts <= allowed
    cuts: list[float] = []
    i = 0
    while i < n:
        if not empty[i]:
            i += 1
            continue
        j = i
        while j < n and empty[j]:
            j += 1
        if i > 0 and j < n and j - i >= gap:
            run = counts[i:j]
            low = np.flatnonzero(run == run.min())
            mid = (low[0] + low[-1]) / 2
            cuts.append(x0 + (i + mid) * step)
        i = j
    for x in forced:
        if x0 + 2 < x < x1 - 2 and all(abs(x - c) > 6 for c in cuts):
            if not any(w.x0 + 1 < x < w.x1 - 1 for r in rows for w in r):
                cuts.append(x)
    return sorted(cuts)


def _column(x: float, cuts: list[float]) -> int:
    return bisect_left(cuts, x)


def _is_numeric_row(row: list[_Word]) -> bool:
    """A row of values: it ends in a number, or half its words after the first are numbers ("VOC 07 test"
    is a header's), or one is a decimal ("= 1.1 × 10−14": a header's "@.5" or "07+12" is none)."""
    rest = [is_number(w.text) for w in row[1:]]
    return bool(rest) and (rest[-1] or sum(rest) >= len(rest) / 2 or any(_DECIMAL.match(w.text) for w in row[1:]))


def _header_count(rows: list[list[_Word]], inner_rules: list[float]) -> int:
    """Rows above the first inner rule that has rows under it, or those before the first with a number."""
    best = 0
    for y in sorted(inner_rules, reverse=True):  # the lowest rule with no row of numbers over it
        above = sum(1 for r in rows if min(w.y0 for w in r) > y)
        if 0 < above < len(rows) and above <= max(3, len(rows) // 2) and not any(map(_is_numeric_row, rows[:above])):
            best = max(best, above)
    if best:
        return best
    for k, row in enumerate(rows[: max(2, len(rows) // 2 + 1)]):  # a header's cells may stack in lines
        if _is_numeric_row(row):
            return max(1, k)
    return 1


def _phrases(row: list[_Word], cuts: list[float] = ()) -> list[_Word]:
    """A row's words joined where they stand a word space apart, never across a column boundary."""
    out: list[_Word] = []
    for w in row:
        apart = any(out[-1].x1 <= c <= w.x0 for c in cuts) if out else True
        if out and not apart and w.x0 - out[-1].x1 < 0.6 * max(w.size, out[-1].size):
            p = out[-1]
            out[-1] = _Word(f"{p.text} {w.text}", p.x0, min(p.y0, w.y0), w.x1, max(p.y1, w.y1), p.size)
        else:
            out.append(w)
    return out


def _grid(rows: list[list[_Word]], cuts: list[float], headers: int, partial: list[Box]) -> list[list[str]]:
    """Cells per row: body words go to the column of their centre; a header phrase to every column it spans
    (its own width, or the width of a partial rule just under it)."""
    ncols = len(cuts) + 1
    extents: list[list[float]] = [[float("inf"), float("-inf")] for _ in range(ncols)]  # the body's ink per column
    for row in rows[headers:]:
        for w in row:
            extent = extents[_column((w.x0 + w.x1) / 2, cuts)]
            extent[0], extent[1] = min(extent[0], w.x0), max(extent[1], w.x1)
    grid: list[list[str]] = []
    for k, row in enumerate(rows):
        cells: list[list[str]] = [[] for _ in range(ncols)]
        if k < headers:
            for p in _phrases(row, cuts):
                x0, x1 = p.x0, p.x1
                for r in partial:
                    if p.y0 - 2.0 * p.size < r[1] < p.y0 + 1 and overlap(r[0], r[2], p.x0, p.x1) > 0.5 * (p.x1 - p.x0):
                        x0, x1 = min(x0, r[0]), max(x1, r[2])
                span = [j for j, (a, b) in enumerate(extents) if b > a and overlap(a, b, x0, x1) >= 0.5 * (b - a)]
                if len(span) < 2:
                    span = [_column((p.x0 + p.x1) / 2, cuts)]
                for j in span:
                    cells[j].append(p.text)
        else:
            column, prev = 0, None
            for w in row:  # a cell over two columns (its words a word space apart) stays whole, in the first
                if prev is None or not 0 <= w.x0 - prev.x1 < 0.3 * max(w.size, prev.size):
                    column = _column((w.x0 + w.x1) / 2, cuts)
                cells[column].append(w.text)
                prev = w
        grid.append([" ".join(c).replace(HYPHEN + " ", HYPHEN) for c in cells])  # a word cut at a cell's line end
    return grid


def _bands(rows: list[list[_Word]], rules: list[float]) -> list[list[_Word]]:
    """Lines between the same two rules as one row (its cells' text wraps), top to bottom; a hyphen at a
    line's end is a line-break hyphen (the cleaner joins the word, or keeps a compound's hyphen)."""
    for row in rows:
        last = row[-1]
        if last.text[-2:-1].isalpha() and last.text.endswith("-"):
            last.text = last.text[:-1] + HYPHEN
    return [sum(band, []) for _, band in groupby(rows, key=lambda row: sum(y > row[0].cy for y in rules))]


def _merge_header(header: list[list[str]]) -> list[list[str]]:
    """Header rows as one (Markdown has one): each column's texts top to bottom, spanning ones repeated."""
    return [[" ".join(r[j] for r in header if r[j]) for j in range(len(header[0]))]] if len(header) > 1 else header


# -- finding tables --------------------------------------------------------------------------------


def _table_like(chars: PageChars, line: Line) -> bool:
    """A line whose words stand apart in two or more groups (cells), or a short line of numbers."""
    words = _words(chars, (line.x0 - 1, line.y0 - 1, line.x1 + 1, line.y1 + 1))
    if len(_phrases(sorted(words, key=lambda w: w.x0))) >= 2:
        return True
    return bool(words) and all(is_number(w.text) for w in words)


def _unruled_body(chars: PageChars, lines: list[Line], caption: list[Line]) -> list[Line]:
    """The lines of a table without rules: the run of table-like lines just under or over its caption."""
    first, last = caption[0], caption[-1]
    size = first.size or 10.0
    taken = {id(x) for x in caption}
    column = [x for x in lines if id(x) not in taken and overlap(first.x0, first.x1, x.x0, x.x1) > 0]
    below = sorted((x for x in column if x.y1 <= last.y0 + 1), key=lambda x: -x.y1)
    above = sorted((x for x in column if x.y0 >= first.y1 - 1), key=lambda x: x.y0)
    best: list[Line] = []
    for run, edge, down in ((below, last.y0, True), (above, first.y1, False)):
        found: list[Line] = []
        prev = edge
        loose = 0
        for x in run:
            gap = (prev - x.y1) if down else (x.y0 - prev)
            if gap > 2.5 * size or x.role or x.furniture or x.heading_level:
                break
            if gap < -0.3 * size and found:  # a piece of a row already taken (a header set in fragments)
                found.append(x)
                prev = min(prev, x.y0) if down else max(prev, x.y1)
                continue
            if _table_like(chars, x):
                loose = 0
            else:
                loose += 1
                if loose > 1:
                    break
            found.append(x)
            prev = min(prev, x.y0) if down else max(prev, x.y1)
        while found and not _table_like(chars, found[-1]):
            found.pop()
        if len(found) >= 2 and len(found) > len(best):
            best = found
    return best


def _captions(lines: list[Line]) -> list[list[Line]]:
    starts = [i for i, x in enumerate(lines) if TABLE_CAPTION.match(x.plain.strip())]
    return [caption_lines(lines, i) for i in starts]


def find_tables(
    drawn: list[tuple[int, int, Box]], chars: PageChars, lines: list[Line], number: int, open_table: Table | None
) -> list[Table]:
    """The page's tables (captioned ones, and the top one going on from `open_table`), in reading order,
    its rules among its `drawn_objects`; the lines each holds get role "table". A page with neither is not
    looked at."""
    captions = _captions(lines)
    if not captions and open_table is None:
        return []
    horizontal, vertical = rulings(drawn)
    captions = [_before_rule(c, horizontal) for c in captions]
    prose = [x for x in lines if _sentence(x) and not _in_cell(x, vertical)]
    figures = [x for x in lines if FIGURE_CAPTION.match(x.plain.strip())]  # a plot's frame above one: no table's
    regions = _ruled_regions(horizontal, vertical, [*(c[0] for c in captions), *figures], prose, lines)
    running = {id(x) for x in prose}
    tables: list[Table] = []
    used: set[int] = set()
    side = _caption_side(captions, regions)
    for caption in captions:
        first = caption[0]
        size = first.size or 10.0
        near = []
        for k, (box, _) in enumerate(regions):
            gap = _gap(box, caption, side)
            if k not in used and gap < _CAPTION_REACH * size * 2:
                near.append((gap, k))
        table = None
        for _, k in sorted(near):  # the nearest ruled region that reads as a table (not a plot's frame)
            box, rules = regions[k]
            table = _ruled_table(chars, lines, box, rules, caption, number, running)
            if table is not None:
                used.add(k)
                break
        if table is None:
            body = _unruled_body(chars, lines, caption)
            if body:
                box = reduce(union, [(x.x0, x.y0, x.x1, x.y1) for x in body])
                table = _table(chars, box, [], caption, number, body)
        if table is not None:
            tables.append(table)
    if open_table is not None:
        tops = [(k, r) for k, r in enumerate(regions) if k not in used]
        upright = [x for x in lines if not x.rotated and not x.furniture]
        if tops and upright:
            k, (box, rules) = max(tops, key=lambda kr: kr[1][0][3])
            above = [x for x in upright if x.y0 > box[3] + 2]
            if not above:  # nothing on the page before it: the table of the page before goes on
                table = _ruled_table(chars, lines, box, rules, [], number, running)
                if table is not None:
                    tables.append(table)
    body_bottom = min((x.y0 for x in lines if not x.furniture and not x.rotated), default=0.0)
    for table in tables:
        table.open_end = table.box[1] <= body_bottom + 2
    return sorted(tables, key=lambda t: min((x.index for x in t.lines), default=0))


def _sentence(line: Line) -> bool:
    """A line of running text: ten words or more, most of them words of letters, none set wide apart (a
    header row of words stands apart in columns: the line reader marks such a gap in `names`)."""
    words = line.plain.split()
    if len(words) < 10 or sum(w.strip(".,;:()").isalpha() for w in words) < 0.7 * len(words):
        return False
    return line.names.count(", ") <= line.text.count(", ")


def _in_cell(line: Line, vertical: list[Box]) -> bool:
    """A line beside a vertical rule, or across one: a table's cell (its text may be a sentence)."""
    cy = (line.y0 + line.y1) / 2
    return any(v[1] <= cy <= v[3] and line.x0 - _CELL_PAD <= v[0] <= line.x1 + _CELL_PAD for v in vertical)


def _spread(caption: list[Line]) -> Box:
    return (min(x.x0 for x in caption), caption[-1].y0, max(x.x1 for x in caption), caption[0].y1)


def _gap(box: Box, caption: list[Line], side: str) -> float:
    """How far a region is from a caption: under it or over it (the page's `side`: where captions sit
    under their tables, a region under a caption is another's), or beside it (a side caption)."""
    spread = _spread(caption)
    dx = max(0.0, box[0] - spread[2], spread[0] - box[2])
    if dx == 0.0:
        below = box[3] <= spread[1] + 3  # the region under the caption
        if (side == "below" and below) or (side == "above" and not below):
            return float("inf")
        return max(0.0, box[1] - spread[3], spread[1] - box[3])
    return dx if overlap(box[1], box[3], spread[1], spread[3]) > 0 else float("inf")


def _caption_side(captions: list[list[Line]], regions: list[tuple[Box, list[Box]]]) -> str:
    """Whether this page's captions sit "below" their tables or "above" them: the side that pairs more."""
    counts = {}
    for side in ("below", "above"):
        counts[side] = sum(
            any(_gap(box, c, side) < _CAPTION_REACH * (c[0].size or 10.0) * 2 for box, _ in regions) for c in captions
        )
    return "above" if counts["above"] > counts["below"] else "below"


def _before_rule(caption: list[Line], horizontal: list[Box]) -> list[Line]:
    """A caption ends at a rule: the line under the rule is the table's header, however tightly it is set."""
    for k in range(1, len(caption)):
        upper, lower = caption[k - 1], caption[k]
        if any(
            lower.y1 - 1 <= (r[1] + r[3]) / 2 <= upper.y0 + 1 and overlap(r[0], r[2], lower.x0, lower.x1) > 0
            for r in horizontal
        ):
            return caption[:k]
    return caption


def _ruled_table(
    chars: PageChars, lines: list[Line], box: Box, rules: list[Box], caption: list[Line], number: int, prose: set[int]
) -> Table | None:
    """The table in a ruled region, grown by the rows set just over or under its rules (`prose`: the ids of
    the page's lines of running text, never a row)."""
    taken = {id(x) for x in caption}
    # a table ruled only under its header, or over its last row: the line just over or under the rules
    free = [
        x
        for x in lines
        if id(x) not in taken
        and not x.role
        and not TABLE_CAPTION.match(x.plain.strip())
        and id(x) not in prose
        and overlap(box[0], box[2], x.x0, x.x1) > 0
    ]
    grown = True
    while grown:  # line by line, while the next one is as close as a row's
        over = [x for x in free if 0 <= x.y0 - box[3] < 0.8 * (x.size or 10.0)]
        under = [x for x in free if -0.3 * (x.size or 10.0) <= box[1] - x.y1 < 0.8 * (x.size or 10.0)]
        grown = bool(over or under)
        box = (box[0], min([box[1], *(x.y0 for x in under)]), box[2], max([box[3], *(x.y1 for x in over)]))
        free = [x for x in free if x not in over and x not in under]
    inside = [x for x in lines if holds(box, x, 2.0) and not x.furniture]
    return _table(chars, box, rules, caption, number, inside)


def _table(
    chars: PageChars, box: Box, rules: list[Box], caption: list[Line], number: int, body: list[Line]
) -> Table | None:
    words = _words(chars, (box[0] - 2, box[1] - 2, box[2] + 2, box[3] + 2))
    taken = {id(x) for x in caption}
    words = [w for w in words if not any(_in_line(w, c) for c in caption)]
    rows = _rows(words)
    if not rows:
        return None
    width = box[2] - box[0]
    horizontal = [r for r in rules if r[3] - r[1] <= _THIN and r[2] - r[0] >= _RULE_MIN]
    inner = [
        (r[1] + r[3]) / 2
        for r in horizontal
        if r[2] - r[0] >= 0.6 * width and box[1] + 2 < (r[1] + r[3]) / 2 < box[3] - 2
    ]
    partial = [r for r in horizontal if r[2] - r[0] < 0.6 * width]
    sides = [(r[0] + r[2]) / 2 for r in rules if r[2] - r[0] <= _THIN and r[3] - r[1] > _THIN]
    banded = len(inner) >= 2 and any(map(_sentence, body))  # cells of running text, a rule between rows
    headers = 0 if banded else _header_count(rows, inner)
    cuts = _separators(rows[headers:] or rows, box, sides)
    grid = _grid(_bands(rows, inner) if banded else rows, cuts, headers, partial)
    kept = [j for j in range(len(cuts) + 1) if any(r[j] for r in grid[headers:] or grid)]  # no empty column
    grid = [[r[j] for j in kept] for r in grid]
    if len(grid) < 2 or len(kept) < 2 or sum(sum(map(bool, r)) >= 2 for r in grid) < len(grid) / 2:
        return None  # a plot's frame or a box of text: not rows of cells
    held = [x for x in body if id(x) not in taken]
    for x in [*caption, *held]:
        x.role = "table"
    return Table(number, box, caption, _merge_header(grid[:headers]), grid[headers:], [*caption, *held], pages=[number])


def _in_line(w: _Word, line: Line) -> bool:
    return line.x0 - 1 <= (w.x0 + w.x1) / 2 <= line.x1 + 1 and line.y0 - 1 <= w.cy <= line.y1 + 1


def continue_table(table: Table, more: Table) -> None:
    """`more` (the top of the next page, no caption) is the rest of `table`: its rows join, a header the
    page repeats is left out."""
    rows = more.rows
    if more.header and not (table.header and more.header[0] == table.header[0]):
        rows = [*more.header, *rows]
    table.rows += rows
    table.lines += more.lines
    table.pages.append(more.page)
    table.open_end = more.open_end


def markdown(table: Table, clean) -> str:
    """The table as its caption, a blank line, and a Markdown table (`clean` cleans each text)."""
    caption = " ".join(clean(x.plain) for x in table.caption).strip()
    width = max((len(r) for r in [*table.header, *table.rows]), default=0)
    header = table.header[0] if table.header else [""] * width

    def row(cells: list[str]) -> str:
        cells = [*cells, *[""] * (width - len(cells))]
        return "| " + " | ".join(clean(c).replace("|", "\\|").strip() for c in cells) + " |"

    out = [row(header), "| " + " | ".join(["---"] * width) + " |", *(row(r) for r in table.rows)]
    return f"{caption}\n\n" + "\n".join(out) if caption else "\n".join(out)
