"""Where a PDF page draws its figures, so the text inside them is never taken for a heading.

A plot's panel labels and axis titles are often bold or large and stand alone ("ViT-L/16", "q(x)"):
by typography they look like headings. What gives them away is where they are: inside the
region a figure's drawing covers. PDFium lists the page's objects with their bounds; images and
included graphics (form objects) are regions as they are, and paths (a plot's lines, axes, bars)
are grouped by overlap into one region per drawing. Thin groups (rules, fraction bars, underlines)
and page-sized ones (a frame around the page) are not figures, nor is a box around prose (a framed
abstract): its lines are long.
"""

from __future__ import annotations

import re

import numpy as np
import pypdfium2.raw as pdfium_c

from thoth.writes.parsers.pdf.calls import OBJECT_TYPE, fast, page_objects
from thoth.writes.parsers.pdf.layout import Line

Box = tuple[float, float, float, float]  # left, bottom, right, top
_MIN_SIDE = 30.0  # points: smaller drawings are rules, bars and marks, not figures
_REACH = 3.0  # points: paths this close belong to one drawing
_MAX_SHARE = 0.7  # of the page's area: a larger region frames the page
_MARGIN = 14.0  # points around a region where its tick labels and axis titles are
_WORD = re.compile(r"^[(\"“‘]?[^\W\d_]+(?:[-'’][^\W\d_]+)*[.,;:!?)\"”’]*$")  # letters only: no number, no cell


_DRAWN = (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM)


_BOUNDS = fast(pdfium_c.FPDFPageObj_GetBounds, "int(*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t)")


def drawn_objects(page) -> list[tuple[int, int, Box]]:
    """The page's paths, images and included graphics (form objects) as (object, its type, its bounds: left,
    bottom, right, top), those PDFium gives bounds for; the calls an object are made by `map`, a loop in C."""
    objects = page_objects(page.raw)
    kinds = np.fromiter(map(OBJECT_TYPE, objects), np.int64, len(objects))
    drawn = (kinds == _DRAWN[0]) | (kinds == _DRAWN[1]) | (kinds == _DRAWN[2])  # (np.isin costs more here)
    objects, kinds = np.asarray(objects, np.uint64)[drawn].tolist(), kinds[drawn].tolist()
    sides = np.zeros((len(objects), 4), np.float32)
    at = list(range(sides.ctypes.data, sides.ctypes.data + 16 * len(objects), 16))
    found = list(map(_BOUNDS, objects, at, [a + 4 for a in at], [a + 8 for a in at], [a + 12 for a in at]))
    return [(o, k, box) for o, k, box, ok in zip(objects, kinds, map(tuple, sides.tolist()), found, strict=True) if ok]


def _near(a: Box, b: Box) -> bool:
    return a[0] - _REACH <= b[2] and b[0] - _REACH <= a[2] and a[1] - _REACH <= b[3] and b[1] - _REACH <= a[3]


def union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    """How much two spans, a0..a1 and b0..b1, overlap (0 when apart)."""
    return max(0.0, min(a1, b1) - max(a0, b0))


def holds(box: Box, line: Line, margin: float = 0.0) -> bool:
    """Whether the centre of `line` lies in `box`, widened by `margin` on every side."""
    x, y = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    return box[0] - margin <= x <= box[2] + margin and box[1] - margin <= y <= box[3] + margin


def _group(boxes: list[Box]) -> list[Box]:
    """Boxes merged while any two overlap (within `_REACH`)."""
    regions: list[Box] = []
    for box in sorted(boxes):
        for i, region in enumerate(regions):
            if _near(region, box):
                regions[i] = union(region, box)
                break
        else:
            regions.append(box)
    merged = True
    while merged:  # a grown region may now reach another
        merged = False
        for i in range(len(regions)):
            for j in range(i + 1, len(regions)):
                if _near(regions[i], regions[j]):
                    regions[i] = union(regions[i], regions.pop(j))
                    merged = True
                    break
            if merged:
                break
    return regions


def graphic_regions(drawn: list[tuple[int, int, Box]], width: float, height: float) -> list[Box]:
    """The page's figure regions (from `drawn_objects`): images, included graphics and groups of paths, big
    enough to hold text."""
    return [
        r
        for r in _group([box for _, _, box in drawn])
        if r[2] - r[0] >= _MIN_SIDE
        and r[3] - r[1] >= _MIN_SIDE
        and (r[2] - r[0]) * (r[3] - r[1]) < _MAX_SHARE * width * height
    ]


def _inside(line: Line, region: Box) -> bool:
    if holds(region, line):
        return True
    # axis ticks and titles sit just outside a plot's frame: a few words, not a sentence's end; panels' titles
    # side by side are set apart (the line reader marks the gap in `names`), their line over the panels
    y = (line.y0 + line.y1) / 2
    if not region[1] - _MARGIN <= y <= region[3] + _MARGIN or line.plain.rstrip().endswith("."):
        return False
    if line.names.count(", ") > line.text.count(", "):
        over = line.x0 <= region[2] and region[0] <= line.x1
        return over and all(len(part.split()) <= 3 for part in line.names.split(", "))
    return holds(region, line, _MARGIN) and len(line.plain.split()) <= 3


def _prose(line: Line) -> bool:
    """A line of a sentence: eight words or more. Numbers and cells like "Top-1" or "7.96%" are no words,
    so a table's rows (its rules are a drawing) are not taken for prose: "Deep Image low-res 256 - 1 - 7.96%"."""
    tokens = line.plain.split()
    return len(tokens) >= 8 and sum(t.isalpha() or _WORD.match(t) is not None for t in tokens) >= 8


def mark_figure_text(lines: list[Line], regions: list[Box]) -> None:
    """Set `in_figure` on the lines a figure region holds, unless the region holds prose (a framed text)."""
    for region in regions:
        inside = [x for x in lines if not x.furniture and _inside(x, region)]
        prose = sum(map(_prose, inside))
        if inside and prose <= len(inside) / 2:
            for line in inside:
                line.in_figure = True
