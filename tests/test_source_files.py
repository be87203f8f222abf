"""Listing a source (thoth/writes/source_files.py): a folder's parseable files and sidecars, in key order."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoth.writes.objects import SourceError
from thoth.writes.source_files import list_folder


def test_a_folder_lists_parseable_files_and_sidecars_but_nothing_hidden(tmp_path: Path) -> None:
    for name, text in {
        "b.md": "# B\n",
        "a/paper.txt": "text",
        "a/paper.txt.bib": "@misc{x, title={X}}",
        "image.png": "not content",
        ".git/HEAD.md": "hidden folder",
        ".notes.md": "hidden file",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    listed = list_folder(str(tmp_path))
    assert [o.key for o in listed] == ["a/paper.txt", "a/paper.txt.bib", "b.md"]
    assert listed[0].read() == b"text" and listed[0].uri == (tmp_path / "a/paper.txt").as_uri()


@pytest.mark.parametrize("source", ["s3://bucket/prefix", "/no/such/folder"])
def test_an_unusable_source_says_why(source: str) -> None:
    with pytest.raises(SourceError):
        list_folder(source)
