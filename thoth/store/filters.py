"""Build LanceDB `where` clauses from typed values: allow-listed columns, escaped literals.

A user's string only ever becomes a quoted SQL literal, never SQL.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from thoth.errors import ClientError
from thoth.records import AtLeast, AtMost, Collections, Contains, Excluding, Present

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
    "kind": str,
    "url": str,
    "uri": str,
    "is_diff": bool,
    "page_start": int,
    "page_end": int,
    "bucket": str,
    "object_id": str,
    "partition_hash": str,
    "chunk_hash": str,
    "node_id": str,
    "tree_version": str,
    "level": int,
    "session_id": str,
    "run_id": str,
}

# Metadata filters a client may send (search tools' `filters` argument): public name -> column.
PUBLIC_FILTERS: dict[str, str] = {
    "type": "content_type",
    "content_type": "content_type",
    "language": "language",
    "exercise_number": "exercise_number",
    "step_number": "step_number",
    "path": "key",
}

# Keys that leave values out instead ({"exclude_type": "references"}: a paper's own text, not its bibliography).
PUBLIC_EXCLUDING: dict[str, str] = {"exclude_type": "content_type"}

# List columns a filter may test for one member (`array_has`), with their item type.
LIST_FILTERABLE: dict[str, type] = {"children": str, "tags": str}


INT32 = (-(2**31), 2**31 - 1)  # the range of the integer columns (thoth.store.schema)


def quote(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL refused."""
    if "\x00" in value:
        raise ClientError("filter values may not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def _literal(column: str, value: object) -> str:
    kind = FILTERABLE.get(column)
    if kind is None:
        raise ClientError(f"cannot filter on {column!r}; allowed: {', '.join(sorted(FILTERABLE))}")
    if kind is bool:
        if not isinstance(value, bool):
            raise ClientError(f"filter {column!r} needs true or false, got {value!r}")
        return "true" if value else "false"
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ClientError(f"filter {column!r} needs an integer, got {value!r}")
        if not INT32[0] <= value <= INT32[1]:  # the columns are 32-bit: Lance refuses a wider literal as a fault
            raise ClientError(f"filter {column!r} needs an integer from {INT32[0]} to {INT32[1]}")
        return str(int(value))
    if not isinstance(value, str):
        raise ClientError(f"filter {column!r} needs a string, got {value!r}")
    return quote(value)


def eq(column: str, value: object) -> str:
    return f"{column} = {_literal(column, value)}"


def has(column: str, value: str) -> str:
    """The list column `column` contains `value`."""
    if LIST_FILTERABLE.get(column) is not str:
        raise ClientError(f"cannot filter on list column {column!r}; allowed: {', '.join(sorted(LIST_FILTERABLE))}")
    if not isinstance(value, str):
        raise ClientError(f"filter {column!r} needs a string, got {value!r}")
    return f"array_has({column}, {quote(value)})"


def is_in(column: str, values: Iterable[object]) -> str:
    items = [_literal(column, v) for v in values]
    if not items:
        return "false"
    return f"{column} IN ({', '.join(items)})"


_COMPARISONS = ("<", "<=", ">", ">=", "=")


def compare(column: str, op: str, value: object) -> str:
    """`column op literal` for an allow-listed column and comparison operator."""
    if op not in _COMPARISONS:
        raise ClientError(f"comparison {op!r} is not allowed; allowed: {', '.join(_COMPARISONS)}")
    return f"{column} {op} {_literal(column, value)}"


def condition(column: str, value: object) -> str:
    """One condition of a Match (thoth.records): equal, one of a list, a bound, a list member, present."""
    if isinstance(value, list | tuple | set | frozenset):
        return is_in(column, value)
    if isinstance(value, AtLeast):
        return compare(column, ">=", value.value)
    if isinstance(value, AtMost):
        return compare(column, "<=", value.value)
    if isinstance(value, Contains):
        return has(column, value.value)
    if isinstance(value, Excluding):
        return f"({column} IS NULL OR NOT {is_in(column, value.values)})"
    if isinstance(value, Present):
        _literal(column, 0 if FILTERABLE.get(column) is int else "")  # the column must be allow-listed
        return f"{column} IS NOT NULL"
    return eq(column, value)


def where(conditions: Mapping[str, object | None]) -> str | None:
    """AND of a Match's conditions (thoth.records.Match); None values are skipped."""
    parts = [condition(column, value) for column, value in conditions.items() if value is not None]
    return " AND ".join(parts) or None


@functools.lru_cache(maxsize=256)  # one per distinct set of grants in use; built on every search otherwise
def within(collections: Collections) -> str | None:
    """The rows of `collections` (a caller's readable set), None for every collection: a prefilter."""
    if collections.every:
        return None
    if collections.all_but:
        return f"source_id NOT IN ({', '.join(quote(c) for c in sorted(collections.ids))})"
    return is_in("source_id", sorted(collections.ids))


def both(*clauses: str | None) -> str | None:
    """The AND of the clauses given (None ones skipped)."""
    present = [c for c in clauses if c]
    if len(present) <= 1:
        return present[0] if present else None
    return " AND ".join(f"({c})" for c in present)


def public_match(filters: Mapping[str, object] | None) -> dict[str, object]:
    """The Match of a client's metadata filters ({"type": "code", "language": ["go", "ts"]}).

    Keys must be in PUBLIC_FILTERS or PUBLIC_EXCLUDING; values are strings, integers or lists of them,
    always quoted.
    """
    if not filters:
        return {}
    conditions: dict[str, object] = {}
    for name, value in filters.items():
        column = PUBLIC_FILTERS.get(name) or PUBLIC_EXCLUDING.get(name)
        if column is None:
            allowed = ", ".join(sorted([*PUBLIC_FILTERS, *PUBLIC_EXCLUDING]))
            raise ClientError(f"filters: unknown key {name!r}; allowed: {allowed}")
        if column in conditions:
            raise ClientError(f"filters: {name!r} repeats a filter already given under another name")
        value = list(value) if isinstance(value, list | tuple) else value
        if value == []:
            raise ClientError(f"filters: {name!r} needs at least one value")
        try:
            where({column: value})  # check the value's type now, so the error names the client's key
        except ClientError as exc:
            raise ClientError(f"filters: {name!r}: {exc}") from None
        conditions[column] = (
            Excluding(tuple(value) if isinstance(value, list) else (value,)) if name in PUBLIC_EXCLUDING else value
        )
    return conditions
