"""Build LanceDB `where` clauses from typed values: allow-listed columns, escaped literals.

A user's string only ever becomes a quoted SQL literal, never SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Columns a filter may name, with the Python type their values must have.
FILTERABLE: dict[str, type] = {
    "source_id": str,
    "doc_id": str,
    "key": str,
    "content_type": str,
    "language": str,
    "exercise_number": int,
    "step_number": int,
    "chunk_id": str,
    "partition_id": str,
    "status": str,
}


class FilterError(ValueError):
    """A filter names a column or value Thoth does not allow."""


def quote(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL refused."""
    if "\x00" in value:
        raise FilterError("filter values may not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def _literal(column: str, value: object) -> str:
    kind = FILTERABLE.get(column)
    if kind is None:
        raise FilterError(f"cannot filter on {column!r}; allowed: {', '.join(sorted(FILTERABLE))}")
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FilterError(f"filter {column!r} needs an integer, got {value!r}")
        return str(int(value))
    if not isinstance(value, str):
        raise FilterError(f"filter {column!r} needs a string, got {value!r}")
    return quote(value)


def eq(column: str, value: object) -> str:
    return f"{column} = {_literal(column, value)}"


def is_in(column: str, values: Iterable[object]) -> str:
    items = [_literal(column, v) for v in values]
    if not items:
        return "false"
    return f"{column} IN ({', '.join(items)})"


def where(conditions: Mapping[str, object | None]) -> str | None:
    """AND of equality conditions; None values are skipped; lists become IN (...)."""
    parts = []
    for column, value in conditions.items():
        if value is None:
            continue
        parts.append(is_in(column, value) if isinstance(value, list | tuple | set) else eq(column, value))
    return " AND ".join(parts) or None
