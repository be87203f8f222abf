"""Text of a scanned page (no text layer) by OCR: RapidOCR's PP-OCR models on onnxruntime.

The models ship inside the `rapidocr` wheel (nothing is downloaded at run time), and onnxruntime is
already Thoth's embedding runtime, so OCR adds no new inference stack. The engine loads once, on
the first page that needs it (about 2 s); a page costs seconds on a laptop core, which is why it is
behind THOTH_PDF_OCR (on in the container image, off by default).

The recogniser lists a page's lines top to bottom, which on a two-column scan interleaves the
columns line by line; `reading_order` reads each column down in turn (`_gutter` finds the gap
between them), a line across both (a title) between the bands it separates.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium

# Pixels per PDF point: 2 is 144 dpi, enough for body text at 9-10 pt.
RENDER_SCALE = 2.0
# A page smaller than this (in points) is a thumbnail or a stamp, not a page of text.
MIN_PAGE_POINTS = 72.0
# Boxes the recogniser is less sure of than this are noise (texture, photos), not words.
MIN_CONFIDENCE = 0.5
Box = tuple[float, float, float, float]  # left, top, right, bottom, in pixels (y grows downwards)

_engine = None
_lock = threading.Lock()


@dataclass(frozen=True)
class OcrPage:
    text: str  # the recognised lines, top to bottom
    confidence: float  # the recogniser's mean score over the kept lines, weighted by their length


def engine():
    """The one OCR engine of the process, loaded on first use."""
    global _engine
    with _lock:
        if _engine is None:
            from rapidocr import RapidOCR

            # Detection on the page scaled to at most 960 px reads as well as at full size (measured on a
            # paper page: 0.936 word match to its text layer against 0.935) in a quarter of the time;
            # recognition still reads the full-size crops. The orientation classifier is off: scans are upright.
            params = {"Global.log_level": "error", "Global.use_cls": False}
            params |= {"Det.limit_type": "max", "Det.limit_side_len": 960}
            _engine = RapidOCR(params=params)
    return _engine


def read_page(page: pdfium.PdfPage) -> OcrPage | None:
    """The page's text by OCR, or None when nothing legible is on it."""
    if min(page.get_width(), page.get_height()) < MIN_PAGE_POINTS:
        return None
    import numpy as np

    image = page.render(scale=RENDER_SCALE).to_pil().convert("RGB")
    result = engine()(np.asarray(image))
    texts, scores = result.txts or (), result.scores or ()
    order = reading_order(line_boxes(result.boxes), image.width) if len(texts) > 1 else range(len(texts))
    lines = [
        (texts[i].strip(), float(scores[i]))
        for i in order
        if scores[i] >= MIN_CONFIDENCE and any(ch.isalnum() for ch in texts[i])  # a shape read as '●' is no text
    ]
    if not lines:
        return None
    weight = sum(len(text) for text, _ in lines)
    confidence = sum(len(text) * score for text, score in lines) / weight
    return OcrPage("\n".join(text for text, _ in lines), round(confidence, 3))


def line_boxes(quads: Any) -> list[Box]:
    """Each detected line's four corners as its bounding box."""
    out: list[Box] = []
    for quad in quads if quads is not None else ():
        xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
        out.append((min(xs), min(ys), max(xs), max(ys)))
    return out


def _gutter(boxes: list[Box], width: float) -> float | None:
    """The x of the gap between two columns, with lines set side by side on both sides of it; None: one
    column. The gap is the widest run of positions in the page's middle third that few lines cross (a
    title may), and the gutter its middle: a title set over the gap crosses it, so it reads as a band."""
    steps = [width * (1 / 3 + step / 120) for step in range(41)]
    runs: list[list[float]] = [[]]
    for x in steps:
        if sum(b[0] < x < b[2] for b in boxes) <= len(boxes) / 4:
            runs[-1].append(x)
        elif runs[-1]:
            runs.append([])
    widest = max(runs, key=len)
    if not widest:
        return None
    x = (widest[0] + widest[-1]) / 2
    left = [b for b in boxes if b[2] <= x]
    right = [b for b in boxes if b[0] >= x]
    beside = sum(any(r[1] < b[3] and b[1] < r[3] for b in left) for r in right)  # right lines level with a left one
    return x if len(left) >= 2 and len(right) >= 2 and beside >= 2 else None


def reading_order(boxes: list[Box], width: float) -> list[int]:
    """The lines' indices in reading order: as detected (top to bottom) on one column; on two, each band
    between lines that cross the gutter is read left column first, then right, then the crossing line."""
    gutter = _gutter(boxes, width)
    if gutter is None:
        return list(range(len(boxes)))
    order: list[int] = []
    left: list[int] = []
    right: list[int] = []
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i][1], boxes[i][0])):
        box = boxes[i]
        if box[0] < gutter < box[2]:  # across both columns: the band above ends here
            order += left + right + [i]
            left, right = [], []
        else:
            (left if box[2] <= gutter else right).append(i)
    return order + left + right
