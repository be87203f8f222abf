"""A PDF's figures as pictures: the region over (or under) each "Figure N" caption, cut from the page as a PNG.

The figure's box is what the page draws there (drawings.py's regions: images, included graphics and
groups of paths) together with the labels set around it; the caption names it. The crop is rendered by
PDFium at `_SCALE` (144 dpi: a plot's ticks stay legible) and scaled down to `MAX_SIDE` pixels, so one
picture stays small; a document keeps at most `MAX_FIGURES`.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from functools import reduce

from thoth.writes.parsers.pdf.drawings import Box, holds, overlap, union
from thoth.writes.parsers.pdf.layout import Line

FIGURE_CAPTION = re.compile(r"^(?:Figure|Fig\.)\s*(\d{1,3})[:.]\s", re.I)
MAX_SIDE = 1600  # pixels: a larger crop is scaled down to this
MAX_FIGURES = 60  # per document: a longer catalogue keeps its captions as text only
_SCALE = 2.0  # 144 dpi
_REACH = 60.0  # points between a caption and the drawing it names
_LABEL_MARGIN = 14.0  # points around a drawing where its ticks and axis titles are


@dataclass(frozen=True)
class FigureImage:
    """A figure cut from its page: a PNG named by its content hash, its caption's label, page and box."""

    name: str  # "<sha256>.png"
    label: str  # "Figure 3"
    page: int
    box: Box  # left, bottom, right, top, in PDF points
    width: int  # pixels
    height: int
    png: bytes


def figure_boxes(lines: list[Line], regions: list[Box]) -> list[tuple[Line, Box]]:
    """Each "Figure N" caption's line with the box of the drawing it names: the regions right over it (or,
    with none there, right under it) that share its column, and the labels around them."""
    out: list[tuple[Line, Box]] = []
    taken: set[int] = set()
    for caption in lines:
        if not FIGURE_CAPTION.match(caption.plain.strip()) or caption.role == "table":
            continue
        above = [
            (r[1] - caption.y1, k)
            for k, r in enumerate(regions)
            if k not in taken and -2 <= r[1] - caption.y1 <= _REACH and _beside(r, caption)
        ]
        below = [
            (caption.y0 - r[3], k)
            for k, r in enumerate(regions)
            if k not in taken and -2 <= caption.y0 - r[3] <= _REACH and _beside(r, caption)
        ]
        found = above or below
        if not found:
            continue
        nearest = regions[min(found)[1]]
        # side-by-side panels over one caption: the regions level with the nearest one
        parts = [k for _, k in found if overlap(regions[k][1], regions[k][3], nearest[1], nearest[3]) > 0]
        taken.update(parts)
        box = reduce(union, [regions[k] for k in parts])
        labels = [(x.x0, x.y0, x.x1, x.y1) for x in lines if x.in_figure and holds(box, x, _LABEL_MARGIN)]
        box = reduce(union, labels, box)
        out.append((caption, box))
    return out


def _beside(region: Box, caption: Line) -> bool:
    """The region shares the caption's column (a caption may be narrower or wider than its drawing)."""
    return overlap(region[0], region[2], caption.x0, caption.x1) > 0.3 * min(
        region[2] - region[0], caption.x1 - caption.x0
    )


def render_figure(page, box: Box, label: str, number: int) -> FigureImage | None:
    """The page's `box` as a PNG (None for a box too small to show anything)."""
    width, height = page.get_width(), page.get_height()
    left, bottom = max(0.0, box[0] - 2), max(0.0, box[1] - 2)
    right, top = min(width, box[2] + 2), min(height, box[3] + 2)
    if right - left < 8 or top - bottom < 8:
        return None
    scale = min(_SCALE, MAX_SIDE / max(right - left, top - bottom))
    bitmap = page.render(scale=scale, crop=(left, bottom, width - right, height - top))
    try:
        image = bitmap.to_pil()
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=6)  # optimize=True doubles the cost for a few percent
    finally:
        bitmap.close()
    png = out.getvalue()
    return FigureImage(
        f"{hashlib.sha256(png).hexdigest()}.png",
        label,
        number,
        (left, bottom, right, top),
        image.width,
        image.height,
        png,
    )


def label_of(caption: Line) -> str:
    match = FIGURE_CAPTION.match(caption.plain.strip())
    return f"Figure {int(match.group(1))}" if match else ""
