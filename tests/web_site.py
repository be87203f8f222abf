"""A documentation site served on 127.0.0.1 for the crawler's tests and benchmark.

It has what real sites have: robots.txt (disallowing /docs/private/, naming a sitemap index), a
sitemap index and its sitemap, llms.txt, a redirect, a 404, a page slower than a short timeout, a
non-HTML file, a page over a small size limit, and ETag / Last-Modified on every page, honoured with
304; or (`gzipped`) only a gzipped sitemap index of gzipped sitemaps. Pages can be changed, removed or
dropped from the sitemap while it runs; every request is logged with whether it was conditional.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.file_formats import page_html

SLOW_SECONDS = 1.5


def guide_pages(count: int = 0) -> dict[str, str]:
    """The site's HTML pages by path; `count` extra generated pages for the benchmark."""
    pages = {
        "/docs/": page_html(
            "Example docs",
            "<h1>Example docs</h1><p>Welcome to the example product documentation.</p>"
            "<p><a href='install'>Install</a> <a href='old-install'>Old install</a> <a href='/blog/'>Blog</a> "
            "<a href='slow'>Slow</a> <a href='manual.pdf'>Manual</a> <a href='big'>Big</a> "
            "<a href='private/secrets'>Private</a> <a href='missing'>Missing</a> <a href='away'>Away</a> "
            "<a href='flaky'>Flaky</a></p>",
        ),
        "/docs/install": page_html(
            "Install guide",
            "<h1>Installing</h1><p>Install the agent on every host.</p>"
            "<h2 id='configure-the-agent'>Configure the agent</h2>"
            "<p>The agent reads its quota from the zebrafish setting in agent.toml.</p>"
            "<pre><code class='language-toml'>zebrafish = 42</code></pre><p><a href='config'>Configuration</a></p>",
            canonical="/docs/install",
        ),
        "/docs/config": page_html(
            "Configuration",
            "<h1>Configuration</h1><table><tr><th>key</th><th>default</th></tr><tr><td>port</td><td>8080</td></tr>"
            "</table><p>Back to <a href='/docs/'>the docs</a>.</p>",
        ),
        "/docs/flaky": page_html("Flaky", "<h1>Flaky</h1><p>Busy at first, then fine: a retry reads it.</p>"),
        "/docs/api": page_html("API", "<h1>API</h1><p>The API answers JSON over HTTPS; only llms.txt links it.</p>"),
        "/docs/private/secrets": page_html("Secrets", "<h1>Secrets</h1><p>Never crawled.</p>"),
        "/docs/slow": page_html("Slow", "<h1>Slow</h1><p>This page answers after the timeout.</p>"),
        "/docs/big": page_html("Big", "<h1>Big</h1>" + "<p>padding text for a page too large.</p>" * 400),
    }
    for i in range(count):
        body = f"<h1>Topic {i}</h1><p>Topic {i} explains feature number {i} of the product in plain words.</p>"
        body += f"<h2>Details {i}</h2><p>Setting {i} controls behaviour {i}; see <a href='/docs/'>home</a>.</p>"
        pages[f"/docs/topics/t{i}"] = page_html(f"Topic {i}", body)
    if count:
        links = "".join(f"<a href='/docs/topics/t{i}'>t{i}</a> " for i in range(count))
        pages["/docs/topics/"] = page_html("Topics", f"<h1>Topics</h1><p>{links}</p>")
    return pages


@dataclass
class Site:
    pages: dict[str, str]
    sitemap: list[str]  # paths the sitemap lists
    port: int = 0
    requests: list[tuple[str, bool, int]] = field(default_factory=list)  # (path, conditional, status)
    modified: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy_once: set[str] = field(default_factory=set)
    gzipped: bool = False  # publish only gzipped sitemaps: robots.txt names sitemap_index.xml.gz

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_page(self, path: str, html: str) -> None:
        with self.lock:
            self.pages[path] = html
            self.modified[path] = time.time() + 2  # a later Last-Modified than the one cached

    def files(self) -> dict[str, tuple[str, bytes]]:
        urls = "".join(f"<url><loc>{self.url}{p}</loc></url>" for p in self.sitemap)
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        index = f"{self.url}/docs/sitemap-pages.xml"
        if self.gzipped:  # what large sites do: a gzipped index of gzipped sitemaps, nothing else
            pages_gz = gzip.compress(f"<urlset {ns}>{urls}</urlset>".encode())
            index_xml = f"<sitemapindex {ns}><sitemap><loc>{index}.gz</loc></sitemap></sitemapindex>"
            robots = f"User-agent: *\nSitemap: {self.url}/sitemap_index.xml.gz\n"
            return {
                "/robots.txt": ("text/plain", robots.encode()),
                "/sitemap_index.xml.gz": ("application/gzip", gzip.compress(index_xml.encode())),
                "/docs/sitemap-pages.xml.gz": ("application/x-gzip", pages_gz),
            }
        return {
            "/robots.txt": (
                "text/plain",
                f"User-agent: *\nDisallow: /docs/private/\nSitemap: {self.url}/sitemap_index.xml\n".encode(),
            ),
            "/sitemap_index.xml": (
                "application/xml",
                f"<sitemapindex {ns}><sitemap><loc>{index}</loc></sitemap></sitemapindex>".encode(),
            ),
            "/docs/sitemap-pages.xml": ("application/xml", f"<urlset {ns}>{urls}</urlset>".encode()),
            "/docs/llms.txt": (
                "text/plain",
                f"# Example\n\n- [API]({self.url}/docs/api): the API\n- [Quickstart](/docs/quickstart.md)\n".encode(),
            ),
            "/docs/quickstart.md": ("text/markdown", b"# Quickstart\n\nRun `agent start` to begin.\n"),
            "/docs/manual.pdf": ("application/pdf", b"%PDF-1.7 not html"),
        }


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            conditional = bool(self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"))
            with site.lock:
                site.requests.append((self.path, conditional, status))
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 — the http.server protocol
            path = self.path
            if path == "/docs/old-install":
                return self._send(301, headers={"Location": "/docs/install"})
            if path == "/docs/flaky" and path not in site.busy_once:  # 503 the first time, then fine
                site.busy_once.add(path)
                return self._send(503, b"busy", {"Retry-After": "0"})
            if path == "/docs/away":  # another host (localhost is not 127.0.0.1's origin): never followed
                return self._send(302, headers={"Location": f"http://localhost:{site.port}/docs/install"})
            if path == "/docs/slow":
                time.sleep(SLOW_SECONDS)
            with site.lock:
                html = site.pages.get(path)
                stamp = site.modified.setdefault(path, 1_700_000_000.0)
            kind, body = "text/html; charset=utf-8", html.encode() if html is not None else b""
            if html is None:  # robots.txt, sitemaps, llms.txt, the PDF: with an ETag too
                kind, body = site.files().get(path, ("", b""))
                if not kind:
                    return self._send(404, b"not found")
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            modified = formatdate(stamp, usegmt=True)
            validators = {"ETag": etag, "Last-Modified": modified}
            if path == "/docs/config":  # a page with Last-Modified only: If-Modified-Since must do
                del validators["ETag"]
                etag = None
            if etag and self.headers.get("If-None-Match") == etag:
                return self._send(304, headers=validators)
            if not self.headers.get("If-None-Match") and self.headers.get("If-Modified-Since") == modified:
                return self._send(304, headers=validators)
            try:
                self._send(200, body, {"Content-Type": kind, **validators})
            except (BrokenPipeError, ConnectionResetError):  # the crawler gave up (timeout, too large)
                pass

    return Handler


def serve(site: Site) -> ThreadingHTTPServer:
    """Start serving `site` on a free port of 127.0.0.1 (the caller shuts it down)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    server.daemon_threads = True
    site.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
