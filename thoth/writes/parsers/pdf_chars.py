"""The characters of a PDF page as PDFium gives them: code, font size and weight, box.

This is the parser's hot loop (every character of every page passes through it once), so PDFium
is called by address, as few times a character as the layout needs (`read_chars`).
"""

from __future__ import annotations

import ctypes
import re
import struct
from functools import partial
from typing import NamedTuple

import cffi
import pypdfium2.raw as pdfium_c

from thoth.writes.parsers.pdf_text import HYPHEN, UNMAPPED, symbol_glyph

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


FFI = cffi.FFI()


def fast(function, signature: str):
    """The same function through cffi, whose calls cost about half of ctypes' (ABI mode: nothing compiled)."""
    return FFI.cast(signature, ctypes.cast(function, ctypes.c_void_p).value)


_VOID = ctypes.c_void_p
_OBJECT_AT = fast(pdfium_c.FPDFText_GetTextObject, "uintptr_t(*)(uintptr_t, int)")
_BOX_AT = fast(pdfium_c.FPDFText_GetLooseCharBox, "int(*)(uintptr_t, int, float *)")
# asked once per text object: some files set every word in an object of its own (GeoTopo: 31,850)
_SIZE_AT = fast(pdfium_c.FPDFText_GetFontSize, "double(*)(uintptr_t, int)")
_FACE_OF = fast(pdfium_c.FPDFTextObj_GetFont, "uintptr_t(*)(uintptr_t)")
char_angle = fast(pdfium_c.FPDFText_GetCharAngle, "float(*)(uintptr_t, int)")  # asked once a line


def textpage_address(textpage) -> int:
    """The address of a pypdfium2 text page's handle, as the functions here take it."""
    return ctypes.cast(textpage.raw, _VOID).value


_UNICODE = _by_address(pdfium_c.FPDFText_GetUnicode, ctypes.c_uint, _VOID, ctypes.c_int)
_TEXT_OBJECT = _by_address(pdfium_c.FPDFText_GetTextObject, _VOID, _VOID, ctypes.c_int)
_LOOSE_BOX = _by_address(pdfium_c.FPDFText_GetLooseCharBox, ctypes.c_int, _VOID, ctypes.c_int, _VOID)
_GENERATED = _by_address(pdfium_c.FPDFText_IsGenerated, ctypes.c_int, _VOID, ctypes.c_int)
_FOUR_FLOATS = struct.Struct("4f")
_NO_BOX = (0.0, 0.0, 0.0, 0.0)  # a space's: never read


def _font_name(raw, i: int, name, flags) -> str:
    n = pdfium_c.FPDFText_GetFontInfo(raw, i, name, len(name), ctypes.byref(flags))
    return name.value[: max(0, n - 1)].decode("latin-1")


def _font(raw, address: int, i: int, obj: int | None, faces: dict, name, flags) -> tuple[float, int, str]:
    """Size, weight and name of character i's font (PDFium reads them from its text object `obj`; the
    weight and name from the object's font, which many objects share: asked once per font in `faces`)."""
    size = _SIZE_AT(address, i)
    face = _FACE_OF(obj) if obj else None
    known = faces.get(face) if face else None
    if known is None:
        weight = pdfium_c.FPDFText_GetFontWeight(raw, i)
        font = _font_name(raw, i, name, flags)
        if weight <= 0:  # standard and Type 1 fonts often say nothing: the name does ("Helvetica-Bold", "CMBX10")
            weight = 700 if _BOLD_NAME.search(font) else 400
        known = (weight, font)
        if face:
            faces[face] = known
    return size, known[0], known[1]


def _codes(raw, address: int, count: int) -> list[int] | None:
    """Every character's code in one call (FPDFText_GetText), or None where its UTF-16 units would not
    be the characters one for one: a pair (an emoji) or a character missing from PDFium's page text
    shifts every index after it (seen on the GeoTopo scan), so such a page is asked per character.
    Five characters spread over the page are asked one by one too: a shift the count hides shows there."""
    if not count:
        return []
    units = (ctypes.c_ushort * (count + 1))()
    if pdfium_c.FPDFText_GetText(raw, 0, count, units) != count + 1:
        return None
    codes = units[:count]
    if max(codes) >= 0xD800 and any(0xD800 <= code <= 0xDFFF for code in codes):
        return None
    if any(codes[i] != _UNICODE(address, i) for i in {0, count // 4, count // 2, 3 * count // 4, count - 1}):
        return None
    return codes


def read_chars(textpage) -> list[Char | None]:
    """Every character of the page; None where PDFium breaks the line.

    The codes come in one call where they can (`_codes`). Size, weight and font name belong to a
    character's text object (PDFium reads all three from it), so they are asked once per object: two
    calls a character (its object and box). A space needs neither: only its characters' neighbours'
    boxes and sizes are ever read, so a space costs one call, and only when it may be generated.
    """
    raw = textpage.raw
    address = textpage_address(textpage)
    rect = FFI.new("float[4]")  # an FS_RECTF: left, top, right, bottom
    read_rect = partial(_FOUR_FLOATS.unpack_from, FFI.buffer(rect))  # a third of the cost of unpacking the cdata
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    unicode_of, object_of, box_of, generated_at = _UNICODE, _OBJECT_AT, _BOX_AT, _GENERATED
    fonts: dict[int, tuple[float, int, str]] = {}
    faces: dict[int, tuple[int, str]] = {}
    out: list[Char | None] = []
    append = out.append
    count = pdfium_c.FPDFText_CountChars(raw)
    codes = _codes(raw, address, count)
    if codes is None:
        codes = [unicode_of(address, i) for i in range(count)]
    for i, code in enumerate(codes):
        if code <= 32:
            if code == 32:
                append(_new(Char, (" ", i, 0.0, 0, _NO_BOX, generated_at(address, i) == 1)))
                continue
            if code in (10, 13):
                if out and out[-1] is not None:
                    append(None)
                continue
        obj = object_of(address, i)
        font = fonts.get(obj)  # never stored for no object (0)
        if font is None:
            font = _font(raw, address, i, obj, faces, name, flags)
            if obj:
                fonts[obj] = font
        if 32 < code < 0xD800:  # most characters: nothing to map
            ch = chr(code)
        elif code in (2, 0xFFFE) or (code < 32 and pdfium_c.FPDFText_IsHyphen(raw, i)):
            ch = HYPHEN
        elif code < 32 and code != 9 or 0xE000 <= code <= 0xF8FF:
            # a glyph no table names stays visible as a placeholder: dropping it would change what the page says
            ch = symbol_glyph(code, font[2]) or (UNMAPPED if code < 32 else chr(code))
        elif 0xDC00 <= code <= 0xDFFF and out and out[-1] is not None and "\ud800" <= out[-1].ch <= "\udbff":
            # the second half of a UTF-16 pair (an emoji): one character with the first
            high = ord(out[-1].ch)
            out[-1] = out[-1]._replace(ch=chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
            continue
        else:
            ch = chr(code) if code < 0xDC00 or code > 0xDFFF else UNMAPPED
        box_of(address, i, rect)
        left, top, right, bottom = read_rect()
        append(_new(Char, (ch, i, font[0], font[1], (left, bottom, right, top), False)))
    for k, c in enumerate(out):
        if c is not None and "\ud800" <= c.ch <= "\udfff":  # half a pair whose other half never came
            out[k] = c._replace(ch=UNMAPPED)
    return out
