"""The console (thoth.ui) over HTTP: every page against a real server on a loopback port, a real index.

What a page shows is checked on its HTML; tests/test_ui_browser.py checks it on screen.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import httpx
import pytest

from tests.conftest import LOOPBACK, LiveServer, make_settings
from thoth.records import Chunk, Document
from thoth.retrieval import tree
from thoth.store import Store
from thoth.ui.failures import GENERAL, advice


def get(server: LiveServer, path: str, **kwargs: object) -> httpx.Response:
    return LOOPBACK.get(f"{server.url}{path}", timeout=60, **kwargs)


def page(server: LiveServer, path: str, **params: object) -> str:
    response = get(server, path, params=params or None)  # None: keep a query string already in `path`
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert re.fullmatch(r"render;dur=\d+\.\d", response.headers["server-timing"])
    return html.unescape(response.text)


def links(body: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', body)]


def text_of(body: str) -> str:
    """The page's words without tags (what a reader sees, roughly)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture(scope="module")
def store(console_index) -> Store:
    return Store(console_index)


def test_ui_redirects_to_the_collections_page(console_server: LiveServer) -> None:
    response = get(console_server, "/ui", follow_redirects=False)
    assert response.status_code in (302, 303, 307) and response.headers["location"] == "/ui/"
    assert "Collections" in page(console_server, "/ui/")


def test_collections_page_lists_each_collection_with_counts_and_links(console_server: LiveServer) -> None:
    body = page(console_server, "/ui/")
    words = text_of(body)
    for name in ("handbook", "topics", "caching-fundamentals"):
        assert f'id="collection-{name}"' in body
    handbook = text_of(body.split('id="collection-handbook"')[1].split("</section>")[0])
    assert "Kind pdf" in handbook or "Kind handbook" in handbook or "Kind text" in handbook
    assert "Failed files 2 failed" in handbook
    assert "Embedding model" in handbook and "Last ingest" in handbook
    assert "/ui/collections/handbook?status=failed" in links(body)
    topics = text_of(body.split('id="collection-topics"')[1].split("</section>")[0])
    assert re.search(r"Tree \d+ levels?", topics), topics
    assert "/ui/trees/topics" in links(body)
    assert "/ui/workshops/caching-fundamentals" in links(body)
    assert "none failed" in words


def test_collection_page_pages_sorts_and_filters(console_server: LiveServer, store: Store) -> None:
    body = page(console_server, "/ui/collections/handbook")
    keys = re.findall(r'<li class="file status-(\w+)">\s*(?:<a [^>]+>|<strong>)([^<]+)<', body)
    assert [k for _, k in keys] == sorted(k for _, k in keys) and len(keys) == 7
    desc = page(console_server, "/ui/collections/handbook", sort="name", order="desc")
    desc_keys = re.findall(r'<li class="file status-\w+">\s*(?:<a [^>]+>|<strong>)([^<]+)<', desc)
    assert desc_keys == sorted(desc_keys, reverse=True)
    assert "date ingested" in page(console_server, "/ui/collections/handbook", sort="date")
    failed = page(console_server, "/ui/collections/handbook", status="failed")
    words = text_of(failed)
    assert "2 files with status failed" in words
    assert "reports/empty.pdf" in words and "reports/broken.pdf" in words
    assert "Why: empty file" in words and "What to do: The file is empty." in words
    assert "What to do: The file is damaged." in words
    assert "time-off" not in words
    ok = text_of(page(console_server, "/ui/collections/handbook", status="ok"))
    assert "reports/empty.pdf" not in ok and "people/time-off.md" in ok


def test_collection_page_is_paged(console_server: LiveServer, store: Store) -> None:
    from thoth.ui import views

    total = store.count_of(Document, {"source_id": "topics"})
    assert total > 1
    size, views.DOCUMENTS_PER_PAGE = views.DOCUMENTS_PER_PAGE, 5  # the server runs in this process
    try:
        first = page(console_server, "/ui/collections/topics")
        assert first.count('class="file ') == 5 and "Page 1 of" in first
        assert "/ui/collections/topics?page=2&sort=name&order=asc" in links(first)
        second = page(console_server, "/ui/collections/topics", page=2)
        assert 'start="6"' in second and "← Previous" in second
    finally:
        views.DOCUMENTS_PER_PAGE = size


@pytest.mark.parametrize(
    ("path", "params", "status", "message"),
    [
        ("/ui/collections/nope", {}, 404, "collection 'nope' does not exist; available: caching-fundamentals"),
        ("/ui/collections/handbook", {"status": "lost"}, 400, "status must be one of all, ok, failed, got 'lost'"),
        ("/ui/collections/handbook", {"sort": "size"}, 400, "sort must be one of name, date, got 'size'"),
        ("/ui/collections/handbook", {"page": "x"}, 400, "page must be a whole number, got 'x'"),
        ("/ui/collections/handbook", {"page": "99"}, 400, "page must be between 1 and 1, got 99"),
        ("/ui/documents/0000", {}, 404, "no ingested document with document_id '0000'"),
        ("/ui/search", {"q": "x", "mode": "fuzzy"}, 400, "mode must be one of hybrid, keyword, vector"),
        ("/ui/search", {"q": "x", "limit": "500"}, 400, "limit must be between 1 and 50, got 500"),
        ("/ui/trees/nope", {}, 404, "unknown dataset_id 'nope'"),
        ("/ui/trees/topics", {"level": "9"}, 400, "level must be between 0 and"),
        ("/ui/trees/topics/nodes/nope", {}, 404, "unknown node_id 'nope' in dataset 'topics'"),
        ("/ui/workshops/nope", {}, 404, "workshop 'nope' is not indexed; indexed workshops: caching-fundamentals"),
        ("/ui/workshops/caching-fundamentals", {"exercise": "9"}, 404, "exercise 9 is not in workshop"),
        ("/ui/cite", {}, 400, "ref must be a citation"),
        ("/ui/cite", {"ref": "http://x"}, 400, "must start with doc://"),
    ],
)
def test_bad_arguments_get_a_page_naming_them(
    console_server: LiveServer, path: str, params: dict, status: int, message: str
) -> None:
    response = get(console_server, path, params=params)
    assert response.status_code == status, response.text
    assert message in html.unescape(response.text)
    assert "server-timing" in response.headers


def _document_id(store: Store, key: str) -> str:
    return store.first(Document, {"source_id": "handbook", "key": key}, fields=[]).doc_id


def test_document_page_shows_metadata_bibtex_pages_and_chunks_with_citations(
    console_server: LiveServer, store: Store
) -> None:
    doc_id = _document_id(store, "reports/quarterly.pdf")
    body = page(console_server, f"/ui/documents/{doc_id}", collection="handbook")
    words = text_of(body)
    assert "<h1>Quarterly Report</h1>" in body
    assert "Authors Ada Lovelace" in words
    assert "Pages 3" in words
    assert "@" in body.split('class="bibtex"')[1].split("</details>")[0]  # a BibTeX entry
    assert "3 pages" in words and "Page 1" in words and "Page 3" in words
    assert "harbour contract" in words and "forklift operators" in words
    cites = [h for h in links(body) if h.startswith("/ui/cite?ref=")]
    assert cites and all("doc%3A%2F%2Fhandbook%2Freports%2Fquarterly.pdf" in h for h in cites)
    assert any("%23page%3D2" in h for h in cites)  # the citation of page two's chunk opens page two


def test_following_a_citation_opens_the_page_of_chunks_that_holds_it(console_server: LiveServer, store: Store) -> None:
    from thoth.ui import views

    doc_id = _document_id(store, "reports/quarterly.pdf")
    chunks = store.find(Chunk, {"doc_id": doc_id}, fields=["chunk_index"])
    last = max(chunks, key=lambda c: c.chunk_index)
    size, views.CHUNKS_PER_PAGE = views.CHUNKS_PER_PAGE, 1
    try:
        body = page(console_server, f"/ui/documents/{doc_id}", collection="handbook", chunk=last.chunk_id)
    finally:
        views.CHUNKS_PER_PAGE = size
    assert f'id="chunk-{last.chunk_id}" class="chunk cited"' in body
    assert "The cited passage" in body
    assert f"Page {last.chunk_index + 1} of {len(chunks)}" in body


def test_cite_resolves_a_local_citation_to_its_file_at_the_page(console_server: LiveServer) -> None:
    ref = "doc://handbook/reports/quarterly.pdf#page=2"
    body = page(console_server, "/ui/cite", ref=ref)
    target = re.search(r'class="target" href="([^"]+)"', body).group(1)
    assert target.startswith("file://") and target.endswith("reports/quarterly.pdf#page=2")


def test_cite_redirects_to_a_web_url(tmp_path, console_index) -> None:
    from tests.conftest import write_corpus
    from thoth.writes.writer import Writer

    settings = make_settings(tmp_path / "db", portal_base_url="https://portal.example.com")
    Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook")
    with LiveServer(settings) as live:
        response = get(live, "/ui/cite", params={"ref": "doc://handbook/reports/quarterly.pdf#page=3"})
    assert response.status_code == 303
    assert response.headers["location"].startswith("https://portal.example.com/handbook/reports/quarterly.pdf?")
    assert "page=3" in response.headers["location"]


def _hits(body: str) -> list[dict]:
    found = []
    for item in body.split('<li class="hit">')[1:]:
        cell = {k: re.search(rf'class="{k}">([^<]*)<', item).group(1) for k in ("keyword-rank", "vector-rank")}
        score = float(re.search(r'class="fused-score">([^<]*)<', item).group(1))
        title = re.search(r'<a class="citation" href="([^"]+)">([^<]+)</a>', item)
        found.append({**cell, "score": score, "href": html.unescape(title.group(1)), "title": title.group(2)})
    return found


def test_search_shows_keyword_rank_vector_rank_and_fused_score(console_server: LiveServer) -> None:
    body = page(console_server, "/ui/search", q="forklift operators hired", mode="hybrid", collection="handbook")
    hits = _hits(body)
    assert hits and hits[0]["title"] == "Quarterly Report"
    assert hits[0]["keyword-rank"] == "1" and hits[0]["vector-rank"].isdigit()
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert hits[0]["href"].startswith("/ui/documents/") and "chunk=" in hits[0]["href"]
    assert 'value="forklift operators hired"' in body and '<option value="handbook" selected>' in body


def test_search_modes_say_which_search_ran(console_server: LiveServer) -> None:
    keyword = _hits(page(console_server, "/ui/search", q="leave planner", mode="keyword"))
    assert keyword and all(h["vector-rank"] == "—" and h["keyword-rank"].isdigit() for h in keyword)
    assert keyword[0]["score"] == 1.0
    vector = _hits(page(console_server, "/ui/search", q="taking holidays", mode="vector"))
    assert vector and all(h["keyword-rank"] == "—" and h["vector-rank"].isdigit() for h in vector)
    assert [h["vector-rank"] for h in vector] == [str(i) for i in range(1, len(vector) + 1)]


def test_search_ranks_match_the_tools_functions(console_index, store: Store) -> None:
    """The page's ranks are those of the two searches hybrid search fuses; its order is hybrid search's."""
    from thoth.embedders import get_embedder
    from thoth.retrieval.search import explained_search, hybrid_search

    embedder = get_embedder(console_index)
    query = "flooding risk in the storage hall"
    explained = explained_search(store, embedder, query, 10).hits
    assert [h.chunk_id for h in explained] == [h.chunk_id for h in hybrid_search(store, embedder, query, 10).hits]
    keyword = [h.chunk_id for h in hybrid_search(store, None, query, 40, alpha=0.0).hits]
    vector = [h.chunk_id for h in hybrid_search(store, embedder, query, 40, alpha=1.0).hits]
    for hit in explained:
        assert hit.keyword_rank == (keyword.index(hit.chunk_id) + 1 if hit.chunk_id in keyword else None)
        assert hit.vector_rank == (vector.index(hit.chunk_id) + 1 if hit.chunk_id in vector else None)


def test_search_page_without_a_query_shows_the_form(console_server: LiveServer) -> None:
    body = page(console_server, "/ui/search")
    assert 'name="q"' in body and '<li class="hit">' not in body


def test_tree_page_lists_levels_and_the_top_level(console_server: LiveServer, store: Store) -> None:
    sizes = tree.level_sizes(store, "topics")
    assert len(sizes) >= 2
    body = page(console_server, "/ui/trees/topics")
    top = len(sizes) - 1
    assert f"Level {top} (top)" in body
    for level, count in enumerate(sizes):
        assert f"Level {level} ({count} {'chunks' if level == 0 else 'nodes'})" in text_of(body)
    nodes = re.findall(r'class="node-link" href="(/ui/trees/topics/nodes/[^"]+)"', body)
    assert len(nodes) == min(sizes[-1], 25)
    chunks = page(console_server, "/ui/trees/topics", level=0)
    assert chunks.count('class="node-link"') == min(sizes[0], 25)


def test_node_page_shows_summary_children_leaf_count_and_path(console_server: LiveServer, store: Store) -> None:
    total, (top, *_) = tree.level_nodes(store, "topics", len(tree.level_sizes(store, "topics")) - 1, 1)
    body = page(console_server, f"/ui/trees/topics/nodes/{top.node_id}")
    words = text_of(body)
    assert f"Leaf count {top.leaf_count} chunks" in words
    assert f"Children ({len(top.children)})" in words
    assert " ".join(top.text.split())[:80] in words
    child_links = re.findall(r'class="node-link" href="(/ui/trees/topics/nodes/[^"]+)"', body)
    assert [link.rsplit("/", 1)[1] for link in child_links] == list(top.children[:25])
    leaf = top.node_id
    while (node := tree.get_node(store, leaf)).level:  # down the first children to a chunk
        leaf = node.children[0]
    chunk = page(console_server, f"/ui/trees/topics/nodes/{leaf}")
    path = tree.path_to_root(store, leaf)
    assert "Path to the root" in chunk and chunk.count('aria-current="page"') == 1
    for node in path[1:]:
        assert f"/ui/trees/topics/nodes/{node.node_id}" in links(chunk)
    assert any(h.startswith("/ui/documents/") and f"chunk={leaf}" in h for h in links(chunk))


def test_tree_page_of_a_collection_without_a_tree(console_server: LiveServer) -> None:
    assert "This collection has no tree" in page(console_server, "/ui/trees/caching-fundamentals")


def test_workshop_page_shows_steps_with_diff_status_and_learning_context(console_server: LiveServer) -> None:
    body = page(console_server, "/ui/workshops/caching-fundamentals")
    words = text_of(body)
    assert "Exercise 1: memoization" in words.lower() or "Exercise 1:" in words
    assert "file changed" in words or "files changed" in words
    assert re.search(r"(modified|added|removed) \S+", words)
    context = [h for h in links(body) if "step=1" in h]
    assert context
    bundle = page(console_server, "/ui/workshops/caching-fundamentals", exercise=1, step=1)
    assert 'id="context"' in bundle and "retrieve_learning_context: exercise 1, step 1" in bundle
    assert '<article class="section' in bundle


def test_workshop_learning_context_continues_with_its_cursor(console_server: LiveServer) -> None:
    from thoth.ui import views

    size, views.LEARNING_CHARS = views.LEARNING_CHARS, 200
    try:
        first = page(console_server, "/ui/workshops/caching-fundamentals", exercise=1)
        following = [h for h in links(first) if "cursor=" in h]
        assert following, "a 200-character part must have a next part"
        second = page(console_server, following[0].split("#")[0])
    finally:
        views.LEARNING_CHARS = size
    assert "(continued)" in second or '<article class="section' in second
    assert second.split('id="context"')[1] != first.split('id="context"')[1]


def test_stylesheet_is_served_by_thoth(console_server: LiveServer) -> None:
    response = get(console_server, "/ui/static/console.css")
    assert response.status_code == 200 and "text/css" in response.headers["content-type"]
    assert "@media (max-width" in response.text
    assert "<script" not in page(console_server, "/ui/")  # no JavaScript at all


def test_console_sits_behind_the_same_auth_as_mcp(tmp_path, console_index) -> None:
    settings = make_settings(Path(console_index.db_uri), auth_mode="tokens", auth_tokens=("s3cret",))
    with LiveServer(settings) as live:
        assert get(live, "/ui/").status_code == 401
        assert get(live, "/ui/search", params={"q": "x"}).status_code == 401
        assert get(live, "/ui/", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert get(live, "/ui/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert get(live, "/health").status_code in (200, 503)  # health stays open


def test_a_folder_with_no_index_is_a_503_that_says_how_to_build_one(tmp_path) -> None:
    # The server's state, not the reader's link: 503 like /health, never "Bad request"
    with LiveServer(make_settings(tmp_path / "db")) as live:
        for path in ("/ui/", "/ui/search?q=vacation", "/ui/cite?ref=doc://handbook/a.md"):
            response = get(live, path)
            assert response.status_code == 503, (path, response.status_code)
            words = text_of(response.text)
            assert "Index unavailable" in words and "python -m ingest" in words, words


def test_nothing_on_the_console_writes(console_server: LiveServer) -> None:
    response = LOOPBACK.post(f"{console_server.url}/ui/collections/handbook", timeout=30)
    assert response.status_code == 405


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("encrypted PDF: a password is required (set THOTH_PDF_PASSWORD)", "Set THOTH_PDF_PASSWORD"),
        ("no text layer (image-only PDF, 4 pages): it would need OCR (set THOTH_PDF_OCR=true)", "THOTH_PDF_OCR"),
        ("no text layer (image-only PDF, 1 pages), and OCR found no legible text", "nothing to index"),
        ("unsupported file type .docx; supported: .md, .pdf", "Convert it"),
        ("not UTF-8 text (undecodable byte at offset 3)", "UTF-8"),
        ("parser error: KeyError: 'x'", "Report it"),
    ],
)
def test_failure_reasons_become_advice(reason: str, words: str) -> None:
    assert words in advice(reason)


def test_an_unknown_failure_gets_the_general_advice() -> None:
    assert advice("something new") == GENERAL and advice(None) == GENERAL


# -- the ingest history, dates, Markdown and the ranking as the console shows them ----------------------


def test_a_collection_lists_its_ingest_runs_newest_first(console_server: LiveServer) -> None:
    assert "/ui/runs/handbook" in page(console_server, "/ui/collections/handbook")
    html = page(console_server, "/ui/runs/handbook")
    runs = html.split('<section class="runs" id="runs">')[1]
    assert "Ingest runs of handbook" in html and "job" in runs and "test job" in runs
    assert "2 failed" in runs and "reports/broken.pdf: " in runs and "reports/empty.pdf: " in runs
    assert "No ingest runs recorded" in page(console_server, "/ui/runs/topics")
    collections = page(console_server, "/ui/")
    assert "Last run: 5 added, 0 updated, 0 removed, 2 failed." in collections


def test_dates_read_as_people_read_them_with_the_exact_time_on_hover() -> None:
    from datetime import UTC, datetime, timedelta

    from thoth.ui.dates import human, when

    now = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
    assert human(now - timedelta(seconds=20), now) == "just now"
    assert human(now - timedelta(minutes=1), now) == "1 minute ago"
    assert human(now - timedelta(hours=3, minutes=59), now) == "3 hours ago"
    assert human(now - timedelta(days=6), now) == "6 days ago"
    assert human(now - timedelta(days=8), now) == "12 Mar 2026"
    at = datetime(2026, 3, 12, 9, 5, 7, 123456, tzinfo=UTC)
    assert when(at) == (
        '<time datetime="2026-03-12T09:05:07.123456+00:00" title="2026-03-12 09:05:07 UTC">12 Mar 2026</time>'
    )
    assert when(at.isoformat()) == when(at) and when(None) == "never" and when(None, "unknown") == "unknown"


def test_chunk_markdown_is_rendered_and_sanitised() -> None:
    from thoth.ui.markdown import markdown

    html = markdown("| step | owner |\n|---|---|\n| build | **CI** |\n\n<script>alert(1)</script>")
    assert "<table>" in html and "<strong>CI</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    links = markdown("[a](javascript:alert(1)) [b](https://example.com) ![c](https://tracker.example/p.png)")
    assert "javascript:" not in links.split("[a]")[0] and 'href="https://example.com"' in links
    assert "<img" not in links


def test_the_search_page_explains_the_ranking_it_used(console_server: LiveServer) -> None:
    from thoth.retrieval.search import DEFAULT_RANKING

    hybrid = page(console_server, "/ui/search", q="time off", mode="hybrid")
    weight = DEFAULT_RANKING.vector_weight
    assert f"weights vector {weight:g}, keyword {1 - weight:g} (the default; no alpha given)" in hybrid
    assert "Convex fusion" in hybrid and "reciprocal rank fusion" not in hybrid.lower()
    keyword = page(console_server, "/ui/search", q="time off", mode="keyword")
    assert "Keyword search only (alpha 0)" in keyword
    assert "Vector search only (alpha 1)" in page(console_server, "/ui/search", q="time off", mode="vector")


def test_the_collections_page_shows_each_tables_health_as_health_reports_it(console_server: LiveServer) -> None:
    reported = LOOPBACK.get(f"{console_server.url}/health", timeout=30).json()["table_health"]
    body = page(console_server, "/ui/")
    assert 'id="index-health"' in body

    def cells(name: str) -> list[str]:  # the row's cells after the table's name
        words = text_of(body.split(f'id="health-{name}"')[1].split("</tr>")[0]).split()
        return words[words.index(name) + 1 :]

    for name in ("chunks", "documents", "sources"):
        health = reported[name]
        assert cells(name)[:3] == [str(health["versions"]), str(health["files"]), str(health["fragments"])], name
    chunks = cells("chunks")
    assert chunks[3] == str(reported["chunks"]["unindexed_rows"]) and chunks[4] == "never"  # not maintained yet
