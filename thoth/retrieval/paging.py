"""Opaque cursors and character-bounded windows over ordered texts.

A cursor is URL-safe base64 of a small JSON object naming what issued it (its
`kind`: the surface names it, usually after the tool) and where to continue. It is
not signed: it only says where to resume, and every value in it is validated again
(it can never widen what a caller sees).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

from thoth.errors import ClientError

# A bounded result (read_page, context bundles) in characters: the default size, a few pages of text, and
# the most a caller may ask for at once
MAX_CHARS = 20_000
MAX_CHARS_LIMIT = 100_000


class CursorError(ClientError):
    """A cursor that this server did not issue for this tool, or one the index has outgrown."""


def encode_cursor(kind: str, state: dict) -> str:
    payload = json.dumps({"k": kind, **state}, sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str) -> dict:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        state = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise CursorError("cursor is not valid: pass the nextCursor value of a previous answer unchanged") from None
    if not isinstance(state, dict) or state.get("k") != kind:
        raise CursorError(f"cursor was not issued by {kind}: pass the nextCursor of a previous {kind} answer")
    return state


@dataclass(frozen=True)
class OffsetCursor:
    """The cursors of one listing: where the next answer starts, bound to the arguments it was issued for.

    The surface gives `kind` (which tool issues it) and `mismatch` (what a caller is told when the
    cursor was issued for other arguments, in the surface's words)."""

    kind: str
    mismatch: str

    def offset(self, cursor: str | None, bound: dict) -> int:
        """Where `cursor` continues (0 without one); CursorError when it was issued for other `bound` values."""
        if not cursor:
            return 0
        state = decode_cursor(cursor, self.kind)
        offset = state.pop("o", None)
        state.pop("k")
        if state != bound or not isinstance(offset, int) or offset < 0:
            raise CursorError(self.mismatch)
        return offset

    def next(self, offset: int, bound: dict) -> str:
        return encode_cursor(self.kind, {**bound, "o": offset})


def fingerprint(ids: list[str]) -> str:
    """A short hash of an ordered list of ids: a cursor carries it to notice that the index changed."""
    return hashlib.sha256("\x1f".join(ids).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Piece:
    index: int  # which text
    start: int  # character offsets into that text
    end: int


def window(lengths: list[int], index: int, offset: int, max_chars: int) -> tuple[list[Piece], tuple[int, int] | None]:
    """Pieces of consecutive texts, from text `index` at `offset`, holding at most `max_chars` characters.

    Returns the pieces and where the next window starts (None when the texts are exhausted), so that
    successive windows cover every character exactly once.
    """
    if not 0 <= index <= len(lengths) or (index < len(lengths) and not 0 <= offset < max(lengths[index], 1)):
        raise CursorError("cursor points outside the content; start again without a cursor")
    pieces: list[Piece] = []
    budget = max_chars
    while index < len(lengths) and budget > 0:
        take = min(lengths[index] - offset, budget)
        pieces.append(Piece(index, offset, offset + take))
        budget -= take
        if offset + take < lengths[index]:
            return pieces, (index, offset + take)
        index, offset = index + 1, 0
    return pieces, ((index, 0) if index < len(lengths) else None)
