"""PDFium's functions called through cffi, for the parser's loops over characters and page objects."""

from __future__ import annotations

import ctypes

import cffi

FFI = cffi.FFI()


def fast(function, signature: str):
    """The same function through cffi, whose calls cost about half of ctypes' (ABI mode: nothing compiled)."""
    return FFI.cast(signature, ctypes.cast(function, ctypes.c_void_p).value)
