"""Where clauses are built from allow-listed columns and escaped literals; client filters can never change the query."""

from __future__ import annotations

import pytest

from thoth.errors import ClientError
from thoth.records import Excluding
from thoth.store import filters
from thoth.store.filters import eq, is_in, public_match, where


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
    with pytest.raises(ClientError):
        eq(column, value)


def test_public_filters_map_to_columns_and_quote_values() -> None:
    assert where(public_match({"type": "code", "language": ["go", "ts"]})) == (
        "content_type = 'code' AND language IN ('go', 'ts')"
    )
    assert where(public_match({"exercise_number": 2})) == "exercise_number = 2"
    assert where(public_match({"type": "code' OR 1=1 --"})) == "content_type = 'code'' OR 1=1 --'"
    assert where(public_match(None)) is None and where(public_match({})) is None


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            {"content_type = 'x' OR 1=1": "x"},
            "allowed: content_type, exclude_type, exercise_number, language, path, step_number",
        ),
        ({"vector": [1]}, "allowed"),
        ({"exercise_number": "1 OR 1=1"}, "'exercise_number'"),
        ({"exercise_number": True}, "'exercise_number'"),
        ({"type": 3}, "'type'"),
        ({"type": []}, "at least one"),
        ({"type": "code", "content_type": "text"}, "repeats"),
        ({"type": "a\x00b"}, "NUL"),
    ],
)
def test_public_filters_refuse_what_is_not_allowed(given: dict, named: str) -> None:
    with pytest.raises(ClientError, match="filters: ") as error:
        public_match(given)
    assert named in str(error.value)


def test_booleans() -> None:
    assert filters.where({"source_id": "a", "is_diff": True}) == "source_id = 'a' AND is_diff = true"
    with pytest.raises(ClientError):
        filters.eq("is_diff", "true")


def test_excluding_keeps_rows_without_the_field() -> None:
    assert filters.where({"content_type": Excluding(("references",))}) == (
        "(content_type IS NULL OR NOT content_type IN ('references'))"
    )
