"""Which characters of a PDF page a person never sees, so the text read is what the page shows (issue 52).

A file can carry text for a machine only: instructions for an AI assistant that no reader sees. Three
kinds are left out, each counted (`hidden_chars` adds to a `Counter` by reason):

- `pdf_invisible`: text drawn in render mode 3 (neither filled nor stroked) or 7 (clip only), except
  over an image: a scanned page's OCR text layer is invisible text over the picture of the same words.
- `pdf_background`: text painted in the page's colour: fully transparent, or near white (every channel
  at least `_WHITE`) where no image or darker filled shape lies beneath it (inside included graphics too).
- `pdf_tiny`: a glyph under 1 pt: its box (font size times every scale the page applies) is smaller
  than `_TINY` points both ways.

Not caught: text covered by a shape drawn after it, text outside the page's box, text in a colour close
to a non-white background. Each run of one text object is asked its render mode and colour once, and
the page's drawing is walked only when a character is invisible or white.
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat

import numpy as np
import pypdfium2.raw as pdfium_c

from thoth.writes.parsers.pdf.calls import FFI, OBJECT_TYPE, fast, page_objects

_TINY = 1.0  # points: a glyph box smaller than this both ways is no text a person reads
_WHITE = 245  # of 255, every channel: paint this light is the white page's colour
_INVISIBLE_MODES = (pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE, pdfium_c.FPDF_TEXTRENDERMODE_CLIP)
_STROKED_ONLY = (pdfium_c.FPDF_TEXTRENDERMODE_STROKE, pdfium_c.FPDF_TEXTRENDERMODE_STROKE_CLIP)
_FILLED_ONLY = (pdfium_c.FPDF_TEXTRENDERMODE_FILL, pdfium_c.FPDF_TEXTRENDERMODE_FILL_CLIP)

_MODE = fast(pdfium_c.FPDFTextObj_GetTextRenderMode, "int(*)(uintptr_t)")
_RGBA = "int(*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t)"  # into four unsigned ints' addresses
_FILL = fast(pdfium_c.FPDFPageObj_GetFillColor, _RGBA)
_STROKE = fast(pdfium_c.FPDFPageObj_GetStrokeColor, _RGBA)
_BOUNDS = fast(pdfium_c.FPDFPageObj_GetBounds, "int(*)(uintptr_t, float *, float *, float *, float *)")
_DRAW_MODE = fast(pdfium_c.FPDFPath_GetDrawMode, "int(*)(uintptr_t, int *, int *)")


def _faint(get, objects: list[int]) -> np.ndarray:
    """Whether each object's paint read by `get` (fill or stroke) cannot be seen on a white page:
    transparent or near white. One call an object, by `map` (a loop in C)."""
    rgba = np.zeros((len(objects), 4), np.uint32)
    at = np.arange(len(objects), dtype=np.int64) * 16 + rgba.ctypes.data
    red, green, blue, alpha = at.tolist(), (at + 4).tolist(), (at + 8).tolist(), (at + 12).tolist()
    found = np.fromiter(map(get, objects, red, green, blue, alpha), bool, len(objects))
    return found & ((rgba[:, 3] == 0) | (rgba[:, :3].min(axis=1) >= _WHITE))  # no colour to tell: seen


def _looks(objects: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(invisible, faint) per text object: its render mode, and whether the paint that mode uses is faint.
    The stroke's colour is asked only of the few objects whose mode strokes."""
    modes = np.fromiter(map(_MODE, objects), np.int64, len(objects))
    if not modes.any():  # every object filled (mode 0): the usual page
        return np.zeros(len(objects), bool), _faint(_FILL, objects)
    invisible = (modes == _INVISIBLE_MODES[0]) | (modes == _INVISIBLE_MODES[1])
    stroked = (modes == _STROKED_ONLY[0]) | (modes == _STROKED_ONLY[1])
    filled_only = (modes == _FILLED_ONLY[0]) | (modes == _FILLED_ONLY[1])
    faint = np.zeros(len(objects), bool)
    filled = np.flatnonzero(~(invisible | stroked))  # fill modes, with or without stroke (and unknown: none)
    faint[filled] = _faint(_FILL, [objects[i] for i in filled.tolist()])
    ask = np.flatnonzero(stroked | (faint & ~filled_only))  # stroked, or filled faint and stroked
    if len(ask):
        faint[ask] = _faint(_STROKE, [objects[i] for i in ask.tolist()])
    return invisible, faint


_IDENTITY = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_MAX_DEPTH = 8  # included graphics inside included graphics: deeper ones are not walked
_FORM_MATRIX = fast(pdfium_c.FPDFPageObj_GetMatrix, "int(*)(uintptr_t, float *)")  # into an FS_MATRIX (a..f)
_FORM_COUNT = fast(pdfium_c.FPDFFormObj_CountObjects, "int(*)(uintptr_t)")
_FORM_OBJECT = fast(pdfium_c.FPDFFormObj_GetObject, "uintptr_t(*)(uintptr_t, unsigned long)")


def _then(outer: tuple, inner: tuple) -> tuple:
    """The affine map that applies `inner`, then `outer` (PDF matrices: a, b, c, d, e, f)."""
    a, b, c, d, e, f = outer
    ia, ib, ic, id_, ie, if_ = inner
    return (
        a * ia + c * ib,
        b * ia + d * ib,
        a * ic + c * id_,
        b * ic + d * id_,
        a * ie + c * if_ + e,
        b * ie + d * if_ + f,
    )


def _on_page(box: list[float], matrix: tuple) -> list[float]:
    """A box in an included graphic's space as a box on the page: its corners mapped, then bounded."""
    a, b, c, d, e, f = matrix
    xs = [a * x + c * y + e for x in (box[0], box[2]) for y in (box[1], box[3])]
    ys = [b * x + d * y + f for x in (box[0], box[2]) for y in (box[1], box[3])]
    return [min(xs), min(ys), max(xs), max(ys)]


def _backdrops(page) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (left, bottom, right, top) on the page of what text can lie on: images, and shapes filled
    darker than white, at the page's top level or inside included graphics (form objects, walked with
    their matrices: PDFium gives the bounds of what is inside one in the form's own space)."""
    images: list[list[float]] = []
    shapes: list[list[float]] = []
    sides = [FFI.new("float *") for _ in range(4)]
    fill, stroke = FFI.new("int *"), FFI.new("int *")
    matrix = FFI.new("float[6]")

    def walk(objects, placed: tuple, depth: int) -> None:
        for obj in objects:
            kind = OBJECT_TYPE(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
                if depth < _MAX_DEPTH and _FORM_MATRIX(obj, matrix):
                    inside = _then(placed, tuple(matrix))
                    walk(map(_FORM_OBJECT, repeat(obj), range(_FORM_COUNT(obj))), inside, depth + 1)
                continue
            if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                if not (_DRAW_MODE(obj, fill, stroke) and fill[0]) or _faint(_FILL, [obj])[0]:
                    continue
                into = shapes
            elif kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                into = images
            else:
                continue
            if _BOUNDS(obj, *sides):
                box = [s[0] for s in sides]
                into.append(box if depth == 0 else _on_page(box, placed))

    walk(page_objects(page), _IDENTITY, 0)
    return np.array(images, np.float64).reshape(-1, 4), np.array(shapes, np.float64).reshape(-1, 4)


def _over(centres: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether each centre (x, y) lies inside any of the boxes."""
    if not len(boxes) or not len(centres):
        return np.zeros(len(centres), bool)
    x, y = centres[:, :1], centres[:, 1:]
    inside = (x >= boxes[:, 0]) & (x <= boxes[:, 2]) & (y >= boxes[:, 1]) & (y <= boxes[:, 3])
    return inside.any(axis=1)


def hidden_chars(page, asked: np.ndarray, objects: np.ndarray, boxes: np.ndarray, counts: Counter) -> np.ndarray:
    """Which of the characters `asked` (indices, with their text `objects` and loose `boxes` per index:
    left, top, right, bottom) a person cannot see; their number by reason is added to `counts`."""
    if not len(asked):
        return np.zeros(0, bool)
    box = boxes[asked]
    side = np.maximum(np.abs(box[:, 2] - box[:, 0]), np.abs(box[:, 1] - box[:, 3]))
    tiny = (side > 0) & (side < _TINY)  # a box never read (0) says nothing
    # each run of one text object asked once (its characters follow each other: no sort); a character
    # without one (0: PDFium checks for NULL) reads as seen
    changes = np.empty(len(objects), bool)
    changes[0] = True
    np.not_equal(objects[1:], objects[:-1], out=changes[1:])
    invisible_of, faint_of = _looks(objects[changes].tolist())
    if not (invisible_of.any() or faint_of.any()):  # the usual page: only tiny glyphs to leave out
        if found := int(tiny.sum()):
            counts["pdf_tiny"] += found
        return tiny
    run = np.cumsum(changes) - 1
    invisible, faint = invisible_of[run], faint_of[run]
    images, shapes = _backdrops(page)
    centres = np.column_stack(((box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2)).astype(np.float64)
    on_image = _over(centres, images)
    invisible &= ~on_image  # a scan's OCR layer
    faint &= ~(on_image | _over(centres, shapes))
    tiny &= ~(invisible | faint)
    for reason, mask in (("pdf_invisible", invisible), ("pdf_background", faint), ("pdf_tiny", tiny)):
        if found := int(mask.sum()):
            counts[reason] += found
    return invisible | faint | tiny
