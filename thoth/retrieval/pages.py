"""Sources and pages as documentation sets: listing, URLs, whole-page reads, search hits with URLs.

A document's URL is, in this order and as the citation URL rule allows (thoth.citation_urls):
its front matter's canonical URL; the source's THOTH_SOURCE_BASE_URLS base joined with the page's path
(`people/time-off.md` -> BASE/people/time-off); where the file lives (`file://…`, `gs://…`); Thoth's own
`doc://{source}/{key}`. A page is read back from the partitions table, which holds each section's text
once, so the chunker's overlap never appears twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from thoth import citation_urls
from thoth.config import Settings
from thoth.embed import Embedder
from thoth.errors import ClientError, NotFound
from thoth.formats import MARKDOWN
from thoth.records import Document, Hit, Partition, Source
from thoth.retrieval.documents import list_documents
from thoth.retrieval.paging import OffsetCursor, window
from thoth.retrieval.search import Searched, hybrid_search
from thoth.retrieval.sources import all_sources
from thoth.source_ref import SCHEME, SourceRef, SourceRefError, parse_ref
from thoth.store import Store, filters

INDEX_STEMS = ("index", "_index", "README")
# The fields of a document that its page shows, and of a partition that render_page joins.
DOCUMENT_FIELDS = ["source_id", "key", "uri", "url", "title", "status"]
PARTITION_FIELDS = ["ordinal", "kind", "heading_path", "page_start", "text"]


@dataclass(frozen=True)
class Page:
    """A document as a page of its source: the document and the URL a tool shows for it."""

    document: Document
    url: str


@dataclass(frozen=True)
class PageList:
    """One answer's share of a source's pages, sorted by path; `next_cursor` continues it."""

    source_id: str
    total: int
    pages: tuple[Page, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class PageText:
    """Part of a page's text: `content` starts at character `offset` of its `total_chars`."""

    page: Page
    content: str
    offset: int
    total_chars: int
    next_cursor: str | None

    @property
    def truncated(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class PageHit:
    """A search hit with the page it is on (None when the page's document row is gone) and that page's URL."""

    hit: Hit
    document: Document | None
    url: str


# -- URLs -----------------------------------------------------------------------------------


def _public_path(key: str) -> str:
    """`people/time-off.md` -> `people/time-off`; `people/index.md` -> `people`; other files unchanged."""
    pure = PurePosixPath(key)
    if pure.suffix.lower() not in MARKDOWN.suffixes:
        return key
    if pure.stem in INDEX_STEMS:
        return "" if str(pure.parent) == "." else pure.parent.as_posix()
    return pure.with_suffix("").as_posix()


def _keys_for(path: str) -> list[str]:
    """Keys whose public path is `path`, most likely first (the inverse of _public_path)."""
    stem = path.strip("/")
    prefix = f"{stem}/" if stem else ""
    keys = [stem] if stem else []
    keys += [f"{stem}{suffix}" for suffix in MARKDOWN.suffixes] if stem else []
    keys += [f"{prefix}{name}{suffix}" for name in INDEX_STEMS for suffix in MARKDOWN.suffixes]
    return keys


def page_url(document: Document, base_url: str | None, settings: Settings) -> str:
    """The first of the candidates above that the citation URL rule lets a tool show, else doc://."""
    candidates = [document.url, f"{base_url.rstrip('/')}/{_public_path(document.key)}" if base_url else None]
    for url in [*candidates, document.uri]:
        if citation_urls.shown(url, settings):
            return url
    return str(SourceRef(document.source_id, document.key))


def _page(document: Document, settings: Settings) -> Page:
    return Page(document, page_url(document, settings.base_url(document.source_id), settings))


def _ok_documents(store: Store, match: Mapping[str, object]) -> list[Document]:
    return store.find(Document, {**match, "status": "ok"}, fields=DOCUMENT_FIELDS)


def find_page(store: Store, settings: Settings, url: str) -> Document:
    """The document whose URL is `url` (a #fragment is ignored); NotFound when there is none."""
    bare = url.strip().split("#", 1)[0]
    if not bare:
        raise ClientError("url must be a page URL", argument="url")
    matches = _ok_documents(store, {"url": bare}) + _ok_documents(store, {"uri": bare})
    if not matches and bare.startswith(SCHEME):  # page_url's last resort: doc://{source}/{key}
        try:
            ref = parse_ref(bare)
        except SourceRefError:
            ref = None
        if ref is not None:
            matches = _ok_documents(store, {"source_id": ref.container, "key": ref.key})
    if not matches:
        for source_id, base in settings.source_base_urls:
            base = base.rstrip("/")
            if bare == base or bare.startswith(base + "/"):
                keys = _keys_for(bare[len(base) :])
                found = _ok_documents(store, {"source_id": source_id, "key": keys})
                matches = sorted(found, key=lambda d: keys.index(d.key))[:1]
                if matches:
                    break
    if not matches:
        raise NotFound(f"no indexed page has url {url!r}", argument="url")
    return min(matches, key=lambda d: (d.source_id, d.key))


# -- sources and pages ----------------------------------------------------------------------


def _require_source(store: Store, source_id: str) -> Source:
    source = store.first(Source, {"source_id": source_id})
    if source is None:
        known = ", ".join(s.source_id for s in all_sources(store)) or "(none: run `python -m ingest`)"
        raise NotFound(f"source_id {source_id!r} is not indexed; known sources: {known}")
    return source


def list_pages(
    store: Store, settings: Settings, source_id: str, limit: int, cursor: str | None, cursors: OffsetCursor
) -> PageList:
    """A source's pages (document and URL) sorted by path, `limit` at a time."""
    _require_source(store, source_id)
    offset = cursors.offset(cursor, {"s": source_id})
    listed = list_documents(store, source_id, status="ok", limit=limit, offset=offset)
    shown = tuple(_page(document, settings) for document in listed.documents)
    next_cursor = cursors.next(offset + limit, {"s": source_id}) if listed.next_offset is not None else None
    return PageList(source_id, listed.total, shown, next_cursor)


def render_page(partitions: Iterable[Partition]) -> str:
    """A page's sections joined in order, each under its heading (a heading is written once)."""
    out: list[str] = []
    previous: list[str] = []
    for part in sorted(partitions, key=lambda p: p.ordinal):
        path = [h for h in (part.heading_path or "").split(" > ") if h]
        if part.kind == "page" and part.page_start:
            out.append(f"[page {part.page_start}]")
        elif path and path != previous:
            same = next((i for i, (a, b) in enumerate(zip(path, previous, strict=False)) if a != b), None)
            first = min(len(path), len(previous)) if same is None else same
            first = min(first, len(path) - 1)  # a repeated heading path still gets its own heading
            out += [f"{'#' * min(level + 1, 6)} {path[level]}" for level in range(first, len(path))]
        previous = path
        text = part.text
        if part.kind == "diff" or part.kind.endswith("-code"):
            fence = "```diff" if part.kind == "diff" else "```"
            text = f"{fence}\n{text}\n```"
        out.append(text)
    return "\n\n".join(out)


def read_page(
    store: Store, settings: Settings, url: str, max_chars: int, cursor: str | None, cursors: OffsetCursor
) -> PageText:
    """The whole page at `url`, at most `max_chars` characters at a time; `next_cursor` continues it."""
    document = find_page(store, settings, url)
    offset = cursors.offset(cursor, {"d": document.doc_id})
    match = {"source_id": document.source_id, "doc_id": document.doc_id}
    text = render_page(store.find(Partition, match, fields=PARTITION_FIELDS))
    pieces, following = window([len(text)], 0, offset, max_chars)
    content = "".join(text[p.start : p.end] for p in pieces)
    next_cursor = cursors.next(following[1], {"d": document.doc_id}) if following else None
    return PageText(_page(document, settings), content, offset, len(text), next_cursor)


# -- search ---------------------------------------------------------------------------------


def search(
    store: Store,
    settings: Settings,
    get_embedder: Callable[[], Embedder],
    query: str,
    *,
    alpha: float,
    limit: int,
    source_id: str | None = None,
    metadata: dict | None = None,
) -> Searched[PageHit]:
    """Hybrid search (alpha: 0 keyword only, 1 vector only) with each hit's page URL attached, pages
    first: each page once, by its best passage plus a share of its others (`by_document`).

    Arguments are checked (source, filters) before the model is loaded or anything is searched.
    """
    if source_id is not None:
        _require_source(store, source_id)
    match = {"source_id": source_id, **filters.public_match(metadata)}
    searched = hybrid_search(store, get_embedder(), query, limit, alpha=alpha, match=match, documents=True)
    hits = searched.hits
    if not hits:
        return Searched([], searched.keyword_only)
    doc_ids = sorted({hit.chunk.doc_id for hit in hits})
    documents = store.find(Document, {"doc_id": doc_ids}, fields=DOCUMENT_FIELDS)
    by_key = {(d.source_id, d.key): d for d in documents}
    found = []
    for hit in hits:
        chunk = hit.chunk
        document = by_key.get((chunk.source_id, chunk.key))
        # No document row: the URL from what the chunk knows (its source and key).
        shown = document or Document(chunk.doc_id, source_id=chunk.source_id, key=chunk.key)
        url = page_url(shown, settings.base_url(chunk.source_id), settings)
        if (shown.uri or "").startswith(("http://", "https://")) and "#" not in url:  # a crawled page
            url += section_anchor(chunk.section, chunk.title)
        found.append(PageHit(hit, document, url))
    return Searched(found, searched.keyword_only)


def section_anchor(section: str, title: str) -> str:
    """`#heading-slug` of a passage's own heading (the last of `Title > Heading > …`), '' when it has none.

    The slug is the one GitHub, MkDocs and Docusaurus give headings: lower case, punctuation dropped,
    spaces as hyphens; a crawled page's citation opens at its section.
    """
    parts = [p for p in (section or "").split(" > ") if p]
    if parts and parts[0] == title:
        parts = parts[1:]
    if not parts:
        return ""
    slug = re.sub(r"[^\w\- ]", "", parts[-1].strip().lower()).replace(" ", "-")
    return f"#{slug}" if slug else ""
