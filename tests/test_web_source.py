"""Web sources against a real site on 127.0.0.1 (tests/web_site.py): seeds, politeness, failures with
their reasons, conditional re-crawls, changes and removals, then search and read over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LOOPBACK, LiveServer, make_settings, ok
from tests.web_site import Site, guide_pages, serve
from thoth.records import Chunk, Document
from thoth.store import Store
from thoth.writes.writer import Writer

SITEMAP = ["/docs/", "/docs/install", "/docs/old-install", "/docs/missing", "/docs/slow", "/docs/private/secrets"]


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site(guide_pages(), list(SITEMAP))
    server = serve(served)
    yield served
    server.shutdown()


@pytest.fixture(autouse=True)
def quick_crawls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback site: no rate limit, short timeouts and few retries, a small page limit to reach."""
    for name, value in {
        "TIMEOUT_SECONDS": 0.5,
        "RETRIES": 1,
        "REQUESTS_PER_SECOND": 0.0,
        "MAX_PAGE_BYTES": 8192,
    }.items():
        monkeypatch.setattr(f"thoth.writes.web_fetch.{name}", value)
    monkeypatch.setattr("thoth.writes.web.CONCURRENCY", 4)


def test_crawl_ingest_recrawl_change_remove_and_cite(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path / "db")
    start = f"{site.url}/docs/"
    summary = Writer(settings).run(start)
    assert summary.source_id == "127-0-0-1-" + str(site.port) + "-docs"
    pages = ["docs/", "docs/api", "docs/config", "docs/flaky", "docs/install", "docs/quickstart.md"]
    assert sorted(summary.ingested) == pages
    reasons = dict(summary.failed)
    assert reasons[f"{site.url}/docs/missing"] == "HTTP 404"
    assert reasons[f"{site.url}/docs/slow"] == "timeout after 0.5s"
    assert reasons[f"{site.url}/docs/private/secrets"] == "disallowed by robots.txt"
    assert reasons[f"{site.url}/docs/manual.pdf"] == "not HTML (application/pdf)"
    assert reasons[f"{site.url}/docs/big"].startswith("too large")
    assert reasons[f"{site.url}/docs/away"] == "redirected to another host"
    assert not any("/blog/" in url for url in reasons)  # outside the prefix: never requested
    assert not any(path.startswith("/blog") or "private" in path for path, _, _ in site.requests)
    assert sum(path == "/docs/install" for path, _, _ in site.requests) == 2  # itself and old-install's target
    assert [s for p, _, s in site.requests if p == "/docs/flaky"] == [503, 200]  # retried after its Retry-After
    store = Store(settings)
    install = store.first(Document, {"key": "docs/install"})
    assert install is not None and install.uri == install.url == f"{site.url}/docs/install"  # the redirect's target
    chunks = store.find(Chunk, {"doc_id": install.doc_id})
    assert {(c.content_type, c.language) for c in chunks} >= {("code", "toml")}

    # an unchanged site: only conditional page requests, nothing downloaded or embedded
    site.requests.clear()
    again = Writer(settings).run(start)
    assert again.ingested == [] and again.removed == [] and again.chunks_written == 0
    pages = [(p, c, s) for p, c, s in site.requests if not p.endswith((".txt", ".xml")) and p not in SKIPPED]
    known = {"/docs/", "/docs/install", "/docs/config", "/docs/api", "/docs/quickstart.md", "/docs/flaky"}
    assert {p for p, _, _ in pages} >= known
    assert all(conditional and status == 304 for path, conditional, status in pages if path in known)
    assert ("/docs/config", True, 304) in pages  # Last-Modified alone is honoured too
    seeds = [r for r in site.requests if r[0].endswith((".txt", ".xml")) and r[2] != 404]
    assert {p for p, _, _ in seeds} >= {
        "/robots.txt",
        "/sitemap_index.xml",
        "/docs/sitemap-pages.xml",
        "/docs/llms.txt",
    }
    assert all(conditional and status == 304 for _, conditional, status in seeds)  # seed files too

    # a changed page is replaced, a page dropped from the sitemap is removed
    site.set_page("/docs/api", site.pages["/docs/api"].replace("JSON over HTTPS", "JSON over gRPC and HTTPS"))
    site.sitemap.remove("/docs/old-install")
    site.sitemap.append("/docs/config")
    third = Writer(settings).run(start)
    assert third.ingested == ["docs/api"] and third.removed == []
    site.sitemap.remove("/docs/config")  # still served and linked from the install page, but dropped
    fourth = Writer(settings).run(start)
    assert fourth.removed == ["docs/config"] and fourth.ingested == []
    del site.pages["/docs/api"]  # llms.txt still links it: now a 404
    fifth = Writer(settings).run(start)
    assert fifth.removed == ["docs/api"] and dict(fifth.failed)[f"{site.url}/docs/api"] == "HTTP 404"
    monkeypatch.setattr("thoth.writes.web.MAX_PAGES", 2)
    cut = Writer(settings).run(start)  # the limit leaves pages unvisited
    assert cut.removed == [] and cut.ingested == [] and cut.chunks_written == 0  # those keep their versions

    with LiveServer(settings) as server:
        found = ok(server, "qurio_search", {"query": "zebrafish quota setting agent.toml", "limit": 3})
        top = found["results"][0]
        assert top["url"] == f"{site.url}/docs/install#configure-the-agent"
        page = ok(server, "qurio_read_page", {"url": top["url"]})
        assert page["url"] == f"{site.url}/docs/install" and "zebrafish = 42" in page["content"]
        assert "## Configure the agent" in page["content"]
        hit = ok(server, "search_handbook", {"query": "zebrafish quota setting agent.toml", "num_results": 1})
        cited = ok(server, "resolve_citation", {"source_ref": hit["results"][0]["source_ref"]})
        assert cited["url"].split("#")[0] == f"{site.url}/docs/install"  # the page itself, not a file or doc://
        console = LOOPBACK.get(f"{server.url}/ui/documents/{install.doc_id}", timeout=30)
        assert f'href="{site.url}/docs/install"' in console.text  # the console opens the real page
        home = LOOPBACK.get(f"{server.url}/ui/", timeout=30).text
        assert "web <code>" in home and "last crawled" in home
        listed = ok(server, "qurio_list_sources", {})["sources"]
        assert [(s["origin"], s["location"], s["commit"]) for s in listed] == [("web", start, None)]
        assert listed[0]["lastRead"]


SKIPPED = {"/docs/slow", "/docs/big", "/docs/missing", "/docs/manual.pdf", "/docs/old-install", "/docs/away"}
