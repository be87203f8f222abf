"""A PDF page's lines from its characters (chars.py), with no Python step a character.

Most printed lines have one font size, nothing raised and no wide gap: their size, weight, letters
and bounds are reduced over the page's arrays at once (numpy's `reduceat` over each line's range of
characters), and their text is the characters joined. Only the others are read line by line
(`_page_line`), and of those only a line with an accent to move or a raised letter character by
character (layout.py's `make_line`). What a line is and what the layout says about it:
layout.py.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from itertools import pairwise, repeat
from typing import NamedTuple

import numpy as np

from thoth.writes.parsers.pdf.chars import Char, PageChars, char_angle, read_page
from thoth.writes.parsers.pdf.layout import (
    ACCENTS,
    MARKS,
    RAISED,
    Line,
    after_word,
    make_line,
    merge,
    mergeable,
    new_line,
)
from thoth.writes.parsers.pdf.text import HYPHEN


def read_lines(textpage, page: int, hidden: Counter, chars: PageChars | None = None) -> list[Line]:
    """The page's lines in PDFium's reading order, fragments of one printed line merged; characters a
    person cannot see are left out and counted in `hidden` (hidden.py). `chars`: the page's
    characters, when the caller has read them already."""
    chars = read_page(textpage, hidden) if chars is None else chars
    groups = _line_breaks(chars)
    lines: list[Line] = []
    angles = map(char_angle, repeat(chars.handle), [start for start, _ in groups])  # a line's first character's
    for (start, end), facts, angle in zip(groups, _line_facts(chars, groups), angles, strict=True):
        joined = "".join(chars.chs[start:end])
        accents = not ACCENTS.isdisjoint(joined)
        if facts is None and not accents:
            continue  # nothing but blanks
        if accents or (facts.raised and "" in chars.chs[start:end]):  # ('': half of an emoji, rare)
            line = make_line(chars.chars(start, end, accents), page, angle)
        elif facts.raised:  # raised letters, maybe wide gaps too
            line = _marked_line(chars.chs[start:end], start, facts, page, angle)
        elif facts.cuts:  # wide gaps: a space in the text, a name's end for the author reader
            pieces = ["".join(chars.chs[p:q]) for p, q in pairwise([start, *facts.cuts, end])]
            text = " ".join(pieces)
            line = new_line(text, text, ", ".join(pieces), *facts.looks, page, angle)
        else:  # most lines: the three texts are the characters as they come
            line = new_line(joined, joined, joined, *facts.looks, page, angle)
        if line is not None:
            if lines and mergeable(lines[-1], line):
                merge(lines[-1], line)
            else:
                lines.append(line)
    for i, line in enumerate(lines):
        line.index = i
    return lines


class _Facts(NamedTuple):
    """What a line's characters say about it, as `make_line` would find it."""

    size: float
    bold: bool
    top: float  # its letters' largest size (small caps: the capitals')
    bounds: tuple[float, float, float, float]  # left, bottom, right, top edge
    cuts: list[int] | tuple  # the character indices where a wide gap cuts it
    raised: list[int] | tuple  # the indices of its raised letters: smaller ones above the baseline

    @property
    def looks(self) -> tuple:
        """size, bold, top and bounds, as `new_line` takes them."""
        return self.size, self.bold, self.top, self.bounds


def _marked_line(chs: list[str], start: int, facts: _Facts, page: int, angle: float) -> Line:
    """A line with raised letters (`facts.raised`), as `make_line` reads it: a raised mark after a word
    stays in `plain`, raised ('competitions¹'); every raised letter ends a name in `names`; a wide gap
    (`facts.cuts`) is a space, or a name's end."""
    cuts, ups = facts.cuts, facts.raised
    text, names = list(chs), list(chs)
    for i in ups:
        names[i - start] = ", "
    for i in reversed(cuts):
        text.insert(i - start, " ")
        names.insert(i - start, ", ")
    plain = list(text)
    for i in ups:  # in order: a mark's test reads the marks before it as they were set
        at = i - start + bisect_right(cuts, i)
        ch = plain[at]
        if ch == "," or (ch in MARKS or ch.isdigit()) and after_word(plain[max(0, at - 12) : at]):
            plain[at] = ch.translate(RAISED)
    return new_line("".join(text), "".join(plain), "".join(names), *facts.looks, page, angle)


def _line_facts(chars: PageChars, groups: list[tuple[int, int]]) -> list[_Facts | None]:
    """Per line (an index range of `groups`): None without ink, else its `_Facts`, computed over the
    page's arrays at once."""
    out: list[_Facts | None] = [None] * len(groups)
    n = len(chars.ink)
    if not n or not groups:
        return out
    bounds = np.asarray(groups)
    first, after = np.searchsorted(chars.ink, bounds[:, 0]), np.searchsorted(chars.ink, bounds[:, 1])
    has = after > first
    at, count = first[has], (after - first)[has]  # lines with ink: their ranges tile the ink in order
    line_of = np.repeat(np.arange(len(at)), count)
    sizes, weights = chars.ink_sizes, chars.ink_weights
    left, top, right, bottom = (chars.ink_boxes[:, k] for k in range(4))
    smallest, largest = np.minimum.reduceat(sizes, at), np.maximum.reduceat(sizes, at)
    size = np.where(smallest == largest, np.round(smallest * 2) / 2 + 0.0, 0.0)  # most lines: one size
    size += _modes(sizes, line_of, len(at), (smallest != largest)[line_of])
    small = 0.85 * size
    has_small = (smallest < small)[line_of]  # only there can a letter be raised: the baseline is needed
    base = _modes(bottom, line_of, len(at), has_small & (np.abs(sizes - size[line_of]) < 0.3))
    up = (sizes < small[line_of]) & (bottom > (base + 0.1 * size)[line_of])
    raised = _by_line(line_of[up], chars.ink[up], len(at))
    gaps = np.full(n, -np.inf)
    gaps[:-1] = left[1:] - right[:-1]
    gaps[after[has] - 1] = -np.inf  # the gap to the next line's first character is no gap of this one
    wide = np.flatnonzero(gaps > (1.2 * size)[line_of])
    cuts = _by_line(line_of[wide], chars.ink[wide + 1], len(at))
    light, heavy = np.minimum.reduceat(weights, at), np.maximum.reduceat(weights, at)
    bold_share = np.add.reduceat((weights >= 600).astype(np.int64), at) / count
    bold = np.where(light == heavy, light >= 600, bold_share > 0.8)
    letters = np.maximum.reduceat(np.where(chars.ink_alpha, sizes, -np.inf), at)
    tops = np.where(letters > -np.inf, letters, size)  # the letters' largest size (small caps: the capitals')
    bounds = zip(
        np.minimum.reduceat(left, at).tolist(),
        np.minimum.reduceat(bottom, at).tolist(),
        np.maximum.reduceat(right, at).tolist(),
        np.maximum.reduceat(top, at).tolist(),
        strict=True,
    )
    facts = map(_Facts, size.tolist(), bold.tolist(), tops.tolist(), bounds, cuts, raised)
    for k, fact in zip(np.flatnonzero(has).tolist(), facts, strict=True):
        out[k] = fact
    return out


def _by_line(line_of: np.ndarray, indices: np.ndarray, lines: int) -> list[list[int] | tuple]:
    """`indices` grouped by their line (`line_of`, ascending), in order; () for a line with none (most)."""
    out: list = [()] * lines
    for line, k in zip(line_of.tolist(), indices.tolist(), strict=True):
        if not out[line]:
            out[line] = []
        out[line].append(k)
    return out


def _modes(values: np.ndarray, line_of: np.ndarray, lines: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Per line, `_mode` of its values (where `mask`): the most common to the half point, the first seen
    winning a tie; 0.0 for a line with none."""
    where = np.arange(len(values))
    if mask is not None:
        values, line_of, where = values[mask], line_of[mask], where[mask]
    out = np.zeros(lines)
    if not len(values):
        return out
    keys = np.round(values * 2) / 2 + 0.0  # + 0.0: never -0.0
    order = np.lexsort((where, keys, line_of))
    line, key, seen = line_of[order], keys[order], where[order]
    starts = np.flatnonzero(np.concatenate(([True], (line[1:] != line[:-1]) | (key[1:] != key[:-1]))))
    counts = np.diff(np.append(starts, len(order)))
    line, key, seen = line[starts], key[starts], seen[starts]  # each (line, value): its first position
    best = np.lexsort((seen, -counts, line))
    firsts = best[np.concatenate(([True], line[best][1:] != line[best][:-1]))]
    out[line[firsts]] = key[firsts]
    return out


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
    a line's height away (the page number under a page's last line, 'high-2'), or on a line below in
    another size (a footnote under a column's last line, 'us-12All texts': a word's rest keeps its
    size), the line ends there."""
    height = max(a.box[3] - a.box[1], b.box[3] - b.box[1])
    if b.box[3] < a.box[1] - height or b.box[1] > a.box[3] + height:
        return True
    return b.box[3] < (a.box[1] + a.box[3]) / 2 and not 0.85 * a.size <= b.size <= a.size / 0.85
