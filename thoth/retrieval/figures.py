"""A paper's figure as a picture: by its caption chunk's id, by a citation of its page, or by "Figure N" of a
document. The picture was cut from the page at ingest (thoth/writes/parsers/pdf/figures.py) and lies beside
the index (thoth.store.figures); its caption chunk (content type `figure`) names it."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from thoth.errors import ClientError, NotFound
from thoth.records import Chunk
from thoth.retrieval.documents import get_chunk
from thoth.source_ref import parse_ref
from thoth.store import Store

FIGURE = "figure"  # the content type of a figure's caption chunks
_LABEL = re.compile(r"^(?:Figure|Fig\.)\s*(\d{1,3})\b", re.I)


@dataclass(frozen=True)
class Picture:
    """A figure's caption chunk and its PNG, with the PNG's size in pixels."""

    chunk: Chunk
    png: bytes
    width: int
    height: int

    @property
    def label(self) -> str:
        match = _LABEL.match(self.chunk.text)
        return f"Figure {int(match.group(1))}" if match else "Figure"


def figure_uri(source_id: str, chunk_id: str) -> str:
    """The resource a figure's picture is read at (`resources/read`)."""
    return f"figure://{source_id}/{chunk_id}"


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header (IHDR)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", png[16:24])


def _picture(store: Store, chunk: Chunk) -> Picture:
    if chunk.content_type != FIGURE or not chunk.figure:
        raise ClientError(
            f"chunk {chunk.chunk_id!r} is not a figure's caption (its content type is {chunk.content_type!r}); "
            "search with content_type figure for one"
        )
    png = store.figures.get(chunk.figure)
    width, height = png_size(png)
    return Picture(chunk, png, width, height)


def figure(
    store: Store,
    *,
    chunk_id: str | None = None,
    source_ref: str | None = None,
    key: str | None = None,
    number: int | None = None,
    source_id: str | None = None,
) -> Picture:
    """One figure's picture: by `chunk_id` (a figure chunk's id), or of one document (`source_ref`, whose
    page narrows it, or `key`) by `number` ("Figure 3": 3), or the first on the cited page."""
    if chunk_id:
        return _picture(store, get_chunk(store, chunk_id, source_id))
    if not source_ref and not key:
        raise ClientError("give id (a figure chunk's id), or source_ref or key with figure (its number)")
    ref = parse_ref(source_ref) if source_ref else None
    match: dict = {"content_type": FIGURE, "key": ref.key if ref else key}
    if source_id:
        match["source_id"] = source_id
    found = [c for c in store.find(Chunk, match) if ref is None or c.source_ref.split("#")[0] == ref.base]
    page = ref.page if ref else None
    if number is not None:
        found = [c for c in found if (m := _LABEL.match(c.text)) and int(m.group(1)) == number]
    if page is not None:
        found = [c for c in found if c.page_start == page]
    where = source_ref or key
    if not found:
        what = f"Figure {number}" if number is not None else f"a figure on page {page}" if page else "a figure"
        raise NotFound(f"{where} has no {what} with a picture; search with content_type figure to see its figures")
    return _picture(store, min(found, key=lambda c: (c.page_start or 0, c.chunk_index)))
