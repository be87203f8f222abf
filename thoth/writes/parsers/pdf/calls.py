"""PDFium's functions called through cffi, for the parser's loops over characters and page objects."""

from __future__ import annotations

import ctypes
from itertools import repeat

import cffi
import pypdfium2.raw as pdfium_c

FFI = cffi.FFI()


def fast(function, signature: str):
    """The same function through cffi, whose calls cost about half of ctypes' (ABI mode: nothing compiled)."""
    return FFI.cast(signature, ctypes.cast(function, ctypes.c_void_p).value)


OBJECT_TYPE = fast(pdfium_c.FPDFPageObj_GetType, "int(*)(uintptr_t)")
_PAGE_OBJECT = fast(pdfium_c.FPDFPage_GetObject, "uintptr_t(*)(void *, int)")  # the page as a void *: cheaper


def page_objects(page) -> list[int]:
    """The objects of a page (PDFium's raw page) at its top level, by `map`: a loop in C. Many pages set
    each word in an object of its own."""
    handle = FFI.cast("void *", ctypes.cast(page, ctypes.c_void_p).value)
    return list(map(_PAGE_OBJECT, repeat(handle), range(pdfium_c.FPDFPage_CountObjects(page))))
