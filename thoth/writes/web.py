"""Web sources: a crawl within a URL prefix (docs/sources.md, "A website"). Each page is a `SourceObject`
keyed by its path and fingerprinted by its bytes, so the writer's plan does the rest; what a crawl learned
(`crawl:{source_id}` in the store's settings) makes the next one conditional."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from urllib.parse import urldefrag, urljoin, urlsplit

from thoth.config import Settings
from thoth.source_ref import content_hash
from thoth.source_spec import SourceSpec, glob_regex
from thoth.writes.objects import SourceError, SourceObject, in_shard
from thoth.writes.parsers import HTML_FORMAT, format_of
from thoth.writes.web_fetch import HTML_TYPES, Fetcher, origin_of

GZIP_TYPES = ("application/gzip", "application/x-gzip", "application/octet-stream")

log = logging.getLogger("thoth.ingest")

MAX_SITEMAPS = 50  # sitemap files read per crawl (an index can name thousands)
MAX_PAGES = 1000  # pages one crawl fetches at most: a documentation site, not a whole domain
MAX_DEPTH = 8  # link hops from the start URL and the sitemap / llms.txt seeds
CONCURRENCY = 2  # requests in flight at once (web_fetch.REQUESTS_PER_SECOND bounds how many start)
_MD_LINK = re.compile(r"\]\((https?://[^)\s]+|/[^)\s]*)\)")
_SKIPPED_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".css", ".js", ".ico", ".zip", ".woff", ".woff2")


@dataclass
class PageState:
    """What the last crawl learned of one page, keyed by the URL it was asked for."""

    key: str
    url: str  # the canonical URL (the document's)
    doc_id: str
    etag: str | None = None
    last_modified: str | None = None
    links: list[str] = field(default_factory=list)
    in_sitemap: bool = False


@dataclass
class Crawl:
    """One crawl: the pages to plan with, what failed and why, and the state the next crawl starts from."""

    start: str
    objects: list[SourceObject] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (URL, reason)
    pages: dict[str, PageState] = field(default_factory=dict)
    requests: int = 0
    conditional: int = 0
    not_modified: int = 0
    downloaded: int = 0
    seconds: float = 0.0

    seeds: dict[str, dict] = field(default_factory=dict)  # seed files' validators and bodies
    split: bool = False  # one parallel task's share of the pages (by key): the others list the rest

    def state_json(self) -> str:
        pages = {url: asdict(page) for url, page in sorted(self.pages.items())}
        crawled_at = datetime.now(UTC).isoformat()
        return json.dumps({"start": self.start, "crawled_at": crawled_at, "pages": pages, "seeds": self.seeds})


def _previous(state: dict) -> tuple[dict[str, PageState], dict[str, dict]]:
    """What the last crawl saw (Store.saved_state), each page's state and the seed files', as validators to send."""
    try:
        pages = {url: PageState(**page) for url, page in state.get("pages", {}).items()}
        seeds = {url: seed for url, seed in (state.get("seeds") or {}).items() if isinstance(seed, dict)}
        return pages, seeds
    except (ValueError, TypeError, AttributeError):  # a damaged state: crawl without validators
        return {}, {}


def merged_state(saved: dict, state_json: str, index: int, count: int) -> str:
    """A split crawl's state with the pages the other tasks keep (each task saves only its share)."""
    state = json.loads(state_json)
    others = {u: p for u, p in (saved.get("pages") or {}).items() if not in_shard(str(p.get("key", "")), index, count)}
    state["pages"] = {**others, **state["pages"]}
    return json.dumps(state)


class Scope:
    """The URLs a crawl may visit: same scheme and host, under the start URL's path, not excluded by the
    source's globs. A page the include globs leave out is visited for its links but not listed."""

    def __init__(self, spec: SourceSpec):
        self.spec = spec
        start = spec.location
        parts = urlsplit(start)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SourceError(f"web source {start!r} must be an http(s)://host/… URL")
        self.start = urldefrag(start)[0]
        self.origin = origin_of(start)
        self.prefix = self.start if self.start.endswith("/") else self.start + "/"

    def normal(self, url: str, base: str | None = None) -> str | None:
        """`url` (relative to `base`) without its fragment when it is in scope, else None."""
        absolute = urldefrag(urljoin(base or self.start, url.strip()))[0]
        if absolute.lower().endswith(_SKIPPED_SUFFIXES):
            return None
        if absolute == self.prefix.rstrip("/") or absolute.startswith(self.prefix):
            return absolute if not any(glob_regex(p).match(_path(absolute)) for p in self.spec.exclude) else None
        return None

    def key(self, url: str) -> str:
        parts = urlsplit(url)
        key = parts.path.lstrip("/") or "index"
        return f"{key}?{parts.query}" if parts.query else key


def _path(url: str) -> str:
    """What scope globs match for a URL: its path without the leading slash."""
    return urlsplit(url).path.lstrip("/")


def _is_markdown(url: str) -> bool:
    found = format_of(urlsplit(url).path)
    return found is not None and found.name == "markdown"


def _html_links(body: bytes, base: str) -> tuple[list[str], str | None]:
    """(every <a href>, the canonical link) of a page."""
    from lxml import etree
    from lxml import html as lxml_html

    try:
        tree = lxml_html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return [], None
    canonical = next(iter(tree.xpath("//link[@rel='canonical']/@href")), None)
    return [str(h) for h in tree.xpath("//a/@href")], (urljoin(base, canonical) if canonical else None)


def _sitemap_urls(body: bytes) -> tuple[list[str], list[str]]:
    """(page URLs, child sitemap URLs) of a sitemap or sitemap index."""
    from lxml import etree

    try:
        root = etree.fromstring(body, parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return [], []
    locs = [str(t).strip() for t in root.xpath("//*[local-name()='loc']/text()")]
    return ([], locs) if etree.QName(root).localname == "sitemapindex" else (locs, [])


class _Crawler:
    def __init__(self, settings: Settings, scope: Scope, previous: dict[str, PageState], fetcher: Fetcher):
        self.settings, self.scope, self.previous, self.fetcher = settings, scope, previous, fetcher
        self.crawl = Crawl(scope.start)
        self.shard = (settings.task_index, settings.task_count)
        self.seen: set[str] = set()
        self.keys: set[str] = set()
        self.lock = threading.Lock()  # visits run on a thread pool

    def seeds(self) -> tuple[list[str], set[str]]:
        """(seed URLs in order, those a sitemap lists)."""
        fetcher, scope = self.fetcher, self.scope
        named = [u for u in fetcher.sitemaps() if origin_of(u) == scope.origin]  # never another host
        queue = named + [f"{scope.origin}/sitemap.xml", f"{scope.prefix}sitemap.xml"]
        read: set[str] = set()
        in_sitemap: list[str] = []
        xml = ("application/xml", "text/xml", "application/x-xml", *GZIP_TYPES)  # sitemap.xml.gz too
        while queue and len(read) < MAX_SITEMAPS:
            url = queue.pop(0)
            if url in read:
                continue
            read.add(url)
            got = fetcher.seed(url, accept=xml)
            if got.ok:
                pages, children = _sitemap_urls(got.body)
                in_sitemap += [u for p in pages if (u := scope.normal(p))]
                queue += [c for c in children if origin_of(c) == scope.origin]
        llms: list[str] = []
        for name in ("llms.txt", "llms-full.txt"):
            for base in dict.fromkeys([scope.prefix, f"{scope.origin}/"]):
                got = fetcher.seed(f"{base}{name}", accept=("text/",))
                if got.ok:
                    text = got.body.decode("utf-8", "replace")
                    llms += [u for link in _MD_LINK.findall(text) if (u := scope.normal(link, got.final_url))]
        seeds = list(dict.fromkeys([scope.start, *in_sitemap, *llms]))
        return seeds, set(in_sitemap)

    def visit(self, url: str, in_sitemap: bool) -> list[str]:
        """Fetch one page; record it or its failure; return its links in scope."""
        before = self.previous.get(url)
        # llms.txt often links Markdown versions of pages (`install.md`): those are read as Markdown
        accept = (*HTML_TYPES, "text/") if _is_markdown(url) else HTML_TYPES
        validators = {"etag": before.etag, "last_modified": before.last_modified} if before else {}
        got = self.fetcher.get(url, accept=accept, **validators)
        if got.not_modified and before is not None:
            self.crawl.not_modified += 1
            self._list(url, PageState(**{**asdict(before), "in_sitemap": in_sitemap}), None)
            return before.links
        if not got.ok:
            self.crawl.failures.append((url, got.reason or f"HTTP {got.status}"))
            passing = got.status == 0 and got.reason.startswith(("timeout", "request failed")) or got.status >= 500
            if before is not None and passing:  # the page is still there, as far as anyone knows: keep it
                self._list(url, before, None)
            return []
        self.crawl.downloaded += 1
        if _is_markdown(got.final_url) and not got.content_type.startswith(HTML_TYPES):
            hrefs, canonical = _MD_LINK.findall(got.body.decode("utf-8", "replace")), None
        else:
            hrefs, canonical = _html_links(got.body, got.final_url)
        document_url = (canonical and self.scope.normal(canonical)) or self.scope.normal(got.final_url)
        if document_url is None:
            self.crawl.failures.append((url, "redirected outside the source's URL prefix"))
            return []
        links = sorted({u for h in hrefs if (u := self.scope.normal(h, got.final_url))})
        key, fingerprint = self.scope.key(document_url), content_hash(got.body)
        page = PageState(key, document_url, fingerprint, got.etag, got.last_modified, links, in_sitemap)
        self._list(url, page, got.body)
        return links

    def mine(self, url_or_key: str, is_key: bool = False) -> bool:
        """Whether a page is this task's share of a split crawl (every page is, when the crawl is not split)."""
        key = url_or_key if is_key else self.scope.key(url_or_key)
        return not self.crawl.split or in_shard(key, *self.shard)

    def _list(self, url: str, page: PageState, body: bytes | None) -> None:
        """The page at `url` is the crawl's, and its document listed (once, by key)."""
        if not self.mine(page.key, is_key=True):  # another task's page (a redirect led here): theirs to list
            return
        self.crawl.pages[url] = page
        if not self.scope.spec.wants(_path(page.url)):  # the include globs leave it out: visited for its links only
            return
        with self.lock:
            if page.key in self.keys:  # two URLs of one page (a redirect and its target): listed once
                return
            self.keys.add(page.key)
        read = (lambda data=body: data) if body is not None else (lambda: self._refetch(page.url))
        self.crawl.objects.append(
            SourceObject(
                key=page.key,
                uri=page.url,
                size=len(body) if body is not None else 0,
                read=read,
                fingerprint=page.doc_id,
                format="" if _is_markdown(page.url) else HTML_FORMAT,  # Markdown by its suffix, else HTML
            )
        )

    def _refetch(self, url: str) -> bytes:
        """A page a 304 listed, read whole (the plan wants its bytes only when a parser changed)."""
        got = self.fetcher.get(url)
        if not got.ok:
            raise SourceError(f"cannot read {url}: {got.reason or got.status}")
        return got.body

    def run(self) -> Crawl:
        seeds, in_sitemap = self.seeds()
        # Parallel tasks split a crawl by page key when a sitemap lists the pages: each fetches its share of
        # them and follows links into its share only, so N tasks fetch each page once (docs/sources.md)
        self.crawl.split = self.shard[1] > 1 and bool(in_sitemap)
        # pages a sitemap listed last time and no longer lists are gone, even if a link still points there
        dropped = {u for u, p in self.previous.items() if p.in_sitemap and in_sitemap and u not in in_sitemap}
        frontier = [u for u in seeds if u not in dropped and self.mine(u)]
        self.seen.update(frontier)
        visited: set[str] = set()
        cut = False  # the page or depth limit left URLs unvisited
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            for _ in range(MAX_DEPTH + 1):  # one wave per link hop
                room = max(MAX_PAGES - len(visited), 0)
                wave, cut = frontier[:room], cut or len(frontier) > room
                if not wave:
                    break
                visited.update(wave)
                found = list(pool.map(lambda u: self.visit(u, u in in_sitemap), wave))
                frontier = []
                for links in found:
                    fresh = [u for u in links if u not in self.seen and u not in dropped and self.mine(u)]
                    self.seen.update(fresh)
                    frontier += fresh
            cut = cut or bool(frontier)
        if cut:
            self._keep_unvisited(visited, dropped)
        return self.crawl

    def _keep_unvisited(self, visited: set[str], dropped: set[str]) -> None:
        """A crawl cut short by its limits: pages stored before that it did not visit keep their versions
        (without a limit, a page no link or sitemap leads to any more is not listed, so it is removed)."""
        for url, page in sorted(self.previous.items()):
            if url not in visited and url not in dropped:
                self._list(url, page, None)


def crawl(spec: SourceSpec, settings: Settings, saved: dict) -> Crawl:
    """Crawl the site under the spec's URL, with conditional requests for what the last crawl `saved`."""
    began = time.perf_counter()
    scope = Scope(spec)
    pages, seeds = _previous(saved)
    fetcher = Fetcher(scope.origin, seeds)
    try:
        result = _Crawler(settings, scope, pages, fetcher).run()
    finally:
        fetcher.close()
    result.requests, result.conditional, result.seeds = fetcher.requests, fetcher.conditional, fetcher.seeds
    result.objects.sort(key=lambda o: o.key)
    result.seconds = time.perf_counter() - began
    log.info(
        "crawl %s: %d pages, %d downloaded, %d not modified, %d failed, %d requests in %.1fs",
        scope.start,
        len(result.objects),
        result.downloaded,
        result.not_modified,
        len(result.failures),
        result.requests,
        result.seconds,
    )
    return result
