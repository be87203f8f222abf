"""A PDF page's lines from its characters (pdf_chars.py), with no Python step a character.

Most printed lines have one font size, nothing raised and no wide gap: their size, weight, letters
and bounds are reduced over the page's arrays at once (numpy's `reduceat` over each line's range of
characters), and their text is the characters joined. Only the others are read line by line
(`_page_line`), and of those only a line with an accent to move or a raised letter character by
character (pdf_layout.py's `_make_line`). What a line is and what the layout says about it:
pdf_layout.py.
"""

from __future__ import annotations

from itertools import pairwise
from operator import sub

import numpy as np

from thoth.writes.parsers.pdf_chars import Char, PageChars, char_angle, read_page
from thoth.writes.parsers.pdf_layout import _ACCENTS, Line, _line, _make_line, _merge, _mergeable, _mode, new_line
from thoth.writes.parsers.pdf_text import HYPHEN


def read_lines(textpage, page: int) -> list[Line]:
    """The page's lines in PDFium's reading order, fragments of one printed line merged."""
    chars = read_page(textpage)
    groups = _line_breaks(chars)
    found, inks = _plain_lines(chars, groups)
    lines: list[Line] = []
    for (start, end), facts, ink in zip(groups, found, inks, strict=True):
        angle = char_angle(chars.address, start)
        joined = "".join(chars.chs[start:end])
        if facts is not None and _ACCENTS.isdisjoint(joined):
            line = new_line(joined, joined, joined, facts[0], facts[1], facts[2], facts[3:], page, angle)
        else:
            line = _page_line(chars, start, end, ink, page, angle)
        if line is not None:
            if lines and _mergeable(lines[-1], line):
                _merge(lines[-1], line)
            else:
                lines.append(line)
    for i, line in enumerate(lines):
        line.index = i
    return lines


def _plain_lines(chars: PageChars, groups: list[tuple[int, int]]) -> tuple[list[tuple | None], list[tuple[int, int]]]:
    """Per line (an index range of `groups`): (size, bold, top, left, bottom, right, top edge) where its
    characters have one size, none is raised and no gap is wide (the three texts are then the characters
    as they come), else None. The same figures `_make_line` gives such a line, computed page-wide. And
    per line the range of the page's ink it holds."""
    out: list[tuple | None] = [None] * len(groups)
    n = len(chars.ink)
    if not n or not groups:
        return out, [(0, 0)] * len(groups)
    bounds = np.asarray(groups)
    first, after = np.searchsorted(chars.ink, bounds[:, 0]), np.searchsorted(chars.ink, bounds[:, 1])
    has = after > first
    at, count = first[has], (after - first)[has]  # lines with ink: their ranges tile the ink in order
    sizes, weights = chars.ink_sizes, chars.ink_weights
    smallest, largest = np.minimum.reduceat(sizes, at), np.maximum.reduceat(sizes, at)
    size = np.round(smallest * 2) / 2 + 0.0  # `_mode` of one value (+ 0.0: never -0.0)
    left, top, right, bottom = (chars.ink_boxes[:, k] for k in range(4))
    gaps = np.full(n, -np.inf)
    gaps[:-1] = left[1:] - right[:-1]
    gaps[after[has] - 1] = -np.inf  # the gap to the next line's first character is no gap of this one
    widest = np.where(count == 1, 0.0, np.maximum.reduceat(gaps, at))
    plain = (smallest == largest) & (smallest >= 0.85 * size) & (widest <= 1.2 * size)
    light, heavy = np.minimum.reduceat(weights, at), np.maximum.reduceat(weights, at)
    bold_share = np.add.reduceat((weights >= 600).astype(np.int64), at) / count
    bold = np.where(light == heavy, light >= 600, bold_share > 0.8)
    letters = np.logical_or.reduceat(chars.ink_alpha, at)
    tops = np.where(letters, smallest, size)
    facts = zip(
        size.tolist(),
        bold.tolist(),
        tops.tolist(),
        np.minimum.reduceat(left, at).tolist(),
        np.minimum.reduceat(bottom, at).tolist(),
        np.maximum.reduceat(right, at).tolist(),
        np.maximum.reduceat(top, at).tolist(),
        strict=True,
    )
    for k, fact, ok in zip(np.flatnonzero(has).tolist(), facts, plain.tolist(), strict=True):
        if ok:
            out[k] = fact
    return out, list(zip(first.tolist(), after.tolist(), strict=True))


def _page_line(chars: PageChars, start: int, end: int, ink: tuple[int, int], page: int, angle: float) -> Line | None:
    """The line of characters start..end (the page's ink a..b) from the page's arrays; a line with an
    accent to move or a raised letter is read character by character (`_make_line`)."""
    joined = "".join(chars.chs[start:end])
    accents = not _ACCENTS.isdisjoint(joined)
    if not accents:
        a, b = ink
        if a == b:
            return None
        sizes = chars.ink_sizes[a:b].tolist()
        size = _mode(sizes)
        small, wide = 0.85 * size, 1.2 * size
        lefts, tops, rights, bottoms = chars.ink_boxes[a:b].T.tolist()
        gaps = list(map(sub, lefts[1:], rights))
        boxes = (lefts, bottoms, rights, tops)
        where = chars.ink[a:b].tolist()
        letters, weights = [chars.chs[i] for i in where], chars.ink_weights[a:b].tolist()
        if min(sizes) >= small and max(gaps, default=0.0) <= wide:
            # nothing raised, no wide gap, so the three texts are the characters as they come
            return _line(joined, joined, joined, weights, letters, sizes, size, boxes, page, angle)
        if min(sizes) >= small or not _raised(sizes, bottoms, size):
            # small letters on the line (subscripts) but none raised: the texts differ only at wide gaps
            cuts = [where[k + 1] - start for k, gap in enumerate(gaps) if gap > wide]
            pieces = ["".join(chars.chs[start + p : start + q]) for p, q in pairwise([0, *cuts, end - start])]
            text = " ".join(pieces)
            return _line(text, text, ", ".join(pieces), weights, letters, sizes, size, boxes, page, angle)
    return _make_line(chars.chars(start, end, accents), page, angle)


def _raised(sizes: list[float], bottoms: list[float], size: float) -> bool:
    """Whether a letter smaller than the line's size sits above its baseline (as `_make_line` reads one)."""
    base = _mode([y for y, z in zip(bottoms, sizes, strict=True) if abs(z - size) < 0.3])
    small, raised = 0.85 * size, base + 0.1 * size
    return any(z < small and y > raised for z, y in zip(sizes, bottoms, strict=True))


def _line_breaks(chars: PageChars) -> list[tuple[int, int]]:
    """The page's index ranges between PDFium's line breaks, cut again after a line-break hyphen that
    the next character jumps away from (`_jumps`)."""
    groups: list[tuple[int, int]] = []
    for start, end in chars.groups:
        if HYPHEN not in "".join(chars.chs[start:end]):
            groups.append((start, end))
            continue
        hyphens = [i for i in range(start, end) if chars.chs[i] == HYPHEN]
        cuts = [start]
        for h in hyphens:
            j = h + 1
            while j < end and (not chars.chs[j] or chars.chs[j].isspace()):
                j += 1
            if j < end and _jumps(chars.char(h), chars.char(j)):
                cuts.append(j)
        cuts.append(end)
        groups += pairwise(cuts)
    return groups


def _jumps(a: Char, b: Char) -> bool:
    """After a line-break hyphen `a` PDFium gives no line break: where the next character sits more than
    a line's height away (the page number under a page's last line, 'high-2'), the line ends there."""
    height = max(a.box[3] - a.box[1], b.box[3] - b.box[1])
    return b.box[3] < a.box[1] - height or b.box[1] > a.box[3] + height
