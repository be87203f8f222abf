"""Web and git sources: crawl throughput at the default politeness, and what a re-run costs.

    python -m bench.crawl [--pages 40] [--repeats 3] [--files 30]

1. A generated documentation site (tests/web_site.py: `--pages` topic pages, a sitemap index, llms.txt,
   robots.txt) on 127.0.0.1. Crawl only (no parsing or embedding), `--repeats` times, at the default
   web_fetch.REQUESTS_PER_SECOND / web.CONCURRENCY: pages per second, and the ratio to the rate limit (1.0 =
   the crawler is as fast as its politeness allows).
2. The same site ingested (crawled, parsed, embedded, written), then crawled again unchanged: the page
   requests it sent, how many were conditional, how many answered 304, and the chunks embedded (0).
3. A git repository of `--files` Markdown files ingested; one commit changes one file; the re-run's
   files read and chunks embedded, against that file's chunk count.
Printed as one JSON object, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from tests.web_site import Site, guide_pages, serve
from thoth.config import Settings
from thoth.records import Chunk, Document
from thoth.source_spec import SourceSpec
from thoth.store import Store
from thoth.writes import web, web_fetch
from thoth.writes.writer import Writer

AWKWARD = ("/docs/slow", "/docs/big")  # the tests' timeout and size-limit pages: not throughput


def site_pages(count: int) -> dict[str, str]:
    return {path: html for path, html in guide_pages(count).items() if path not in AWKWARD}


def crawl_throughput(settings: Settings, start: str, repeats: int) -> dict:
    rates = []
    pages = 0
    for _ in range(repeats):
        crawl = web.crawl(SourceSpec.parse(start), settings, {})
        pages = len(crawl.objects)
        rates.append(pages / crawl.seconds)
    limit = web_fetch.REQUESTS_PER_SECOND
    return {
        "pages": pages,
        "pages_per_second": [round(r, 2) for r in rates],
        "median_pages_per_second": round(statistics.median(rates), 2),
        "spread": round(max(rates) - min(rates), 2),
        "rate_limit_per_second": limit,
        "ratio_to_rate_limit": round(statistics.median(rates) / limit, 2) if limit else None,
    }


def recrawl(settings: Settings, site: Site, start: str) -> dict:
    first = Writer(settings).run(start)
    site.requests.clear()
    again = Writer(settings).run(start)
    pages = [(p, c, s) for p, c, s in site.requests if not p.endswith((".txt", ".xml"))]
    seeds = [r for r in site.requests if r[0].endswith((".txt", ".xml"))]
    found = [r for r in pages if r[2] != 404]  # a link to a page the site does not have is asked for again
    return {
        "first_run": {"pages": len(first.ingested), "chunks_embedded": first.chunks_written},
        "recrawl": {
            "page_requests": len(found),
            "conditional": sum(c for _, c, _ in found),
            "not_modified_304": sum(s == 304 for _, _, s in found),
            "seed_requests": len(seeds),  # robots.txt, sitemaps, llms.txt: those that exist, then those that do not
            "seed_conditional_304": sum(c and s == 304 for _, c, s in seeds),
            "seed_missing_404": sum(s == 404 for _, _, s in seeds),
            "chunks_embedded": again.chunks_written,
            "ingested": len(again.ingested),
        },
    }


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@x"
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def one_file_commit(settings: Settings, root: Path, files: int) -> dict:
    repo = root / "handbook"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        body = "\n\n".join(
            f"Paragraph {j} of page {i}: the policy on topic {i} says item {j} applies." for j in range(12)
        )
        (repo / f"page-{i:03d}.md").write_text(f"# Page {i}\n\n{body}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    first = Writer(settings).run(repo.as_uri())
    (repo / "page-007.md").write_text("# Page 7\n\nRewritten: the policy on topic 7 changed entirely.\n")
    git(repo, "commit", "-q", "-am", "rewrite page 7")
    again = Writer(settings).run(repo.as_uri())
    store = Store(settings)
    document = store.first(Document, {"source_id": "handbook", "key": "page-007.md"})
    chunks = store.count_of(Chunk, {"doc_id": document.doc_id}) if document else -1
    return {
        "files": files,
        "first_run_chunks_embedded": first.chunks_written,
        "rerun_files_read": len(again.ingested),
        "rerun_chunks_embedded": again.chunks_written,
        "changed_file_chunks": chunks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=30)
    args = parser.parse_args()
    site = Site(site_pages(args.pages), ["/docs/", *[f"/docs/topics/t{i}" for i in range(args.pages)]])
    server = serve(site)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings.from_env(db_uri=f"{tmp}/db")
            start = f"{site.url}/docs/"
            out = {
                "load_average": os.getloadavg(),
                "politeness": {"rate": web_fetch.REQUESTS_PER_SECOND, "concurrency": web.CONCURRENCY},
                "crawl_only": crawl_throughput(settings, start, args.repeats),
                **recrawl(settings, site, start),
                "git_one_file_commit": one_file_commit(settings, Path(tmp), args.files),
                "load_average_after": os.getloadavg(),
            }
    finally:
        server.shutdown()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
