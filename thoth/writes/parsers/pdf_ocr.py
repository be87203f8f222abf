"""Text of a scanned page (no text layer) by OCR: RapidOCR's PP-OCR models on onnxruntime.

The models ship inside the `rapidocr` wheel (nothing is downloaded at run time), and onnxruntime is
already Thoth's embedding runtime, so OCR adds no new inference stack. The engine loads once, on
the first page that needs it (about 2 s); a page costs seconds on a laptop core, which is why it is
behind THOTH_PDF_OCR (on in the container image, off by default).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pypdfium2 as pdfium

# Pixels per PDF point: 2 is 144 dpi, enough for body text at 9-10 pt.
RENDER_SCALE = 2.0
# A page smaller than this (in points) is a thumbnail or a stamp, not a page of text.
MIN_PAGE_POINTS = 72.0
# Boxes the recogniser is less sure of than this are noise (texture, photos), not words.
MIN_CONFIDENCE = 0.5

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
    lines = [
        (text.strip(), float(score))
        for text, score in zip(result.txts or (), result.scores or (), strict=False)
        if score >= MIN_CONFIDENCE and any(ch.isalnum() for ch in text)  # a shape read as '●' is no text
    ]
    if not lines:
        return None
    weight = sum(len(text) for text, _ in lines)
    confidence = sum(len(text) * score for text, score in lines) / weight
    return OcrPage("\n".join(text for text, _ in lines), round(confidence, 3))
