"""Markdown and PDF parsing into partitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.pdfgen import write_text_pdf
from thoth.writes.parsers import ParseError, parse

MDX = b"""---
title: Deploy guide
url: https://handbook.example.com/deploy
---
import { Callout } from './callout'

# Deploying Thoth

Run the build first.

## Commands

```bash
# this is a comment, not a heading
make deploy
```

| env | value |
|-----|-------|
| PORT | 8080 |

### Rollback

Use the previous revision.
"""


def test_markdown_sections_code_and_front_matter() -> None:
    doc = parse("ops/deploy.mdx", MDX)
    assert doc.title == "Deploy guide"
    assert doc.url == "https://handbook.example.com/deploy"
    paths = [p.heading_path for p in doc.sections]
    assert paths == [["Deploying Thoth"], ["Deploying Thoth", "Commands"], ["Deploying Thoth", "Commands", "Rollback"]]
    commands = doc.sections[1].blocks
    assert [(b.kind, b.language) for b in commands] == [("code", "bash"), ("table", "")]
    assert "# this is a comment" in commands[0].text
    assert all("import" not in b.text for p in doc.sections for b in p.blocks)


def test_markdown_title_falls_back_to_h1_then_file_name() -> None:
    assert parse("a.md", b"# First heading\n\ntext").title == "First heading"
    assert parse("dir/notes.md", b"just text").title == "notes"


def test_pdf_pages_and_metadata(tmp_path: Path) -> None:
    path = write_text_pdf(tmp_path / "r.pdf", ["Alpha page text.", "Beta page text."], title="Report", author="Ann; Bo")
    doc = parse("r.pdf", path.read_bytes())
    assert doc.title == "Report" and doc.authors == ["Ann", "Bo"] and doc.page_count == 2
    assert [(p.page_start, p.text) for p in doc.sections] == [(1, "Alpha page text."), (2, "Beta page text.")]


@pytest.mark.parametrize(
    ("key", "data", "reason"),
    [
        ("x.md", b"   \n", "empty"),
        ("x.pdf", b"", "empty"),
        ("x.pdf", b"%PDF-1.7\ngarbage", "corrupt"),
        ("x.txt", b"\xff\xfe\x00bad", "UTF-8"),
        ("x.docx", b"PK..", "not a readable DOCX"),
        ("x.xlsx", b"PK..", "unsupported"),
    ],
)
def test_unreadable_files_raise_parse_errors(key: str, data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse(key, data)
