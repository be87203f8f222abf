"""Polite HTTP for the crawler (docs/sources.md, "A website"): robots.txt, rate, retries, a size limit, conditional
requests; every outcome a `Fetched`, with the reason the run summary shows when it cannot be used."""

from __future__ import annotations

import logging
import threading
import time
import zlib
from dataclasses import dataclass, replace
from urllib import robotparser
from urllib.parse import urljoin, urlsplit

import httpx

from thoth.errors import retry_wait
from thoth.llm import RateLimiter

log = logging.getLogger("thoth.ingest")

RETRIED = (429, 500, 502, 503, 504)
BACKOFF_SECONDS = 0.5  # the first retry's wait, doubled for each one after it
MAX_REDIRECTS = 10
USER_AGENT = "ThothBot/1.0 (+https://github.com/thoth)"  # sent, and matched against robots.txt
REDIRECTS = (301, 302, 303, 307, 308)
MAX_RETRY_AFTER = 30.0  # the longest wait before a retry, whatever Retry-After asks
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_SEED_BYTES = 1024 * 1024  # a seed file kept for conditional re-crawls at most (a big sitemap is asked whole)
# Politeness a public site accepts, and bounds on one request
REQUESTS_PER_SECOND = 2.0  # started at most (robots.txt's Crawl-delay can slow it further); 0: no limit
RETRIES = 2  # of a timeout, 429 or 5xx, with exponential backoff (Retry-After honoured)
TIMEOUT_SECONDS = 15.0  # a slower page fails this run and keeps its stored version
MAX_PAGE_BYTES = 5 * 1024 * 1024  # a larger page is recorded as too large, not read


@dataclass(frozen=True)
class Fetched:
    """One request's outcome. `body` is set for a 200 within the limits; `reason` when it failed."""

    url: str  # the URL asked for
    final_url: str  # after redirects
    status: int  # the HTTP status; 0 when no response came (timeout, connection refused)
    body: bytes = b""
    content_type: str = ""
    etag: str | None = None
    last_modified: str | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.reason

    @property
    def not_modified(self) -> bool:
        return self.status == 304


GZIP_MAGIC = b"\x1f\x8b"
MAX_UNZIPPED_BYTES = 50 * 1024 * 1024  # the sitemap protocol's limit for one sitemap, uncompressed


def gunzip(body: bytes) -> bytes:
    """A gzipped body, unzipped up to MAX_UNZIPPED_BYTES (a zip bomb stops there); b"" when it is not gzip."""
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        return inflate.decompress(body, MAX_UNZIPPED_BYTES)
    except zlib.error:
        return b""


class Fetcher:
    """One crawl's HTTP client: its robots.txt rules, rate and counters."""

    def __init__(self, origin: str, seeds: dict[str, dict]):
        self.client = httpx.Client(
            timeout=TIMEOUT_SECONDS,
            follow_redirects=False,  # followed by _once, on the site's own origin only
            headers={"User-Agent": USER_AGENT},
        )
        self.robots = robotparser.RobotFileParser()
        self.robots.parse([])  # allow all until robots.txt says otherwise
        self.rate = RateLimiter(per_minute=max(1, round(REQUESTS_PER_SECOND * 60)))
        self.rate.interval = 1.0 / REQUESTS_PER_SECOND if REQUESTS_PER_SECOND > 0 else 0.0
        self.requests = 0
        self.conditional = 0
        self._count = threading.Lock()
        self.origin = origin
        self.previous_seeds = seeds
        self.seeds: dict[str, dict] = {}  # what the next crawl asks conditionally: robots.txt, sitemaps, llms.txt
        self._read_robots(origin)

    def close(self) -> None:
        self.client.close()

    def _read_robots(self, origin: str) -> None:
        got = self.seed(f"{origin}/robots.txt", check_robots=False, accept=("text/plain", "text/"))
        if got.ok:
            self.robots.parse(got.body.decode("utf-8", "replace").splitlines())
        elif 500 <= got.status < 600:  # RFC 9309: an unreachable robots.txt means "disallow everything"
            self.robots.parse(["User-agent: *", "Disallow: /"])
        delay = self.robots.crawl_delay(USER_AGENT)
        if delay:
            self.rate.interval = max(self.rate.interval, float(delay))

    def seed(self, url: str, *, accept: tuple[str, ...], check_robots: bool = True) -> Fetched:
        """A seed file (robots.txt, a sitemap, llms.txt), asked conditionally when the last crawl kept it;
        a 304 answers with the body kept then."""
        before = self.previous_seeds.get(url) or {}
        etag, modified = before.get("etag"), before.get("last_modified")
        got = self.get(url, etag=etag, last_modified=modified, check_robots=check_robots, accept=accept)
        if got.not_modified and "body" in before:  # unchanged: the kept body, the validators it came with
            etag, modified, body = got.etag or etag, got.last_modified or modified, before["body"].encode()
            got = replace(got, status=200, body=body, etag=etag, last_modified=modified, content_type=accept[0])
        if got.ok and got.body[:2] == GZIP_MAGIC:  # a gzipped sitemap (sitemap.xml.gz): kept and read unzipped
            got = replace(got, body=gunzip(got.body))
        if got.ok and len(got.body) <= MAX_SEED_BYTES and (got.etag or got.last_modified):
            body = got.body.decode("utf-8", "replace")
            self.seeds[url] = {"etag": got.etag, "last_modified": got.last_modified, "body": body}
        return got

    def sitemaps(self) -> list[str]:
        return list(self.robots.site_maps() or [])

    def allowed(self, url: str) -> bool:
        return self.robots.can_fetch(USER_AGENT, url)

    def get(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        check_robots: bool = True,
        accept: tuple[str, ...] = HTML_TYPES,
    ) -> Fetched:
        """GET `url` (conditionally when a validator is given), retrying timeouts, 429 and 5xx."""
        if check_robots and not self.allowed(url):
            return Fetched(url, url, 0, reason="disallowed by robots.txt")
        validators = (("If-None-Match", etag), ("If-Modified-Since", last_modified))
        headers = {name: value for name, value in validators if value}
        for attempt in range(RETRIES + 1):
            self.rate.wait()
            with self._count:
                self.requests += 1
                self.conditional += bool(headers)
            result, retry_after = self._once(url, headers, accept)
            if retry_after is None or attempt == RETRIES:
                return result
            time.sleep(retry_wait(attempt, retry_after, BACKOFF_SECONDS, MAX_RETRY_AFTER))
        raise AssertionError("unreachable")

    def _once(self, url: str, headers: dict[str, str], accept: tuple[str, ...]) -> tuple[Fetched, str | None]:
        """(the outcome, None or the Retry-After to honour before retrying: "" for the doubling wait). Redirects are
        followed here, only on the site's own origin (never to an internal address or a metadata server), every
        hop checked against robots.txt."""
        target = url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                with self.client.stream("GET", target, headers=headers) as response:
                    location = response.headers.get("location")
                    if response.status_code not in REDIRECTS or not location:  # (httpx counts a 304 as one)
                        return self._read(url, target, response, accept)
                    location = urljoin(target, location)
                if origin_of(location) != self.origin:
                    return Fetched(url, location, 0, reason="redirected to another host"), None
                if not self.allowed(location):
                    return Fetched(url, location, 0, reason="redirected to a URL robots.txt disallows"), None
                target = location
            return Fetched(url, target, 0, reason="too many redirects"), None
        except httpx.TimeoutException:
            return Fetched(url, target, 0, reason=f"timeout after {TIMEOUT_SECONDS:g}s"), ""
        except httpx.HTTPError as exc:
            return Fetched(url, target, 0, reason=f"request failed ({type(exc).__name__})"), ""

    def _read(
        self, url: str, final: str, response: httpx.Response, accept: tuple[str, ...]
    ) -> tuple[Fetched, str | None]:
        limit = MAX_PAGE_BYTES
        meta = {
            "content_type": response.headers.get("content-type", "").split(";")[0].strip().lower(),
            "etag": response.headers.get("etag"),
            "last_modified": response.headers.get("last-modified"),
        }
        status = response.status_code
        if status == 304:
            return Fetched(url, final, 304, **meta), None
        if status != 200:
            failed = Fetched(url, final, status, reason=f"HTTP {status}", **meta)
            return failed, (response.headers.get("retry-after", "") if status in RETRIED else None)
        if not any(meta["content_type"].startswith(t) for t in accept):
            return Fetched(url, final, status, reason=f"not HTML ({meta['content_type'] or 'no type'})"), None
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            return Fetched(url, final, status, reason=f"too large ({declared} bytes > {limit})"), None
        body = bytearray()
        for piece in response.iter_bytes():
            body += piece
            if len(body) > limit:
                return Fetched(url, final, status, reason=f"too large (over {limit} bytes)"), None
        return Fetched(url, final, 200, bytes(body), **meta), None


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
