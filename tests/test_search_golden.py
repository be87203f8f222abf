"""Search results do not change when the request path gets faster (issue 17).

The example handbook (examples/handbook) and the docs pages of conftest are ingested into a temporary
index and searched through the real server: search_handbook, qurio_search (with and without a
source filter and metadata filters, several alphas) and the research `search` (collection filter,
cosine mode). Every hit's identity and fused score, in order, must equal the golden file written
before issue 17 changed anything (tests/fixtures/search_golden.json).

The same searches are also run in process on a fresh Store (no caches, every column), so a difference
between the served path and the plain library path shows even when the golden file is regenerated.

A deliberate change of ranking (fusion, analyzer, chunking) changes the golden file: regenerate it
with `THOTH_UPDATE_GOLDEN=1 python -m pytest -q tests/test_search_golden.py` and review the diff.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, LiveServer, call, make_settings, write_docs
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.retrieval.search import hybrid_search
from thoth.store import Store
from thoth.writes.writer import Writer

GOLDEN = Path(__file__).parent / "fixtures" / "search_golden.json"
HANDBOOK = REPO_ROOT / "examples" / "handbook"

HANDBOOK_QUERIES = [
    "how do I deploy to Cloud Run",
    "on-call rotation and time off",
    "what does the ingest job do",
    "troubleshooting a server that returns 503",
    "hybrid search alpha",
    "write a handbook page",
    "local setup with make demo",
    "THOTH_DB_URI",
]

# (tool, arguments): filters inside the index query, alphas at both ends, several collections.
OTHER_CALLS: list[tuple[str, dict]] = [
    ("qurio_search", {"query": "deployment pipeline", "limit": 8}),
    ("qurio_search", {"query": "deployment pipeline", "limit": 8, "source_id": "handbook"}),
    ("qurio_search", {"query": "Go client http", "limit": 5, "source_id": "docs", "alpha": 0.0}),
    ("qurio_search", {"query": "release milestones dashboard", "limit": 5, "alpha": 1.0}),
    ("qurio_search", {"query": "code example", "limit": 5, "filters": {"type": "code"}}),
    ("search", {"query": "how are search results fused", "top_k": 6, "collection": "handbook"}),
    ("search", {"query": "pilot teams", "top_k": 4, "collection": "docs", "retrieval_mode": "cosine"}),
]


@pytest.fixture(scope="module")
def golden_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = make_settings(tmp_path_factory.mktemp("golden") / "lancedb")
    ingestor = Writer(settings)
    for root, name in [(HANDBOOK, "handbook"), (write_docs(tmp_path_factory.mktemp("golden-docs")), "docs")]:
        summary = ingestor.run(str(root), name=name)
        assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="module")
def golden_server(golden_index: Settings) -> Iterator[LiveServer]:
    with LiveServer(golden_index) as live:
        yield live


def _identity(hit: dict) -> list:
    """What makes a hit the same hit: where it comes from, which passage, and its fused score."""
    where = hit.get("key") or hit.get("source") or hit["url"].rsplit("/", 1)[-1]  # file:// URLs hold the tmp dir
    text = hit.get("content") or hit.get("text") or ""
    return [where, hit.get("section"), hit.get("source_ref"), text[:60], round(float(hit["score"]), 5)]


def _hits(result: dict) -> list[dict]:
    content = result["structuredContent"]
    return content.get("results") or content.get("hits") or []


def served(server: LiveServer) -> dict[str, list[list]]:
    out: dict[str, list[list]] = {}
    for query in HANDBOOK_QUERIES:
        result = call(server, "search_handbook", {"query": query, "num_results": 10})
        assert not result["isError"], result
        out[f"search_handbook {query}"] = [_identity(h) for h in _hits(result)]
    for tool, arguments in OTHER_CALLS:
        result = call(server, tool, arguments)
        assert not result["isError"], result
        out[f"{tool} {json.dumps(arguments, sort_keys=True)}"] = [_identity(h) for h in _hits(result)]
    return out


def test_served_results_match_the_golden_file(golden_server: LiveServer) -> None:
    got = served(golden_server)
    assert all(got.values()), {k: v for k, v in got.items() if not v}  # every search finds something
    if os.environ.get("THOTH_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == expected[key], key


def test_served_results_match_a_plain_uncached_search(golden_server: LiveServer, golden_index: Settings) -> None:
    """search_handbook over HTTP returns what hybrid_search returns on a Store opened just for this."""
    embedder = get_embedder(golden_index)
    for query in HANDBOOK_QUERIES:
        plain = hybrid_search(Store(golden_index), embedder, query, 10, documents=True).hits
        result = call(golden_server, "search_handbook", {"query": query, "num_results": 10})
        hits = _hits(result)
        assert [h["source_ref"] for h in hits] == [r.chunk.source_ref for r in plain], query
        assert [h["content"] for h in hits] == [r.chunk.text for r in plain], query
        assert [h["score"] for h in hits] == [r.score for r in plain], query
