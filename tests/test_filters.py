"""Where clauses are built from allow-listed columns and escaped literals."""

from __future__ import annotations

import pytest

from thoth.store.filters import FilterError, eq, is_in, where


def test_values_are_quoted_and_escaped() -> None:
    assert eq("content_type", "code' OR 1=1 --") == "content_type = 'code'' OR 1=1 --'"
    assert is_in("key", ["a", "b'c"]) == "key IN ('a', 'b''c')"
    assert where({"source_id": "s", "language": None, "step_number": 2}) == "source_id = 's' AND step_number = 2"


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("vector", "x"),
        ("1=1; --", "x"),
        ("step_number", "2 OR 1=1"),
        ("step_number", True),
        ("key", 3),
        ("key", "a\x00"),
    ],
)
def test_bad_filters_are_refused(column: str, value: object) -> None:
    with pytest.raises(FilterError):
        eq(column, value)
