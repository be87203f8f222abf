"""Citation URLs over real HTTP: only http(s), gs, doc:// and raptor:// (file:// on a laptop index) are
stored or shown; anything else is refused at ingest and never emitted by a tool.

One index built by the ingest job from a folder whose pages claim good and bad front-matter URLs,
served with static tokens (a shared server: file: URLs are not shown there) and with auth off (a laptop).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.conftest import LiveServer, make_settings
from tests.test_auth import bearer
from thoth import citation_urls
from thoth.config import Settings
from thoth.records import Document
from thoth.store import Store, filters
from thoth.store.schema import DOCUMENTS
from thoth.writes.run_records import RunSummary
from thoth.writes.writer import Writer

READER = "reader-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"
REFUSED_URL = re.compile(r"(javascript|data|vbscript|file):[^\s]")  # a URL, not the word in a message
PAGES = {
    "good.md": "---\ntitle: Good page\nurl: https://handbook.example.com/good\n---\n# Good page\n\n"
    "Parking permits are handed out by the front desk on Mondays.\n",
    "script.md": "---\ntitle: Script page\nurl: javascript:alert(document.cookie)\n---\n# Script page\n\n"
    "Parking permits are free for cyclists who register their bicycle.\n",
    "data.md": "---\ntitle: Data page\ncanonical_url: data:text/html,<script>alert(1)</script>\n---\n"
    "# Data page\n\nParking permits expire at the end of the quarter.\n",
    "plain.md": "# Plain page\n\nParking for visitors is on the north side of the building.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, RunSummary]:
    root = tmp_path_factory.mktemp("pages")
    for key, text in PAGES.items():
        (root / key).write_text(text)
    settings = make_settings(tmp_path_factory.mktemp("db") / "lancedb", tree_build=False)
    return settings, Writer(settings).run(str(root), name="office")


@pytest.fixture(scope="module")
def shared(index: tuple[Settings, RunSummary]) -> Iterator[LiveServer]:
    settings = replace(index[0], auth_mode="tokens", auth_tokens=(READER,), auth_writer_tokens=(WRITER,))
    with LiveServer(settings) as live:
        yield live


@pytest.fixture(scope="module")
def laptop(index: tuple[Settings, RunSummary]) -> Iterator[LiveServer]:
    with LiveServer(index[0]) as live:
        yield live


def call(server: LiveServer, name: str, arguments: dict, token: str | None = READER) -> dict:
    response = server.rpc(
        "tools/call", {"name": name, "arguments": arguments}, headers=bearer(token) if token else None
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]


def assert_no_refused_url(result: dict) -> None:
    """Neither the structured content nor the text carries a URL with a refused scheme."""
    dumped = json.dumps(result).lower()
    found = REFUSED_URL.search(dumped)
    assert found is None, dumped[max(0, found.start() - 200) : found.end() + 200]


def test_the_rule() -> None:
    laptop, shared = make_settings("/tmp/db"), make_settings("/tmp/db", auth_mode="tokens", auth_tokens=("t" * 20,))
    for url in ("https://a.example/x", "http://a/b#page=2", "gs://bucket/key.pdf", "doc://c/k", "raptor://d/nodes/n"):
        assert citation_urls.shown(url, shared) == url
    refused = ["javascript:alert(1)", "JavaScript:x", " javascript:x", "java\tscript:x", "data:text/html,x"]
    refused += ["vbscript:x", "mailto:a@b.c", "http:/x", "https://", "notes/page.md", "file://server/share/x"]
    for url in refused:
        assert citation_urls.shown(url, laptop) is None, url
    assert citation_urls.shown("file:///home/me/a.md", laptop) == "file:///home/me/a.md"
    assert citation_urls.shown("file:///home/me/a.md", shared) is None
    assert citation_urls.shown("file:///a.md", make_settings("gs://bucket/db")) is None
    with pytest.raises(citation_urls.CitationUrlError, match=r"^source is refused as a citation URL: scheme 'data'"):
        citation_urls.check("data:x", "source", laptop)


def test_the_job_records_pages_claiming_other_schemes_as_failed(
    index: tuple[Settings, RunSummary], shared: LiveServer
) -> None:
    failed = dict(index[1].failed)
    assert set(failed) == {"script.md", "data.md"}
    assert "scheme 'javascript' is not allowed" in failed["script.md"] and "front matter url" in failed["script.md"]
    assert "scheme 'data' is not allowed" in failed["data.md"]
    # the reason is recorded with the document (without the refused value) ...
    files = call(shared, "list_collection_files", {"collection": "office"})["structuredContent"]["files"]
    errors = {f["key"]: f["error"] for f in files if f["status"] == "failed"}
    assert set(errors) == {"script.md", "data.md"} and "not allowed" in errors["script.md"]
    # ... and the planted text is not served
    hits = call(shared, "qurio_search", {"query": "parking permits cyclists quarter", "limit": 10})
    assert {h["title"] for h in hits["structuredContent"]["results"]} <= {"Good page", "Plain page"}


@pytest.mark.parametrize(
    "source",
    [
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "vbscript:msgbox",
        "file:///etc/passwd",
        "ftp://files.example.com/a.txt",
        "http:/no-host",
    ],
)
def test_ingest_document_refuses_a_source_with_another_scheme(shared: LiveServer, source: str) -> None:
    result = call(
        shared,
        "ingest_document",
        {"dataset_id": "claims", "file_content": "Lunch is at noon.", "source": source},
        WRITER,
    )
    message = result["content"][0]["text"]
    assert result["isError"] and message.startswith("source is ") and "refused as a citation URL" in message, message
    assert "allowed: http, https, gs, doc, raptor" in message or "must be" in message
    datasets = call(shared, "list_datasets", {})["structuredContent"]["datasets"]
    assert "claims" not in {d["id"] for d in datasets}  # nothing was written


def test_ingest_document_sources_that_are_kept(shared: LiveServer) -> None:
    web = {
        "dataset_id": "minutes",
        "file_content": "The board met on Tuesday and approved the budget.",
        "source": "https://wiki.example.com/minutes/2026-01",
    }
    path = {
        "dataset_id": "minutes",
        "file_content": "The picnic is moved to the lake shore in June.",
        "source": "notes/picnic.md",
    }
    for arguments in (web, path):
        result = call(shared, "ingest_document", arguments, WRITER)
        assert not result["isError"], result["content"][0]["text"]
    files = call(shared, "list_collection_files", {"collection": "minutes"})["structuredContent"]["files"]
    sources = {f["key"]: f["source"] for f in files}
    assert sources["wiki.example.com/minutes/2026-01.txt"] == web["source"]
    assert sources["notes/picnic.md"] == "doc://minutes/notes/picnic.md"  # a path is cited by Thoth's own scheme
    hits = call(shared, "qurio_search", {"query": "picnic lake shore", "source_id": "minutes", "limit": 1})
    url = hits["structuredContent"]["results"][0]["url"]
    assert url == "doc://minutes/notes/picnic.md"
    page = call(shared, "qurio_read_page", {"url": url})
    assert not page["isError"] and "lake shore" in page["structuredContent"]["content"]


def test_rows_from_before_the_rule_are_never_shown(index: tuple[Settings, RunSummary], shared: LiveServer) -> None:
    """A document written by an older Thoth (or edited in the table) with a refused url and uri."""
    store = Store(index[0])
    scope = f"{filters.eq('source_id', 'office')} AND {filters.eq('key', 'plain.md')}"
    (document,) = store.find(Document, {"source_id": "office", "key": "plain.md"}, fields=["url", "uri"])
    before = {"url": document.url, "uri": document.uri}
    store.tables.update(DOCUMENTS, scope, {"url": "javascript:alert(1)", "uri": "data:text/html,<b>x</b>"})
    try:
        hits = call(shared, "qurio_search", {"query": "visitors parking north side", "source_id": "office"})
        plain = next(h for h in hits["structuredContent"]["results"] if h["title"] == "Plain page")
        assert plain["url"] == "doc://office/plain.md"
        results = [
            hits,
            call(shared, "qurio_list_pages", {"source_id": "office"}),
            call(shared, "qurio_read_page", {"url": "doc://office/plain.md"}),
            call(shared, "list_collection_files", {"collection": "office"}),
            call(
                shared,
                "search",
                {"query": "visitors parking north side", "collection": "office", "include_document": True},
            ),
            call(shared, "retrieve_documents", {"dataset_id": "office", "query": "visitors parking"}),
        ]
        for result in results:
            assert not result["isError"], result["content"][0]["text"]
            assert_no_refused_url(result)
        citation = call(shared, "resolve_citation", {"source_ref": "doc://office/plain.md", "mode": "file"})
        assert citation["isError"] and "source_ref" in citation["content"][0]["text"]
        assert_no_refused_url(citation)
    finally:
        store.tables.update(DOCUMENTS, scope, before)


def test_file_urls_only_on_a_laptop_index(shared: LiveServer, laptop: LiveServer) -> None:
    # the ingest job wrote file:// for the files it read: a laptop client (auth off) sees them ...
    pages = call(laptop, "qurio_list_pages", {"source_id": "office"}, token=None)["structuredContent"]["pages"]
    assert next(p for p in pages if p["path"] == "good.md")["url"] == "https://handbook.example.com/good"
    assert next(p for p in pages if p["path"] == "plain.md")["url"].startswith("file:///")
    citation = call(laptop, "resolve_citation", {"source_ref": "doc://office/plain.md", "mode": "file"}, token=None)
    assert citation["structuredContent"]["url"].startswith("file:///")
    # ... a shared server's clients do not: their file: would point into their own disk
    pages = call(shared, "qurio_list_pages", {"source_id": "office"})["structuredContent"]["pages"]
    assert next(p for p in pages if p["path"] == "plain.md")["url"] == "doc://office/plain.md"
    citation = call(shared, "resolve_citation", {"source_ref": "doc://office/plain.md", "mode": "file"})
    assert citation["isError"] and "laptop" in citation["content"][0]["text"]
    assert_no_refused_url(call(shared, "list_collection_files", {"collection": "office"}))
