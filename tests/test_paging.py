"""Cursors and character windows: every character of every text once, in order, across pages."""

from __future__ import annotations

import pytest

from thoth.retrieval.paging import CursorError, OffsetCursor, decode_cursor, encode_cursor, window


@pytest.mark.parametrize("max_chars", [1, 3, 7, 10, 100])
def test_windows_cover_every_character_once(max_chars: int) -> None:
    texts = ["abcdefg", "hi", "jklmnopqrstu", "v"]
    pieces_text, position, pages = [], (0, 0), 0
    while position is not None:
        pieces, position = window([len(t) for t in texts], *position, max_chars)
        assert sum(p.end - p.start for p in pieces) <= max_chars
        pieces_text += [texts[p.index][p.start : p.end] for p in pieces]
        pages += 1
    assert "".join(pieces_text) == "".join(texts)
    assert pages == -(-len("".join(texts)) // max_chars)


def test_window_refuses_positions_outside_the_texts() -> None:
    with pytest.raises(CursorError):
        window([3, 4], 0, 3, 10)
    with pytest.raises(CursorError):
        window([3, 4], 5, 0, 10)
    assert window([3], 1, 0, 10) == ([], None)


def test_cursors_round_trip_and_belong_to_one_tool() -> None:
    cursor = encode_cursor("tool_a", {"o": 5, "s": "x"})
    assert decode_cursor(cursor, "tool_a") == {"k": "tool_a", "o": 5, "s": "x"}
    with pytest.raises(CursorError, match="tool_b"):
        decode_cursor(cursor, "tool_b")
    for bad in ("", "!!!", "bm90IGpzb24", encode_cursor("tool_a", {})[:-3] + "é"):
        with pytest.raises(CursorError):
            decode_cursor(bad, "tool_a")


def test_an_offset_cursor_continues_only_the_listing_it_was_issued_for() -> None:
    pages = OffsetCursor("list_things", "cursor was issued for another shelf")
    assert pages.offset(None, {"s": "a"}) == 0
    cursor = pages.next(20, {"s": "a"})
    assert decode_cursor(cursor, "list_things") == {"k": "list_things", "o": 20, "s": "a"}
    assert pages.offset(cursor, {"s": "a"}) == 20
    with pytest.raises(CursorError, match="another shelf"):
        pages.offset(cursor, {"s": "b"})
    with pytest.raises(CursorError, match="another shelf"):
        pages.offset(encode_cursor("list_things", {"s": "a", "o": -1}), {"s": "a"})
    with pytest.raises(CursorError, match="list_other"):
        OffsetCursor("list_other", "other").offset(cursor, {"s": "a"})
