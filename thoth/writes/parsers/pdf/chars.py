"""The characters of a PDF page as PDFium gives them: code, font size and weight, box.

This is the parser's hot loop (every character of every page passes through it once), so PDFium
is called by address, as few times a character as the layout needs, from C loops (`read_page`).
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from typing import NamedTuple

import numpy as np
import pypdfium2.raw as pdfium_c

from thoth.writes.parsers.pdf.calls import FFI, fast
from thoth.writes.parsers.pdf.hidden import hidden_chars
from thoth.writes.parsers.pdf.text import HYPHEN, UNMAPPED, symbol_glyph

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|medi\b|-medi|^(?:\w{6}\+)?CMBX|\.B$", re.I)


class Char(NamedTuple):
    """A character as the page draws it. A tuple, made in the hot loop by `_new` (C, no Python frame: a
    third of a dataclass's cost); a changed one (an accent put on its letter) is a new one by `_replace`."""

    ch: str
    index: int  # PDFium's character index
    size: float
    weight: int
    box: tuple[float, float, float, float]  # left, bottom, right, top
    generated: bool = False  # a space PDFium inserted, not one the file draws


_new = tuple.__new__


def _by_address(function, restype, *argtypes):
    """A PDFium function called with plain addresses: pypdfium2's bindings convert pointer objects on
    every call, which costs more than the call itself when it is made once per character."""
    return ctypes.CFUNCTYPE(restype, *argtypes)(ctypes.cast(function, ctypes.c_void_p).value)


_VOID = ctypes.c_void_p
# the text page as a `void *` (`handle`): cffi converts it faster than an integer address (about a sixth
# of an object's call)
_OBJECT_AT = fast(pdfium_c.FPDFText_GetTextObject, "uintptr_t(*)(void *, int)")
_BOX_INTO = fast(pdfium_c.FPDFText_GetLooseCharBox, "int(*)(void *, int, uintptr_t)")  # into an address
# asked once per text object: some files set every word in an object of its own (GeoTopo: 31,850)
_SIZE_AT = fast(pdfium_c.FPDFText_GetFontSize, "double(*)(void *, int)")
_FACE_OF = fast(pdfium_c.FPDFTextObj_GetFont, "uintptr_t(*)(uintptr_t)")
char_angle = fast(pdfium_c.FPDFText_GetCharAngle, "float(*)(void *, int)")  # asked once a line


def textpage_address(textpage) -> int:
    """The address of a pypdfium2 text page's handle, as the functions here take it."""
    return ctypes.cast(textpage.raw, _VOID).value


_UNICODE = _by_address(pdfium_c.FPDFText_GetUnicode, ctypes.c_uint, _VOID, ctypes.c_int)
_GENERATED = _by_address(pdfium_c.FPDFText_IsGenerated, ctypes.c_int, _VOID, ctypes.c_int)
_NO_BOX = (0.0, 0.0, 0.0, 0.0)  # a space's: never read
_LBRT = [0, 3, 2, 1]  # an FS_RECTF's left, top, right, bottom as a Char's box: left, bottom, right, top


def _font_name(raw, i: int, name, flags) -> str:
    n = pdfium_c.FPDFText_GetFontInfo(raw, i, name, len(name), ctypes.byref(flags))
    return name.value[: max(0, n - 1)].decode("latin-1")


def _face(raw, i: int, name, flags) -> tuple[int, str]:
    """Weight and name of character i's font."""
    weight = pdfium_c.FPDFText_GetFontWeight(raw, i)
    font = _font_name(raw, i, name, flags)
    if weight <= 0:  # standard and Type 1 fonts often say nothing: the name does ("Helvetica-Bold", "CMBX10")
        weight = 700 if _BOLD_NAME.search(font) else 400
    return weight, font


def _codes(raw, address: int, count: int) -> tuple[list[int], np.ndarray] | None:
    """Every character's code in one call (FPDFText_GetText), or None where its UTF-16 units would not
    be the characters one for one: a pair (an emoji) or a character missing from PDFium's page text
    shifts every index after it (seen on the GeoTopo scan), so such a page is asked per character.
    Five characters spread over the page are asked one by one too: a shift the count hides shows there."""
    if not count:
        return [], np.zeros(0, np.int64)
    units = (ctypes.c_ushort * (count + 1))()
    if pdfium_c.FPDFText_GetText(raw, 0, count, units) != count + 1:
        return None
    array = np.frombuffer(units, np.uint16, count).astype(np.int64)
    codes = array.tolist()
    if ((array >= 0xD800) & (array <= 0xDFFF)).any():
        return None
    if any(codes[i] != _UNICODE(address, i) for i in {0, count // 4, count // 2, 3 * count // 4, count - 1}):
        return None
    return codes, array


_SPACE = np.array([chr(code).isspace() for code in range(0xD800)])  # which plain codes `str.isspace` calls blank
_ALPHA = np.array([chr(code).isalpha() for code in range(0xD800)])  # and which `str.isalpha` calls letters


@dataclass
class PageChars:
    """A page's characters as arrays over PDFium's character indices, read with no Python step a character.

    `groups` are the index ranges PDFium sets as lines (between its line breaks). The characters that
    are not blank (`ink`, ascending) have their size, weight, letter and box in arrays aligned with it, so
    a line's are a range of them; `chars` makes the `Char`s a line with raised or accented letters reads
    one by one.
    """

    address: int
    handle: object  # the same as a cffi `void *`
    codes: np.ndarray  # PDFium's code per index
    chs: list[str]  # the character per index ('' for the second half of a pair joined to the first)
    groups: list[tuple[int, int]]
    ink: np.ndarray
    ink_sizes: np.ndarray
    ink_weights: np.ndarray
    ink_boxes: np.ndarray  # left, top, right, bottom (float64)
    ink_alpha: np.ndarray  # whether `str.isalpha`
    size_at: np.ndarray
    weight_at: np.ndarray
    box_at: np.ndarray  # per index: left, top, right, bottom (an FS_RECTF); zeros where never read

    @cached_property
    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        """The letters' centres (x, y), computed once a page: the table reader asks for many regions and lines."""
        boxes = self.ink_boxes
        return (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2

    def char(self, i: int) -> Char:
        if self.codes[i] == 32:
            return _new(Char, (" ", i, 0.0, 0, _NO_BOX, _GENERATED(self.address, i) == 1))
        left, top, right, bottom = self.box_at[i].tolist()
        size, weight = float(self.size_at[i]), int(self.weight_at[i])
        return _new(Char, (self.chs[i], i, size, weight, (left, bottom, right, top), False))

    def chars(self, start: int, end: int, accents: bool) -> list[Char]:
        """The Chars start..end in one pass of C loops; whether a space is generated (a PDFium call each)
        only matters where accents move, so only then is it asked."""
        chs = self.chs[start:end]
        boxes = map(tuple, self.box_at[start:end][:, _LBRT].tolist())
        spaces = [i for i in range(start, end) if self.codes[i] == 32] if accents else []
        generated = [False] * (end - start)
        for i in spaces:
            generated[i - start] = _GENERATED(self.address, i) == 1
        sizes, weights = self.size_at[start:end].tolist(), self.weight_at[start:end].tolist()
        fields = zip(chs, range(start, end), sizes, weights, boxes, generated, strict=True)
        out = list(map(_new, repeat(Char), fields))
        return [c for c in out if c.ch] if "" in chs else out


def read_page(textpage, hidden: Counter) -> PageChars:
    """Every character of the page: codes in one call (`_codes`), then each character's text object and
    box asked of PDFium by `map` over the indices (the loop runs in C, one cffi call a character, no
    Python frame), fonts once per text object. Spaces and line breaks are never asked: only the
    characters around them are read, and whether a space is generated only where accents move (`char`).
    Characters a person cannot see (hidden.py) are left out as blanks with no text, and counted by
    reason in `hidden`.
    """
    raw = textpage.raw
    address = textpage_address(textpage)
    count = pdfium_c.FPDFText_CountChars(raw)
    found = _codes(raw, address, count)
    if found is None:
        listed = [_UNICODE(address, i) for i in range(count)]
        codes = np.array(listed, dtype=np.int64)
    else:
        listed, codes = found
    asked = np.flatnonzero((codes != 10) & (codes != 13) & (codes != 32))  # line breaks and spaces: never asked
    where = asked.tolist()
    handle = FFI.cast("void *", address)
    objects = np.fromiter(map(_OBJECT_AT, repeat(handle), where), np.uint64, len(where))
    boxes = np.zeros((count, 4), np.float32)
    start = boxes.ctypes.data
    deque(map(_BOX_INTO, repeat(handle), where, (asked * 16 + start).tolist()), maxlen=0)  # the calls, kept nowhere
    size_at, weight_at, name_of = _fonts(raw, handle, asked, objects, count)
    chs = list(map(chr, listed))
    special = asked[(codes[asked] < 32) | (codes[asked] >= 0xD800)].tolist()
    for i in special:
        chs[i] = _special(raw, listed, chs, i, name_of)
    for i in special:
        if "\ud800" <= chs[i] <= "\udfff":  # half a pair whose other half never came
            chs[i] = UNMAPPED
    blank = np.zeros(count, bool)
    plain = codes[asked] < 0xD800
    blank[asked[plain]] = _SPACE[codes[asked[plain]]]
    for i in special:
        blank[i] = not chs[i] or chs[i].isspace()
    unseen = hidden_chars(textpage.page.raw, asked, objects, boxes, hidden)
    if unseen.any():
        _leave_out(asked, unseen, codes, chs, blank)
    ink = asked[~blank[asked]]
    breaks = np.flatnonzero((codes == 10) | (codes == 13)).tolist()
    groups = [(a + 1, b) for a, b in zip([-1, *breaks], [*breaks, count], strict=True) if b > a + 1]
    ink_codes = codes[ink]
    alpha = _ALPHA[np.minimum(ink_codes, 0xD7FF)]
    for k in np.flatnonzero((ink_codes < 32) | (ink_codes >= 0xD800)).tolist():
        alpha[k] = chs[int(ink[k])].isalpha()
    return PageChars(
        address, handle, codes, chs, groups, ink, size_at[ink], weight_at[ink], boxes[ink].astype(np.float64), alpha,
        size_at, weight_at, boxes,
    )  # fmt: skip


def _leave_out(asked: np.ndarray, unseen: np.ndarray, codes: np.ndarray, chs: list[str], blank: np.ndarray) -> None:
    """The unseen characters become blanks with no text, and so does a space after one: hidden words
    leave no gap of their own between the words around them."""
    for i in asked[unseen].tolist():
        chs[i] = ""
        blank[i] = True
    spaces = np.flatnonzero(codes == 32)
    before = np.searchsorted(asked, spaces) - 1  # the character read last before each space
    for i in spaces[(before >= 0) & unseen[np.maximum(before, 0)]].tolist():
        chs[i] = ""


def _fonts(
    raw, handle, asked: np.ndarray, objects: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, Callable[[int], str]]:
    """Size and weight per character index, and a function giving an index's font name. PDFium reads
    the size from a character's text object and weight and name from the object's font: the size is
    asked once per object, weight and name once per font (many objects share one), each of a character
    without an object for it alone."""
    size_at = np.zeros(count)
    weight_at = np.zeros(count, np.int64)
    names: dict[int, str] = {}
    if not len(asked):
        return size_at, weight_at, lambda _: ""
    # runs of one text object (its characters follow each other: an object met twice is asked twice,
    # with the same answers), found without a sort
    changes = np.concatenate(([True], objects[1:] != objects[:-1]))
    first, inverse = np.flatnonzero(changes), np.cumsum(changes) - 1
    found = objects[first]
    starts = asked[first].tolist()  # each run's first character
    sizes = np.fromiter(map(_SIZE_AT, repeat(handle), starts), float, len(starts))
    faces = np.fromiter(map(_FACE_OF, found.tolist()), np.uint64, len(found))
    faces[found == 0] = 0
    known, at, face_of = np.unique(faces, return_index=True, return_inverse=True)
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    by_face = [
        _face(raw, starts[k], name, flags) if face else (0, "")
        for face, k in zip(known.tolist(), at.tolist(), strict=True)
    ]
    weights = np.array([w for w, _ in by_face], np.int64)[face_of]
    own: dict[int, str] = {}  # an object without a font: its own weight and name
    for k in np.flatnonzero((faces == 0) & (found != 0)).tolist():
        weights[k], own[k] = _face(raw, starts[k], name, flags)
    size_at[asked] = sizes[inverse]
    weight_at[asked] = weights[inverse]
    for i in asked[objects == 0].tolist():  # no text object: the font is asked for this character alone
        size_at[i] = _SIZE_AT(handle, i)
        weight_at[i], names[i] = _face(raw, i, name, flags)

    def name_of(i: int) -> str:  # asked only for control and private-use codes
        if i in names:
            return names[i]
        k = int(inverse[np.searchsorted(asked, i)])
        return own[k] if k in own else by_face[int(face_of[k])][1]

    return size_at, weight_at, name_of


def _special(raw, listed: list[int], chs: list[str], i: int, name_of: Callable[[int], str]) -> str:
    """The character at a control or private-use code, a break hyphen, or half of a UTF-16 pair (joined to
    the first half, which leaves '' here)."""
    code = listed[i]
    if code in (2, 0xFFFE) or (code < 32 and pdfium_c.FPDFText_IsHyphen(raw, i)):
        return HYPHEN
    if code < 32 and code != 9 or 0xE000 <= code <= 0xF8FF:
        # a glyph no table names stays visible as a placeholder: dropping it would change what the page says
        return symbol_glyph(code, name_of(i)) or (UNMAPPED if code < 32 else chr(code))
    if 0xDC00 <= code <= 0xDFFF and i and "\ud800" <= chs[i - 1] <= "\udbff":
        # the second half of a UTF-16 pair (an emoji): one character with the first
        chs[i - 1] = chr(0x10000 + ((ord(chs[i - 1]) - 0xD800) << 10) + (code - 0xDC00))
        return ""
    return chr(code) if code < 0xDC00 or code > 0xDFFF else UNMAPPED
