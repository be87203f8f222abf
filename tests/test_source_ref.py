"""source_ref: doc://{bucket}/{key}[?version_id=…][#page=N], written by ingest and read by resolve_citation."""

from __future__ import annotations

import pytest

from thoth.source_ref import SourceRef, SourceRefError, parse_ref


@pytest.mark.parametrize(
    ("container", "key", "version", "page", "ref"),
    [
        ("library", "papers/a.pdf", "1712", 3, "doc://library/papers/a.pdf?version_id=1712#page=3"),
        ("handbook", "people/time-off.md", None, None, "doc://handbook/people/time-off.md"),
        ("b", "odd name #1?.pdf", None, 2, "doc://b/odd%20name%20%231%3F.pdf#page=2"),
    ],
)
def test_round_trip(container: str, key: str, version: str | None, page: int | None, ref: str) -> None:
    assert str(SourceRef(container, key, version, page)) == ref
    assert parse_ref(ref) == SourceRef(container, key, version, page)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("s3://b/k.pdf", "must start with doc://"),
        ("doc://", "no bucket or no key"),
        ("doc://bucket", "no bucket or no key"),
        ("doc://b/k.pdf?generation=1", "unknown parameter"),
        ("doc://b/k.pdf#page=0", "bad fragment"),
        ("doc://b/k.pdf#page=two", "bad fragment"),
    ],
)
def test_malformed_refs_say_what_is_expected(ref: str, message: str) -> None:
    with pytest.raises(SourceRefError, match=message) as info:
        parse_ref(ref)
    assert "doc://{bucket}/{key}" in str(info.value)
