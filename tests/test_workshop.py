"""The workshop surface over HTTP with real tables: ingest of an Epic Web-style repository, list_workshops,
learning and diff bundles with exact cursor paging, random scope, topic search, and the reindex route."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import LOOPBACK, WORKSHOP, LiveServer, call, error_text, make_settings, ok
from thoth.records import Chunk, Partition, Source
from thoth.retrieval import workshops
from thoth.store import Store
from thoth.writes.writer import Writer

WS = "caching-fundamentals"
EXERCISES = [(WS, 1), (WS, 2), (WS, 3), ("hooks-mini", 1)]
ADMIN = "s3cret-admin-token"
REINDEX = "/internal/workshop-index/reindex"


def all_pages(server: LiveServer, tool: str, arguments: dict) -> list[dict]:
    """Every page of a bundle, following nextCursor (alone, as a client would)."""
    pages = [ok(server, tool, arguments)]
    while pages[-1]["nextCursor"]:
        more = {"cursor": pages[-1]["nextCursor"]} | (
            {"maxChars": arguments["maxChars"]} if "maxChars" in arguments else {}
        )
        pages.append(ok(server, tool, more))
    return pages


def merged(pages: list[dict]) -> list[tuple[str, str]]:
    """(section id, content) with sections split across pages joined back together."""
    out: list[tuple[str, str]] = []
    for page in pages:
        for section in page["sections"]:
            if section["offset"]:
                assert out[-1][0] == section["id"]  # a continued section continues the last one
                out[-1] = (section["id"], out[-1][1] + section["content"])
            else:
                out.append((section["id"], section["content"]))
    return out


# -- ingest -----------------------------------------------------------------------------------


def test_workshop_source_sections_and_chunks(library) -> None:
    store = Store(library)
    source = store.first(Source, {"source_id": WS})
    assert (source.kind, source.name, source.product, source.has_diffs) == (
        "workshop",
        "Caching Fundamentals",
        "Epic Web",
        True,
    )
    mini = store.first(Source, {"source_id": "hooks-mini"})
    assert (mini.kind, mini.product, mini.has_diffs) == ("workshop", "www.epicreact.dev", False)
    parts = store.find(
        Partition, {"source_id": WS}, fields=["kind", "path", "is_diff", "exercise_number", "step_number"]
    )
    kinds = {p.kind for p in parts}
    assert kinds == {
        "workshop-instructions",
        "workshop-finished",
        "exercise-instructions",
        "exercise-finished",
        "problem-instructions",
        "solution-instructions",
        "problem-code",
        "solution-code",
        "diff-summary",
        "diff",
    }
    assert all(p.is_diff == (p.kind in ("diff", "diff-summary")) for p in parts)
    code_paths = {p.path for p in parts if p.kind.endswith("-code")}
    assert "exercises/01.memoization/01.problem.memo-fn/src/memo.ts" in code_paths
    # what the workshop hides from diffs (epicshop/.diffignore, tests) is left out of bundles altogether
    assert not any("generated/" in p or ".test." in p for p in code_paths)
    diff_files = {workshops.step_file(p.path) for p in parts if p.kind == "diff"}
    assert diff_files == {
        "src/memo.ts",
        "src/cache-key.ts",
        "src/headers.ts",
        "src/server.ts",
        "src/legacy.ts",
        "src/errors.ts",
    }
    assert not any("logo.png" in (p.path or "") for p in parts)  # binary files are skipped
    fields = ["content_type", "language", "exercise_number", "step_number", "key"]
    chunks = store.find(Chunk, {"source_id": WS}, fields=fields)
    diff_chunks = [c for c in chunks if c.content_type == "diff"]
    assert diff_chunks and any(c.language == "typescript" for c in diff_chunks)
    assert all(c.exercise_number is not None for c in chunks if c.key != "exercises")
    assert {(c.exercise_number, c.step_number) for c in chunks if c.step_number} == {
        (1, 1),
        (1, 2),
        (2, 1),
        (3, 1),
    }


# -- list_workshops ------------------------------------------------------------------------------


def test_list_workshops_with_filters_and_coverage(library_server: LiveServer) -> None:
    data = ok(library_server, "list_workshops", {})
    assert data["total"] == 2 and data["nextCursor"] is None
    caching = next(w for w in data["workshops"] if w["workshop"] == WS)
    assert (caching["exerciseCount"], caching["stepCount"], caching["hasDiffs"]) == (3, 4, True)
    assert caching["exercises"][0] == {"exerciseNumber": 1, "title": "memoization", "steps": [1, 2]}
    assert caching["sectionCount"] > caching["diffSectionCount"] > 0
    assert [w["workshop"] for w in ok(library_server, "list_workshops", {"product": "epic web"})["workshops"]] == [WS]
    assert [w["workshop"] for w in ok(library_server, "list_workshops", {"hasDiffs": False})["workshops"]] == [
        "hooks-mini"
    ]


def test_list_workshops_cursor_round_trip(library_server: LiveServer) -> None:
    first = ok(library_server, "list_workshops", {"all": False, "limit": 1})
    assert len(first["workshops"]) == 1 and first["nextCursor"]
    second = ok(library_server, "list_workshops", {"all": False, "limit": 1, "cursor": first["nextCursor"]})
    assert second["nextCursor"] is None
    assert [first["workshops"][0]["workshop"], second["workshops"][0]["workshop"]] == [WS, "hooks-mini"]
    other_filters = {"all": False, "hasDiffs": True, "cursor": first["nextCursor"]}
    assert "filters" in error_text(library_server, "list_workshops", other_filters)
    assert "cursor" in error_text(library_server, "list_workshops", {"all": False, "cursor": "not-a-cursor"})


# -- bundles ----------------------------------------------------------------------------------------


def test_learning_context_is_in_reading_order(library_server: LiveServer) -> None:
    data = ok(library_server, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1})
    assert (data["workshop"], data["exerciseNumber"], data["stepNumber"]) == (WS, 1, None)
    assert not data["truncated"] and data["nextCursor"] is None
    order = [(s["stepNumber"], s["kind"]) for s in data["sections"]]
    assert order[:4] == [
        (None, "exercise-instructions"),
        (None, "exercise-finished"),
        (1, "problem-instructions"),
        (1, "solution-instructions"),
    ]
    step1 = [kind for step, kind in order if step == 1]
    assert (
        step1.index("problem-code") < step1.index("solution-code") < step1.index("diff-summary") < step1.index("diff")
    )
    steps = [step for step, _ in order]
    assert steps == sorted(steps, key=lambda step: (step is not None, step or 0))
    assert "lookup table keyed by its" in data["sections"][0]["content"]
    step = ok(library_server, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "stepNumber": 2})
    assert {s["stepNumber"] for s in step["sections"]} == {2}
    assert step["stepNumber"] == 2


@pytest.mark.parametrize("max_chars", [100, 333, 1000])
def test_learning_context_pages_concatenate_to_the_whole_bundle(library_server: LiveServer, max_chars: int) -> None:
    whole = ok(library_server, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": 100000})
    assert not whole["truncated"]
    pages = all_pages(
        library_server, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": max_chars}
    )
    assert len(pages) == -(-whole["totalChars"] // max_chars)
    for page in pages[:-1]:
        assert page["truncated"] and sum(len(s["content"]) for s in page["sections"]) == max_chars
    assert not pages[-1]["truncated"]
    assert merged(pages) == [(s["id"], s["content"]) for s in whole["sections"]]


def test_learning_context_argument_errors(library_server: LiveServer) -> None:
    cases = [
        ({"workshop": "nope", "exerciseNumber": 1}, "caching-fundamentals"),  # lists what is indexed
        ({"workshop": WS, "exerciseNumber": 9}, "1, 2, 3"),
        ({"workshop": WS, "exerciseNumber": 1, "stepNumber": 7}, "1, 2"),
        ({"workshop": WS}, "exerciseNumber"),
        ({"stepNumber": 1}, "exerciseNumber"),
        ({}, "random=true"),
        ({"random": True, "exerciseNumber": 1}, "random=true"),
        ({"random": True, "workshop": "nope"}, "indexed workshops: caching-fundamentals, hooks-mini"),
        ({"workshop": WS, "exerciseNumber": 1, "maxChars": 5}, "maxChars"),
        ({"cursor": "bad"}, "cursor"),
    ]
    for arguments, named in cases:
        assert named in error_text(library_server, "retrieve_learning_context", arguments), arguments
    page = ok(library_server, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": 100})
    other_scope = {"workshop": WS, "exerciseNumber": 2, "cursor": page["nextCursor"]}
    assert "cursor continues" in error_text(library_server, "retrieve_learning_context", other_scope)
    assert "cursor" in error_text(library_server, "retrieve_diff_context", {"cursor": page["nextCursor"]})


def test_random_scope_over_http(library_server: LiveServer) -> None:
    seen = set()
    for _ in range(16):
        data = ok(library_server, "retrieve_learning_context", {"random": True, "maxChars": 200})
        scope = (data["workshop"], data["exerciseNumber"])
        assert data["random"] and scope in EXERCISES and data["sections"]
        seen.add(scope)
        if data["nextCursor"]:  # a random scope's cursor continues that same scope
            more = ok(library_server, "retrieve_learning_context", {"cursor": data["nextCursor"]})
            assert (more["workshop"], more["exerciseNumber"]) == scope and not more["random"]
    assert len(seen) >= 2
    within = ok(library_server, "retrieve_learning_context", {"random": True, "workshop": "hooks-mini"})
    assert within["workshop"] == "hooks-mini"


def test_random_scope_is_uniform_over_exercises(library) -> None:
    """Chi-square goodness of fit against uniform: 4 exercises (3 in one workshop, 1 in the other),
    fixed seed, bound at the 0.1% critical value for 3 degrees of freedom."""
    exercises = workshops.indexed_exercises(Store(library))
    assert exercises == sorted(EXERCISES)
    rng = random.Random(20240601)
    draws = 4000
    counts = dict.fromkeys(exercises, 0)
    for _ in range(draws):
        counts[workshops.choose_exercise(exercises, rng)] += 1
    expected = draws / len(exercises)
    chi_square = sum((n - expected) ** 2 / expected for n in counts.values())
    assert chi_square < 16.27, counts
    # uniform over exercises, not workshops: the one-exercise workshop gets a quarter, not a half
    assert counts[("hooks-mini", 1)] < draws * 0.3


def test_diff_context_with_focus_and_paging(library_server: LiveServer) -> None:
    data = ok(library_server, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2})
    assert data["sections"] and all(s["isDiff"] for s in data["sections"])
    assert [s["kind"] for s in data["sections"]] == ["diff-summary", "diff", "diff"]
    assert data["sections"][0]["content"] == "added src/headers.ts\nmodified src/server.ts"
    focused = ok(
        library_server, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2, "focus": "src/headers.ts"}
    )
    files = [workshops.step_file(s["sourcePath"]) for s in focused["sections"]]
    assert files == [None, "src/headers.ts"]  # the summary (of the step folder) names it too
    by_text = ok(library_server, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2, "focus": "purge"})
    assert [s["label"] for s in by_text["sections"]] == ["Diff: src/server.ts"]
    whole = ok(library_server, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 1, "focus": "memo"})
    pages = all_pages(
        library_server, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 1, "focus": "memo", "maxChars": 150}
    )
    assert len(pages) > 2 and merged(pages) == [(s["id"], s["content"]) for s in whole["sections"]]
    assert not any("generated" in (s["sourcePath"] or "") for s in whole["sections"])
    none = call(library_server, "retrieve_diff_context", {"workshop": "hooks-mini", "exerciseNumber": 1})
    assert not none["isError"] and none["structuredContent"]["sections"] == []
    assert "No sections" in none["content"][0]["text"]


# -- topic search ----------------------------------------------------------------------------------------


def test_search_topic_context(library_server: LiveServer) -> None:
    data = ok(library_server, "search_topic_context", {"query": "how long a response stays fresh in a CDN"})
    matches = data["matches"]
    assert matches and matches[0]["workshop"] == WS and matches[0]["exerciseNumber"] == 2
    assert {m["workshop"] for m in matches} <= {WS, "hooks-mini"}  # workshops only, never the handbook
    contents = [" ".join(m["chunk"].split()) for m in matches]
    assert len(contents) == len(set(contents))  # deduplicated
    scoped = ok(library_server, "search_topic_context", {"query": "cache key", "workshop": WS, "exerciseNumber": 3})
    assert scoped["matches"] and all(m["exerciseNumber"] == 3 for m in scoped["matches"])
    assert all(m["sectionKind"] for m in scoped["matches"])


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"query": "ab"}, "3 non-whitespace"),
        ({"query": " a  b \n"}, "3 non-whitespace"),
        ({"query": "cache", "workshop": "nope"}, "not indexed"),
        ({"query": "cache", "workshop": WS, "exerciseNumber": 4}, "exerciseNumber 4"),
        ({"query": "cache", "workshop": WS, "exerciseNumber": 1, "stepNumber": 3}, "stepNumber 3"),
        ({"query": "cache", "exerciseNumber": 1}, "needs workshop"),
        ({"query": "cache", "limit": 0}, "limit"),
    ],
)
def test_search_topic_context_refusals(library_server: LiveServer, arguments: dict, named: str) -> None:
    assert named in error_text(library_server, "search_topic_context", arguments)


def test_search_topic_context_without_an_embedder(library) -> None:
    settings = make_settings(library.db_uri, embed_model=str(Path(library.db_uri).parent / "no-such-model"))
    with LiveServer(settings) as live:
        # the scope is checked against the index first: no model needed to refuse it
        assert "not indexed" in error_text(live, "search_topic_context", {"query": "cache", "workshop": "nope"})
        data = ok(live, "search_topic_context", {"query": "cache", "workshop": WS})  # keyword search instead
        assert data["mode"] == "keyword" and "no-such-model" in data["warnings"][0] and data["matches"]
        assert ok(live, "list_workshops", {})["total"] == 2  # the rest of the surface still works
        assert ok(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2})["sections"]


# -- reindex ---------------------------------------------------------------------------------------------


def test_reindex_route_is_disabled_without_an_admin_token(library_server: LiveServer) -> None:
    response = LOOPBACK.post(library_server.url + REINDEX, headers={"Authorization": "Bearer anything"})
    assert response.status_code == 503 and "THOTH_ADMIN_TOKEN" in response.json()["error"]


def test_reindex_ingests_changes_and_needs_the_token(tmp_path: Path) -> None:
    root = shutil.copytree(WORKSHOP, tmp_path / "caching-fundamentals")
    settings = make_settings(tmp_path / "db", admin_token=ADMIN)
    first = Writer(settings).run(str(root))
    assert len(first.ingested) == 8 and not first.failed
    with LiveServer(settings) as live:
        url = live.url + REINDEX
        assert LOOPBACK.post(url).status_code == 401
        assert LOOPBACK.post(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert LOOPBACK.post(url, headers={"Authorization": ADMIN}).status_code == 401  # no scheme
        assert LOOPBACK.get(url, headers={"Authorization": f"Bearer {ADMIN}"}).status_code in (404, 405)  # POST only
        auth = {"Authorization": f"Bearer {ADMIN}"}

        unchanged = LOOPBACK.post(url, headers=auth, timeout=120).json()
        assert unchanged["status"] == "ok"
        assert unchanged["workshops"][0] | {"seconds": 0} == {
            "source_id": WS,
            "changed": 0,
            "ingested": [],
            "unchanged": 8,
            "removed": [],
            "failed": [],
            "chunks_written": 0,
            "seconds": 0,
        }

        step = root / "exercises" / "02.http-caching" / "01.solution.cache-control" / "src" / "headers.ts"
        step.write_text(step.read_text() + "\nexport const FRESH_SECONDS = 120\n")
        (root / "exercises" / "03.error-handling" / "README.mdx").write_bytes(b"# Errors\n\n\xff\xfe broken")
        shutil.rmtree(root / "exercises" / "01.memoization" / "02.problem.cache-key")
        shutil.rmtree(root / "exercises" / "01.memoization" / "02.solution.cache-key")
        summary = LOOPBACK.post(url, headers=auth, timeout=120).json()["workshops"][0]
        assert summary["ingested"] == ["exercises/02.http-caching/01"]
        assert summary["removed"] == ["exercises/01.memoization/02"]
        assert [f["key"] for f in summary["failed"]] == ["exercises/03.error-handling"]
        assert "UTF-8" in summary["failed"][0]["reason"]
        assert summary["unchanged"] == 5
        run = Store(settings).recent_runs(WS, limit=1)[0]  # the reindex in the ingest history
        assert (run.trigger, run.started_by) == ("reindex", f"POST {REINDEX}")
        assert (run.added, run.updated, run.removed, run.failed) == (0, 1, 1, 1) and "UTF-8" in run.failures[0]

        # the running server answers from the new index at once
        diff = ok(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2, "focus": "FRESH_SECONDS"})
        assert [s["label"] for s in diff["sections"]] == ["Diff: src/headers.ts"]
        coverage = ok(live, "list_workshops", {})["workshops"][0]
        assert coverage["exercises"][0]["steps"] == [1]
        assert "stepNumber 2" in error_text(
            live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "stepNumber": 2}
        )


@pytest.mark.parametrize(
    ("toolsets", "tools"),
    [
        (("handbook",), {"search_handbook", "list_topics", "get_recent_updates"}),
        (("qurio",), {"qurio_search", "qurio_list_sources", "qurio_list_pages", "qurio_read_page"}),
        (
            ("workshop",),
            {
                "list_workshops",
                "retrieve_learning_context",
                "retrieve_diff_context",
                "search_topic_context",
                "retrieve_quiz_instructions",
            },
        ),
    ],
)
def test_toolsets_switch_tools_and_routes(library, toolsets: tuple[str, ...], tools: set[str]) -> None:
    with LiveServer(make_settings(library.db_uri, toolsets=toolsets, admin_token=ADMIN)) as live:
        listed = {t["name"] for t in live.rpc("tools/list").json()["result"]["tools"]}
        assert listed == tools | {"list_tools"}
        if "workshop" not in toolsets:  # the route exists only with the workshop toolset
            reindex = LOOPBACK.post(live.url + REINDEX, headers={"Authorization": f"Bearer {ADMIN}"})
            assert reindex.status_code == 404
