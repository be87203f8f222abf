"""Every tool's whole output, pinned: what the five tool surfaces answer must not change (issue 18).

One small index holds every kind of source: the conftest handbook corpus (Markdown and a generated
PDF, with a configured base URL), the conftest docs pages, the caching-fundamentals workshop
(tests/fixtures, with diffs), the mini workshop of conftest, and the topic corpus with a RAPTOR tree.
A real server (every toolset on, static reader and writer tokens) serves it. Each tool in `tools/list`
is called with one or two representative argument sets and at least one error case per surface, and
its whole result (every content block, structuredContent, isError) must equal the golden file
tests/fixtures/tool_golden.json. `tools/list` itself (names, descriptions, schemas, annotations) is
pinned too. The tools that write (set_default_collection, create_chat_session, ingest_document, the
sources surface's) run last, after every read has been recorded, so they cannot change what the reads answer.

Comparison: strings exactly after normalisation (see NORMALISERS), except numbers: a number in
structured content, or a number inside a text, may differ by at most 1e-3, so a last-digit float
difference on another machine cannot fail.

A tool without a golden entry fails `test_every_listed_tool_is_pinned`. A deliberate change of any
tool's output: regenerate with `THOTH_UPDATE_GOLDEN=1 python -m pytest -q tests/test_tool_golden.py`
and review the diff of the golden file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import (
    HANDBOOK_BASE_URL,
    REPO_ROOT,
    WORKSHOP,
    LiveServer,
    tree_settings,
    write_corpus,
    write_docs,
    write_mini_workshop,
    write_topic_corpus,
)
from thoth.config import Settings
from thoth.writes.writer import Writer

GOLDEN = Path(__file__).parent / "fixtures" / "tool_golden.json"
READER = "golden-reader-token-0123456789"
WRITER = "golden-writer-token-0123456789"
# A fixed correlation id: the qurio tools echo it (a generated one would be a fresh uuid per call).
HEADERS = {"X-Correlation-ID": "golden-test"}
TOLERANCE = 1e-3

# Ids from the index (content-derived, so stable): a PDF chunk, two topic chunks, tree nodes.
PDF_CHUNK = "ef216a02-d6a7-52f0-a4dd-cdc0f0bd47a9"
BEE_CHUNK = "9efe9dff-bb5e-5329-a0cf-5137179df55a"
BEE_CHUNK2 = "c0d90294-08f5-5f33-a59e-31694565c287"
LEVEL1_NODE = "99a0eb13b3d3f2915abb833f54330fdd"
ROOT_NODE = "c6d54344ae74f16a39ee8cae8eda4459"
NO_SUCH_CHUNK = "00000000-0000-5000-8000-000000000000"

# (label, tool, arguments): reads, in the order they run. Labels are the golden file's keys.
READS: list[tuple[str, str, dict]] = [
    # handbook
    ("time off", "search_handbook", {"query": "how do I request time off", "num_results": 3}),
    ("error code", "search_handbook", {"query": "THOTH-E1042"}),
    ("error: num_results out of range", "search_handbook", {"query": "deploy", "num_results": 99}),
    ("error: blank query", "search_handbook", {"query": "   "}),
    ("all", "list_topics", {}),
    ("last week (no git source)", "get_recent_updates", {"days": 7}),
    ("error: days out of range", "get_recent_updates", {"days": 0}),
    # qurio
    ("hybrid", "qurio_search", {"query": "deploy to Cloud Run", "limit": 3}),
    (
        "keyword, source and metadata filter",
        "qurio_search",
        {"query": "http.Get", "alpha": 0.0, "limit": 3, "source_id": "docs", "filters": {"language": "go"}},
    ),
    ("error: unknown filter", "qurio_search", {"query": "deploy", "filters": {"colour": "red"}}),
    ("all", "qurio_list_sources", {}),
    ("handbook, first page of 2", "qurio_list_pages", {"source_id": "handbook", "limit": 2}),
    ("error: unknown source", "qurio_list_pages", {"source_id": "no-such-source"}),
    ("handbook page", "qurio_read_page", {"url": "https://handbook.example.com/people/time-off"}),
    ("long page, truncated", "qurio_read_page", {"url": "https://docs.example.com/release-history", "max_chars": 300}),
    ("error: unknown url", "qurio_read_page", {"url": "https://nowhere.example.com/page"}),
    # workshop
    ("all", "list_workshops", {}),
    ("paged, with diffs", "list_workshops", {"hasDiffs": True, "all": False, "limit": 1}),
    (
        "step",
        "retrieve_learning_context",
        {"workshop": "caching-fundamentals", "exerciseNumber": 1, "stepNumber": 1, "maxChars": 1500},
    ),
    # random=true draws an exercise uniformly; hooks-mini has exactly one, so the draw is deterministic.
    ("random within a one-exercise workshop", "retrieve_learning_context", {"workshop": "hooks-mini", "random": True}),
    ("error: unknown workshop", "retrieve_learning_context", {"workshop": "no-such-workshop", "exerciseNumber": 1}),
    ("step", "retrieve_diff_context", {"workshop": "caching-fundamentals", "exerciseNumber": 1, "stepNumber": 1}),
    (
        "error: focus matches nothing",
        "retrieve_diff_context",
        {"workshop": "caching-fundamentals", "exerciseNumber": 1, "focus": "no-such-file"},
    ),
    ("scoped", "search_topic_context", {"query": "cache key", "workshop": "caching-fundamentals", "limit": 3}),
    ("error: step without exercise", "search_topic_context", {"query": "cache key", "stepNumber": 1}),
    (
        "topic and goal",
        "retrieve_quiz_instructions",
        {"topic": "HTTP caching", "learnerGoal": "set headers", "questionCount": 3},
    ),
    # research
    ("ping", "ping", {}),
    ("all", "list_collections", {}),
    ("handbook", "list_collection_files", {"collection": "handbook"}),
    ("error: unknown collection", "list_collection_files", {"collection": "no-such-collection"}),
    (
        "hybrid with partition and document",
        "search",
        {
            "query": "forklift operators",
            "top_k": 2,
            "collection": "handbook",
            "include_partition": True,
            "include_document": True,
        },
    ),
    ("cosine, every collection", "search", {"query": "pilot teams", "top_k": 2, "retrieval_mode": "cosine"}),
    ("pdf chunk", "fetch", {"id": PDF_CHUNK}),
    ("error: unknown id", "fetch", {"id": NO_SUCH_CHUNK}),
    ("pdf page, portal", "resolve_citation", {"source_ref": "doc://handbook/reports/quarterly.pdf#page=2"}),
    (
        "bucket and key, page range, highlight",
        "resolve_citation",
        {"bucket": "handbook", "key": "reports/quarterly.pdf", "page_start": 2, "page_end": 3, "highlight": "forklift"},
    ),
    (
        "error: file mode behind auth",
        "resolve_citation",
        {"bucket": "handbook", "key": "people/time-off.md", "mode": "file"},
    ),
    ("error: no reference", "resolve_citation", {}),
    ("pdf by key", "fetch_document_chunks", {"bucket": "handbook", "key": "reports/quarterly.pdf", "limit": 2}),
    ("pdf chunk", "fetch_chunk_document", {"id": PDF_CHUNK, "limit": 2}),
    ("pdf chunk", "fetch_chunk_partition", {"id": PDF_CHUNK}),
    ("pdf chunk", "fetch_chunk_bibtex", {"id": PDF_CHUNK}),
    # the golden corpus's PDFs hold no figure: these are the refusals
    ("error: a text chunk", "get_figure", {"id": PDF_CHUNK}),
    ("error: no figure in the document", "get_figure", {"key": "reports/quarterly.pdf", "figure": 1}),
    ("error: nothing named", "get_figure", {}),
    # raptor
    ("all", "list_datasets", {}),
    ("extractive", "answer_question", {"dataset_id": "topics", "query": "How are varroa mites treated?", "top_k": 3}),
    ("collapsed", "retrieve_documents", {"dataset_id": "topics", "query": "harbour cranes", "top_k": 3}),
    (
        "traversal",
        "retrieve_documents",
        {"dataset_id": "topics", "query": "telescope galaxies", "mode": "traversal", "top_k": 3, "expand_k": 2},
    ),
    ("error: unknown dataset", "retrieve_documents", {"dataset_id": "no-such-dataset", "query": "bees"}),
    ("collapsed", "rag_retrieve", {"dataset_id": "topics", "query": "honey bees", "top_k": 3}),
    (
        "traversal, capped, reranked, threshold",
        "rag_retrieve",
        {
            "dataset_id": "topics",
            "query": "compiler register allocation",
            "top_k": 3,
            "levels_cap": 1,
            "expand_k": 2,
            "reranker": True,
            "score_threshold": 0.2,
        },
    ),
    ("summary node", "rag_node_get", {"node_id": LEVEL1_NODE}),
    ("chunk", "rag_node_get", {"node_id": BEE_CHUNK}),
    ("error: unknown node", "rag_node_get", {"node_id": "no-such-node"}),
    ("root", "rag_node_children", {"node_id": ROOT_NODE}),
    ("parent", "rag_node_navigation", {"node_id": LEVEL1_NODE, "direction": "parent"}),
    ("siblings", "rag_node_navigation", {"node_id": BEE_CHUNK, "direction": "siblings"}),
    ("chunk", "rag_path_to_root", {"node_id": BEE_CHUNK}),
    ("two chunks", "rag_summarize", {"node_ids": [BEE_CHUNK, BEE_CHUNK2]}),
    # always there
    ("all", "list_tools", {}),
]

DOG_NOTE = "Guide dogs may come to the office on Fridays. Ask facilities for a water bowl."

# (label, tool, arguments, token): the tools that write, after every read.
WRITES: list[tuple[str, str, dict, str]] = [
    ("reader", "set_default_collection", {"name": "docs"}, READER),
    ("error: unknown collection", "set_default_collection", {"name": "no-such-collection"}, READER),
    ("topics", "create_chat_session", {"dataset_id": "topics", "title": "Golden session"}, READER),
    ("error: unknown dataset", "create_chat_session", {"dataset_id": "no-such-dataset"}, READER),
    (
        "new dataset",
        "ingest_document",
        {"dataset_id": "notes", "file_content": DOG_NOTE, "source": "notes/dogs.md", "tags": ["office"]},
        WRITER,
    ),
    (
        "same again: unchanged",
        "ingest_document",
        {"dataset_id": "notes", "file_content": DOG_NOTE, "source": "notes/dogs.md"},
        WRITER,
    ),
    ("error: bad dataset id", "ingest_document", {"dataset_id": "Not A Slug!", "file_content": DOG_NOTE}, WRITER),
    ("error: a reader may not", "ingest_document", {"dataset_id": "notes", "file_content": DOG_NOTE}, READER),
    # sources (issue 52): runs are child processes, exercised in tests/test_source_tools.py; pinned here are
    # the answers that start none
    ("error: a folder", "add_source", {"uri": "/etc"}, WRITER),
    ("error: bad glob", "add_source", {"uri": "https://docs.example.com/", "exclude": [""]}, WRITER),
    ("error: a reader may not", "add_source", {"uri": "https://docs.example.com/"}, READER),
    ("error: unknown source", "refresh_source", {"source": "no-such-source"}, WRITER),
    ("error: a folder source", "refresh_source", {"source": "docs"}, WRITER),
    ("no runs", "list_runs", {"source": "no-such-source"}, WRITER),
    ("error: unknown run", "get_run", {"run_id": "no-such-run"}, WRITER),
    ("error: unknown run", "cancel_run", {"run_id": "no-such-run"}, WRITER),
    ("error: unknown source", "remove_source", {"source": "no-such-source"}, WRITER),
    ("notes", "remove_source", {"source": "notes"}, WRITER),
]


@dataclasses.dataclass
class Golden:
    settings: Settings
    roots: dict[str, str]  # a folder that differs per run -> its placeholder


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Golden:
    """The index: handbook, docs, two workshops without trees; topics with its tree (small settings)."""
    settings = tree_settings(
        tmp_path_factory.mktemp("tool-golden") / "lancedb", source_base_urls=(("handbook", HANDBOOK_BASE_URL),)
    )
    flat = dataclasses.replace(settings, tree_build=False)  # only `topics` needs a tree: keep the build short
    handbook = write_corpus(tmp_path_factory.mktemp("golden-handbook"))
    docs = write_docs(tmp_path_factory.mktemp("golden-docs"))
    mini = write_mini_workshop(tmp_path_factory.mktemp("golden-ws") / "hooks-mini")
    topics = write_topic_corpus(tmp_path_factory.mktemp("golden-topics"), files_per_topic=2)
    for conf, root, name in [
        (flat, handbook, "handbook"),
        (flat, docs, "docs"),
        (flat, WORKSHOP, None),
        (flat, mini, None),
        (settings, topics, "topics"),
    ]:
        summary = Writer(conf).run(str(root), name=name)
        assert not summary.failed, summary.render()
    roots = {
        str(handbook): "<handbook>",
        str(docs): "<docs>",
        str(mini): "<hooks-mini>",
        str(topics): "<topics>",
        str(settings.db_uri): "<db>",
        str(REPO_ROOT): "<repo>",
    }
    return Golden(settings, roots)


@pytest.fixture(scope="module")
def golden_server(golden: Golden) -> Iterator[LiveServer]:
    settings = dataclasses.replace(
        golden.settings,
        auth_mode="tokens",
        auth_tokens=(READER,),
        auth_writer_tokens=(WRITER,),
        portal_base_url="https://portal.example.com",  # resolve_citation's mode without a bucket or file access
    )
    with LiveServer(settings) as live:
        yield live


def rpc(server: LiveServer, method: str, params: dict, token: str) -> dict:
    response = server.rpc(method, params, headers={**HEADERS, "Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    body = response.json()
    return body["result"] if "result" in body else {"jsonrpc_error": body["error"]}


# -- normalisation: what differs between runs of the same code, replaced by placeholders -------------

NORMALISERS: list[tuple[re.Pattern[str], str]] = [
    # create_chat_session's id is a fresh uuid4 per session (thoth.retrieval.sessions).
    (re.compile(r"sess_[0-9a-f]{32}"), "sess_<uuid>"),
    # Wall-clock times: updated_at / lastIndexedAt / created_at are when this run ingested or wrote.
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<timestamp>"),
    # The research `source_id` is the SHA-1 of the document's local URI (thoth.writes.prepare.object_id):
    # the URI holds this run's temporary folder. No other output has a 40-hex-digit value.
    (re.compile(r"\b[0-9a-f]{40}\b"), "<sha1-of-uri>"),
    # ingest_document's tree report says how long the build took.
    (re.compile(r"( by [\w.-]+) in \d+(?:\.\d+)?s\b"), r"\1 in <seconds>s"),
]


def normalise(value: object, roots: dict[str, str]) -> object:
    if isinstance(value, str):
        for root in sorted(roots, key=len, reverse=True):  # temporary folders and the checkout's path
            value = value.replace(root, roots[root])
        for pattern, placeholder in NORMALISERS:
            value = pattern.sub(placeholder, value)
        return value
    if isinstance(value, list):
        return [normalise(v, roots) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v, roots) for k, v in value.items()}
    return value


# -- comparison: exact, except numbers within TOLERANCE --------------------------------------------

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.0, abs_tol=TOLERANCE)


def differences(got: object, want: object, path: str = "") -> list[str]:
    """Where `got` and `want` differ, as 'path: got != want' lines (empty when they match)."""
    if isinstance(want, bool) or isinstance(got, bool) or want is None or got is None:
        return [] if got is want else [f"{path}: {got!r} != {want!r}"]
    if isinstance(want, int | float) and isinstance(got, int | float):
        same_kind = isinstance(want, float) == isinstance(got, float)
        return [] if same_kind and _close(got, want) else [f"{path}: {got!r} != {want!r}"]
    if isinstance(want, str) and isinstance(got, str):
        # the text between numbers must be equal; the numbers within TOLERANCE
        if NUMBER.split(got) == NUMBER.split(want):
            pairs = zip(NUMBER.findall(got), NUMBER.findall(want), strict=True)
            if all(g == w or ("." in g + w and _close(float(g), float(w))) for g, w in pairs):
                return []
        return [f"{path}: {got!r}\n    != {want!r}"]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items != {len(want)} items"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in differences(g, w, f"{path}[{i}]")]
    if isinstance(want, dict) and isinstance(got, dict):
        if list(got) != list(want):  # key order is part of the bytes a client reads
            return [f"{path}: keys {list(got)} != {list(want)}"]
        return [d for k in want for d in differences(got[k], want[k], f"{path}.{k}")]
    return [f"{path}: {got!r} != {want!r}"]


# -- the tests ------------------------------------------------------------------------------------


def listed_tools(server: LiveServer) -> list[dict]:
    return rpc(server, "tools/list", {}, WRITER)["tools"]


def test_every_listed_tool_is_pinned(golden_server: LiveServer) -> None:
    """A new tool without a golden entry fails here: add calls for it to READS or WRITES, then regenerate."""
    listed = {t["name"] for t in listed_tools(golden_server)}
    covered = {tool for _, tool, _ in READS} | {tool for _, tool, _, _ in WRITES}
    assert listed - covered == set(), (
        f"tools without a golden entry: {sorted(listed - covered)}; add calls for them to READS or WRITES in "
        "tests/test_tool_golden.py and run THOTH_UPDATE_GOLDEN=1 python -m pytest -q tests/test_tool_golden.py"
    )
    assert covered - listed == set(), f"tools pinned here but no longer listed: {sorted(covered - listed)}"


def run_all(server: LiveServer, roots: dict[str, str]) -> dict[str, object]:
    out: dict[str, object] = {"tools/list": normalise(listed_tools(server), roots)}
    # rag_retrieve's resources, read back (resources/read of the raptor_node template)
    node = {"uri": f"raptor://topics/nodes/{LEVEL1_NODE}"}
    out["resources/read: summary node"] = {
        "arguments": node,
        "result": normalise(rpc(server, "resources/read", node, READER), roots),
    }
    calls = [(label, tool, args, READER) for label, tool, args in READS] + WRITES
    for label, tool, arguments, token in calls:
        result = rpc(server, "tools/call", {"name": tool, "arguments": arguments}, token)
        out[f"{tool}: {label}"] = {"arguments": arguments, "result": normalise(result, roots)}
    return out


def test_tool_outputs_match_the_golden_file(golden_server: LiveServer, golden: Golden) -> None:
    got = run_all(golden_server, golden.roots)
    if os.environ.get("THOTH_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert list(got) == list(want), "calls differ from the golden file's; regenerate it (see the module docstring)"
    failed = {key: d for key in want if (d := differences(got[key], want[key]))}
    assert not failed, "\n".join(f"{key}:\n  " + "\n  ".join(d[:5]) for key, d in failed.items())
