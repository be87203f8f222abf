"""Large sites (issue 52): a site that publishes only a gzipped sitemap index is crawled from it, and
parallel tasks (CLOUD_RUN_TASK_INDEX / COUNT) split its pages so N tasks fetch each page once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import make_settings
from tests.file_formats import page_html
from tests.web_site import Site, guide_pages, serve
from thoth.records import Document
from thoth.store import Store
from thoth.writes.writer import Writer

TOPICS = 60


@pytest.fixture
def site() -> Iterator[Site]:
    pages = {p: html for p, html in guide_pages(TOPICS).items() if p.startswith("/docs/topics/")}
    pages["/docs/"] = page_html("Docs", "<h1>Docs</h1><p>Start with <a href='topics/'>the topics</a>.</p>")
    served = Site(pages, sorted(pages), gzipped=True)
    server = serve(served)
    yield served
    server.shutdown()


@pytest.fixture(autouse=True)
def quick_crawls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback site: no rate limit, a short timeout."""
    monkeypatch.setattr("thoth.writes.web_fetch.REQUESTS_PER_SECOND", 0.0)
    monkeypatch.setattr("thoth.writes.web_fetch.TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr("thoth.writes.web.CONCURRENCY", 4)


def settings_for(db: Path):
    return make_settings(db, tree_build=False)


def topic_gets(site: Site) -> Counter:
    return Counter(path for path, _, _ in site.requests if path.startswith("/docs/topics/t"))


def test_a_gzipped_sitemap_index_is_read(site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thoth.writes.web.MAX_DEPTH", 0)  # no link hops: only the sitemaps lead anywhere
    settings = settings_for(tmp_path / "db")
    summary = Writer(settings).run(f"{site.url}/docs/", name="site")
    assert len([k for k in summary.ingested if k.startswith("docs/topics/t")]) == TOPICS, summary.render()
    assert {"/sitemap_index.xml.gz", "/docs/sitemap-pages.xml.gz"} <= {p for p, _, _ in site.requests}


def test_three_parallel_tasks_fetch_each_page_once(site: Site, tmp_path: Path) -> None:
    base = settings_for(tmp_path / "db")
    summaries = [
        Writer(replace(base, task_index=i, task_count=3)).run(f"{site.url}/docs/", name="site") for i in range(3)
    ]
    gets = topic_gets(site)
    assert len(gets) == TOPICS and set(gets.values()) == {1}, gets  # each page fetched once, by one task
    shares = [len(s.ingested) for s in summaries]
    assert all(shares) and sum(shares) == TOPICS + 2, shares  # the topics, their index and the docs home
    keys = [d.key for d in Store(base).find(Document, {"source_id": "site"})]
    assert len(keys) == len(set(keys)) == TOPICS + 2  # every page once

    # the three shares' validators were kept together: one task re-crawling sends conditional requests
    site.requests.clear()
    again = Writer(base).run(f"{site.url}/docs/", name="site")
    assert again.changed == 0 and again.unchanged == TOPICS + 2, again.render()
    conditional = {path: c for path, c, _ in site.requests if path.startswith("/docs/topics/t")}
    assert len(conditional) == TOPICS and all(conditional.values())
