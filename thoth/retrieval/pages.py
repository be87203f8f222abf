"""Sources and pages as documentation sets: listing, URLs, whole-page reads, search hits with URLs.

Every document has a URL, in this order of preference:
1. the canonical URL from its front matter (`url`, `canonical_url`, `canonical`);
2. the source's configured base URL (THOTH_SOURCE_BASE_URLS) joined with the page's path, Markdown
   suffix dropped and `index` pages mapped to their folder (`people/time-off.md` -> BASE/people/time-off);
3. where the file lives: `file://…` locally, `gs://…` in a bucket;
4. Thoth's own `doc://{source}/{key}`.
Only URLs that the citation URL rule allows (thoth.retrieval.citation_urls) are candidates.
A page is read back from the partitions table, which holds each section's full text once, so the
chunker's overlap never appears twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from thoth.config import Settings
from thoth.embed import Embedder
from thoth.errors import ClientError, NotFound
from thoth.records import legacy_row
from thoth.retrieval import citation_urls
from thoth.retrieval.paging import CursorError, decode_cursor, encode_cursor, window
from thoth.retrieval.search import hybrid_search
from thoth.retrieval.source_ref import SCHEME, SourceRefError, format_ref, parse_ref
from thoth.store import Store, filters

MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown")
INDEX_STEMS = ("index", "_index", "README")
DOC_COLUMNS = ["doc_id", "source_id", "key", "uri", "url", "title", "status"]
PARTITION_COLUMNS = ["ordinal", "kind", "heading_path", "page_start", "text"]


# -- URLs -----------------------------------------------------------------------------------


def _public_path(key: str) -> str:
    """`people/time-off.md` -> `people/time-off`; `people/index.md` -> `people`; other files unchanged."""
    pure = PurePosixPath(key)
    if pure.suffix.lower() not in MARKDOWN_SUFFIXES:
        return key
    if pure.stem in INDEX_STEMS:
        return "" if str(pure.parent) == "." else pure.parent.as_posix()
    return pure.with_suffix("").as_posix()


def _keys_for(path: str) -> list[str]:
    """Keys whose public path is `path`, most likely first (the inverse of _public_path)."""
    stem = path.strip("/")
    prefix = f"{stem}/" if stem else ""
    keys = [stem] if stem else []
    keys += [f"{stem}{suffix}" for suffix in MARKDOWN_SUFFIXES] if stem else []
    keys += [f"{prefix}{name}{suffix}" for name in INDEX_STEMS for suffix in MARKDOWN_SUFFIXES]
    return keys


def page_url(doc: dict, base_url: str | None, settings: Settings) -> str:
    """The first of the candidates above that the citation URL rule lets a tool show, else doc://."""
    candidates = [doc.get("url"), f"{base_url.rstrip('/')}/{_public_path(doc['key'])}" if base_url else None]
    for url in [*candidates, doc.get("uri")]:
        if citation_urls.shown(url, settings):
            return url
    return format_ref(doc["source_id"], doc["key"])


def _ok(where: str) -> str:
    return f"{where} AND {filters.eq('status', 'ok')}"


def find_page(store: Store, settings: Settings, url: str) -> dict:
    """The document row whose URL is `url` (a #fragment is ignored); NotFound when there is none."""
    bare = url.strip().split("#", 1)[0]
    if not bare:
        raise ClientError("url must be a page URL, e.g. one from qurio_search or qurio_list_pages", argument="url")
    matches = store.find_documents(_ok(f"({filters.eq('url', bare)} OR {filters.eq('uri', bare)})"), DOC_COLUMNS)
    if not matches and bare.startswith(SCHEME):  # page_url's last resort: doc://{source}/{key}
        try:
            ref = parse_ref(bare)
        except SourceRefError:
            ref = None
        if ref is not None:
            scope = f"{filters.eq('source_id', ref.container)} AND {filters.eq('key', ref.key)}"
            matches = store.find_documents(_ok(scope), DOC_COLUMNS)
    if not matches:
        for source_id, base in settings.source_base_urls:
            base = base.rstrip("/")
            if bare == base or bare.startswith(base + "/"):
                keys = _keys_for(bare[len(base) :])
                rows = store.find_documents(
                    _ok(filters.where({"source_id": source_id, "key": keys}) or "true"), DOC_COLUMNS
                )
                matches = sorted(rows, key=lambda r: keys.index(r["key"]))[:1]
                if matches:
                    break
    if not matches:
        raise NotFound(
            f"no indexed page has url {url!r}; use a URL from qurio_search or qurio_list_pages(source_id=...)"
        )
    return sorted(matches, key=lambda r: (r["source_id"], r["key"]))[0]


# -- sources and pages ----------------------------------------------------------------------


def list_sources(store: Store) -> list[dict]:
    return sorted(store.list_sources(), key=lambda r: r["source_id"])


def _require_source(store: Store, source_id: str) -> dict:
    source = store.get_source(source_id)
    if source is None:
        known = ", ".join(r["source_id"] for r in list_sources(store)) or "(none: run `python -m ingest`)"
        raise NotFound(f"source_id {source_id!r} is not indexed; known sources: {known}")
    return source


def list_pages(store: Store, settings: Settings, source_id: str, limit: int, cursor: str | None) -> dict:
    """A source's pages (id, URL, title) sorted by path, `limit` at a time."""
    _require_source(store, source_id)
    offset = 0
    if cursor:
        state = decode_cursor(cursor, "qurio_list_pages")
        if state.get("s") != source_id or not isinstance(state.get("o"), int) or state["o"] < 0:
            raise CursorError("cursor belongs to another source_id; pass the same source_id as before")
        offset = state["o"]
    rows = sorted(store.find_documents(_ok(filters.eq("source_id", source_id)), DOC_COLUMNS), key=lambda r: r["key"])
    base = settings.base_url(source_id)
    page = [
        {"id": r["doc_id"], "url": page_url(r, base, settings), "title": r["title"], "path": r["key"]}
        for r in rows[offset : offset + limit]
    ]
    more = offset + limit < len(rows)
    next_cursor = encode_cursor("qurio_list_pages", {"s": source_id, "o": offset + limit}) if more else None
    return {"source_id": source_id, "total": len(rows), "pages": page, "next_cursor": next_cursor}


def render_page(partitions: list[dict]) -> str:
    """A page's sections joined in order, each under its heading (a heading is written once)."""
    out: list[str] = []
    previous: list[str] = []
    for part in sorted(partitions, key=lambda p: p["ordinal"]):
        path = [h for h in (part["heading_path"] or "").split(" > ") if h]
        if part["kind"] == "page" and part.get("page_start"):
            out.append(f"[page {part['page_start']}]")
        elif path and path != previous:
            same = next((i for i, (a, b) in enumerate(zip(path, previous, strict=False)) if a != b), None)
            first = min(len(path), len(previous)) if same is None else same
            first = min(first, len(path) - 1)  # a repeated heading path still gets its own heading
            out += [f"{'#' * min(level + 1, 6)} {path[level]}" for level in range(first, len(path))]
        previous = path
        text = part["text"]
        if part["kind"] == "diff" or part["kind"].endswith("-code"):
            fence = "```diff" if part["kind"] == "diff" else "```"
            text = f"{fence}\n{text}\n```"
        out.append(text)
    return "\n\n".join(out)


def read_page(store: Store, settings: Settings, url: str, max_chars: int, cursor: str | None) -> dict:
    """The whole page at `url`, at most `max_chars` characters at a time; `next_cursor` continues it."""
    doc = find_page(store, settings, url)
    offset = 0
    if cursor:
        state = decode_cursor(cursor, "qurio_read_page")
        if state.get("d") != doc["doc_id"] or not isinstance(state.get("o"), int):
            raise CursorError("cursor belongs to another page, or the page changed since; read it again from the start")
        offset = state["o"]
    scope = filters.where({"source_id": doc["source_id"], "doc_id": doc["doc_id"]})
    text = render_page(store.partitions(scope, PARTITION_COLUMNS))
    pieces, following = window([len(text)], 0, offset, max_chars)
    content = "".join(text[p.start : p.end] for p in pieces)
    next_cursor = encode_cursor("qurio_read_page", {"d": doc["doc_id"], "o": following[1]}) if following else None
    return {
        "url": page_url(doc, settings.base_url(doc["source_id"]), settings),
        "id": doc["doc_id"],
        "title": doc["title"],
        "source_id": doc["source_id"],
        "path": doc["key"],
        "content": content,
        "offset": offset,
        "total_chars": len(text),
        "truncated": following is not None,
        "next_cursor": next_cursor,
    }


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
) -> list[dict]:
    """Hybrid search (alpha: 0 keyword only, 1 vector only) with each hit's page URL attached, pages
    first: each page once, by its best passage plus a share of its others (`by_document`).

    Arguments are checked (source, filters) before the model is loaded or anything is searched.
    """
    if source_id is not None:
        _require_source(store, source_id)
    match = {"source_id": source_id, **filters.public_match(metadata)}
    found = hybrid_search(store, get_embedder(), query, limit, alpha=alpha, match=match, documents=True)
    hits = [legacy_row(hit) for hit in found]
    if not hits:
        return []
    docs = store.find_documents(filters.is_in("doc_id", sorted({h["doc_id"] for h in hits})), DOC_COLUMNS)
    by_key = {(d["source_id"], d["key"]): d for d in docs}
    by_doc = {d["doc_id"]: d for d in docs}
    for hit in hits:
        doc = by_key.get((hit["source_id"], hit["key"])) or by_doc.get(hit["doc_id"])
        base = settings.base_url(hit["source_id"])
        hit["url"] = page_url(doc or hit, base, settings)
    return hits
