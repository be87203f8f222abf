"""HTML, DOCX, Jupyter notebooks and source code through the one parser registry, then a folder of
them ingested and searched with the `type` / `language` filters."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.conftest import make_settings
from tests.file_formats import page_html, write_docx, write_notebook
from thoth.records import Document
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.writes.parsers import FORMATS, ParseError, content_kind, is_supported, parse, parser_version
from thoth.writes.writer import Writer

HTML_BODY = (
    "<h1>Deploying the service</h1><p>Deploy with the command line; see <a href='setup.html'>setup</a>.</p>"
    "<h2>Rollback</h2><p>Roll back to the previous revision.</p>"
    "<pre><code class='language-bash'>gcloud run services update-traffic svc --to-revisions=PREV=100</code></pre>"
    "<table><tr><th>flag</th><th>meaning</th></tr><tr><td>--to-revisions</td><td>traffic split</td></tr></table>"
)
GO_SOURCE = (
    'package main\n\nimport "fmt"\n\n// Greet says hello.\n'
    'func Greet(name string) string {\n\treturn fmt.Sprintf("hello %s", name)\n}\n'
)
PY_SOURCE = (
    'def rotate_signing_key(vault):\n    """Rotate the signing key held in the vault."""\n'
    '    return vault.rotate("signing")\n'
)


def test_html_keeps_headings_code_language_tables_and_absolute_links() -> None:
    data = page_html("Deploy guide", HTML_BODY, canonical="/docs/deploy", links=("/docs/", "/blog/")).encode()
    doc = parse("deploy.html", data, base_url="https://docs.example.com/docs/deploy.html")
    assert doc.title == "Deploy guide" and doc.url == "https://docs.example.com/docs/deploy"
    kinds = [(s.heading_path, [(b.kind, b.language) for b in s.blocks]) for s in doc.sections]
    assert kinds == [
        (["Deploying the service"], [("text", "")]),
        (["Deploying the service", "Rollback"], [("text", ""), ("code", "bash"), ("table", "")]),
    ]
    text = "\n".join(s.text for s in doc.sections)
    assert "[setup](https://docs.example.com/docs/setup.html)" in text  # links kept, made absolute
    assert "Copyright" not in text and "var x" not in text and "/blog/" not in text  # furniture dropped


def test_html_without_main_uses_readability() -> None:
    article = "<div class='content'><h2>Caching</h2>" + "<p>Cache entries expire after the TTL elapses. </p>" * 8
    menu = "<div class='menu'><a href='/x'>x</a></div>"
    data = f"<html><head><title>T</title></head><body>{menu}{article}</div></body></html>"
    doc = parse("page.htm", data.encode())
    assert any("Cache entries expire" in s.text for s in doc.sections)


def test_docx_headings_paragraphs_and_tables(tmp_path: Path) -> None:
    parts = [("h1", "Leave policy"), ("p", "Employees take leave by asking their manager."), ("h2", "Sick leave")]
    parts += [("p", "Sick leave needs no approval.")]
    path = write_docx(tmp_path / "leave.docx", "Leave Policy 2026", parts, [["kind", "days"], ["annual", "25"]])
    doc = parse("leave.docx", path.read_bytes())
    assert doc.title == "Leave Policy 2026"
    assert [s.heading_path for s in doc.sections] == [["Leave policy"], ["Leave policy", "Sick leave"]]
    assert doc.sections[1].blocks[-1].kind == "table" and "annual" in doc.sections[1].blocks[-1].text


def test_notebook_markdown_and_code_cells_in_the_kernel_language(tmp_path: Path) -> None:
    cells = [("markdown", "# Analysis\n\nLoad the data."), ("code", "import pandas as pd\ndf = pd.read_csv('x')")]
    doc = parse("a.ipynb", write_notebook(tmp_path / "a.ipynb", cells).read_bytes())
    blocks = [(b.kind, b.language, b.text) for s in doc.sections for b in s.blocks]
    assert blocks == [("text", "", "Load the data."), ("code", "python", "import pandas as pd\ndf = pd.read_csv('x')")]
    assert doc.title == "Analysis" and "42" not in str(blocks)  # outputs are left out


def test_source_code_files_carry_their_language() -> None:
    doc = parse("cmd/greet.go", GO_SOURCE.encode())
    assert doc.title == "greet.go" and doc.sections[0].heading_path == ["cmd/greet.go"]
    assert {(b.kind, b.language) for b in doc.sections[0].blocks} == {("code", "go")}
    assert "".join(b.text for b in doc.sections[0].blocks).replace("\n", "") == GO_SOURCE.replace("\n", "")


@pytest.mark.parametrize(
    ("key", "data", "reason"),
    [("x.ipynb", b"{not json", "not a Jupyter notebook"), ("x.ipynb", b'{"cells": []}', "no cells with content")],
)
def test_unreadable_new_formats_raise_parse_errors(key: str, data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse(key, data)


def test_each_format_is_one_registry_row_and_one_module() -> None:
    """`FORMATS` is all that names a format: its parser module's `read`, its suffixes (each one format's),
    its version and the kind a collection of its files is."""
    suffixes = [suffix for f in FORMATS for suffix in f.suffixes]
    assert len(suffixes) == len(set(suffixes)) and all(s == s.lower() and s.startswith(".") for s in suffixes)
    for found in FORMATS:
        assert callable(importlib.import_module(f"thoth.writes.parsers.{found.name}").read), found.name
        assert all(is_supported(f"a/b{suffix.upper()}") for suffix in found.suffixes)
    assert parser_version("x.pdf") and parser_version("x.pdf", fmt="html") == "" and parser_version("x.md") == ""
    assert content_kind(["a.txt", "b.pdf", "c.md"]) == "handbook" and content_kind(["a.py", "b.PDF"]) == "pdf"
    assert content_kind(["a.txt", "b"]) == "text" and content_kind([]) is None
    with pytest.raises(ParseError, match=r"unsupported file type \.csv; supported: \.md, \.mdx, "):
        parse("data.csv", b"a,b")


def test_a_folder_of_mixed_formats_is_searchable_by_type_and_language(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "src").mkdir(parents=True)
    (root / "deploy.html").write_text(page_html("Deploy guide", HTML_BODY))
    (root / "src" / "keys.py").write_text(PY_SOURCE)
    (root / "src" / "greet.go").write_text(GO_SOURCE)
    write_notebook(root / "explore.ipynb", [("markdown", "# Explore\n\nPlot it."), ("code", "plot(rotate(1))")])
    write_docx(root / "leave.docx", "Leave", [("h1", "Leave"), ("p", "Ask your manager for leave.")], [["a", "b"]])
    (root / "data.csv").write_text("a,b\n1,2\n")  # not a supported type: not listed
    assert not is_supported("data.csv")
    settings = make_settings(tmp_path / "db")
    summary = Writer(settings).run(str(root), name="mixed")
    assert not summary.failed and sorted(summary.ingested) == [
        "deploy.html",
        "explore.ipynb",
        "leave.docx",
        "src/greet.go",
        "src/keys.py",
    ]
    store = Store(settings)
    assert {d.key for d in store.find(Document, {"source_id": "mixed", "status": "ok"})} == set(summary.ingested)
    writer = Writer(settings, store)
    hits = hybrid_search(
        store, writer.embedder, "rotate the signing key", 5, match={"content_type": "code", "language": "python"}
    ).hits
    assert hits and {(h.chunk.key, h.chunk.language) for h in hits} <= {
        ("src/keys.py", "python"),
        ("explore.ipynb", "python"),
    }
    assert hits[0].chunk.key == "src/keys.py"
    go = hybrid_search(store, writer.embedder, "greet", 5, match={"language": "go"}).hits
    assert {h.chunk.key for h in go} == {"src/greet.go"}
    bash = hybrid_search(
        store, writer.embedder, "roll back traffic", 5, match={"content_type": "code", "language": "bash"}
    ).hits
    assert {h.chunk.key for h in bash} == {"deploy.html"}
