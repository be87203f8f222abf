"""The workshop surface as quiz authors' assistants use it today (issue 14), over HTTP on a generated
workshop in the Epic Web layout: retrieve_quiz_instructions, the server's quick start, list_workshops
paging and titles, bundle shape and what bundles leave out, topic search modes and ranking, and the
one error shape with `next` hints."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import LiveServer, call, make_settings, ok
from tests.workshop_fixture import PRODUCT, TITLE, hidden_chars, write_epic_workshop, write_titled_by_readme
from thoth.config import Settings
from thoth.retrieval import workshop_topics
from thoth.retrieval.paging import MAX_CHARS_LIMIT
from thoth.writes.writer import Writer

WS = "quiz-ws"  # set with --name: the slug, never the title
HIDDEN_MARKERS = (".test.", "vite.config", "tsconfig", "yarn.lock", "fixtures/")


@pytest.fixture(scope="module")
def quiz_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = make_settings(tmp_path_factory.mktemp("quizdb") / "lancedb")
    ingestor = Writer(settings)
    for root, name in [
        (write_epic_workshop(tmp_path_factory.mktemp("ws") / "closures-and-state"), WS),
        (write_titled_by_readme(tmp_path_factory.mktemp("ws") / "web-forms"), None),
    ]:
        summary = ingestor.run(str(root), name=name)
        assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="module")
def live(quiz_index: Settings) -> Iterator[LiveServer]:
    with LiveServer(quiz_index) as server:
        yield server


def failed(server: LiveServer, tool: str, arguments: dict) -> dict:
    """A tool call that must fail in the one error shape; its structured content, with the text."""
    result = call(server, tool, arguments)
    assert result["isError"], result
    body = result["structuredContent"]
    assert set(body) == {"error", "tool", "message", "next"} and body["tool"] == tool
    text = result["content"][0]["text"]
    assert body["message"] in text and all(step in text for step in body["next"])
    return body | {"text": text}


# -- retrieve_quiz_instructions ---------------------------------------------------------------------


def test_quiz_tool_is_listed_with_bounds_output_schema_and_title(live: LiveServer) -> None:
    tools = {t["name"]: t for t in live.rpc("tools/list").json()["result"]["tools"]}
    tool = tools["retrieve_quiz_instructions"]
    assert tool["title"] == "Retrieve Quiz Instructions"
    assert tool["annotations"]["readOnlyHint"] is True
    count = tool["inputSchema"]["properties"]["questionCount"]
    assert (count["minimum"], count["maximum"], count["default"]) == (1, 20, 8)
    assert tool["inputSchema"].get("required", []) == []
    assert {"tool", "version", "instructionsMarkdown", "questionTypes", "closingSteps"} <= set(
        tool["outputSchema"]["properties"]
    )


def test_quiz_instructions_content(live: LiveServer) -> None:
    result = call(live, "retrieve_quiz_instructions", {"topic": "  JavaScript closures ", "questionCount": 5})
    assert not result["isError"]
    data = result["structuredContent"]
    assert (data["tool"], data["version"], data["topic"], data["learnerGoal"], data["targetQuestionCount"]) == (
        "retrieve_quiz_instructions",
        "1",
        "JavaScript closures",
        None,
        5,
    )
    protocol = data["instructionsMarkdown"]
    for idea in ("one at a time", "Wait", "Probe the reasoning", "Correct gently", "Interleave", "Space", "recap"):
        assert idea in protocol, idea
    assert "JavaScript closures" in protocol and "**5**" in protocol
    assert len(data["checklist"]) >= 5 and len(data["closingSteps"]) >= 3
    for kind in data["questionTypes"]:
        assert kind["id"] and kind["label"] and kind["promptTemplate"]
        assert kind["whatToListenFor"] and kind["followUps"]
    assert len({k["id"] for k in data["questionTypes"]}) == len(data["questionTypes"]) >= 5
    text = result["content"][0]["text"]  # readable Markdown: headings, lists, the checklist
    assert text.startswith("# Quiz facilitation protocol") and "## Question types" in text and "- [ ] " in text


def test_quiz_instructions_defaults_and_refusals(live: LiveServer) -> None:
    plain = ok(live, "retrieve_quiz_instructions", {})
    assert (plain["topic"], plain["learnerGoal"], plain["targetQuestionCount"]) == (None, None, 8)
    goal = ok(live, "retrieve_quiz_instructions", {"learnerGoal": "explain caching to my team"})
    assert "explain caching to my team" in goal["instructionsMarkdown"]
    too_many = call(live, "retrieve_quiz_instructions", {"questionCount": 21})
    assert too_many["isError"] and "questionCount" in too_many["content"][0]["text"]
    assert call(live, "retrieve_quiz_instructions", {"questionCount": 0})["isError"]
    blank = failed(live, "retrieve_quiz_instructions", {"topic": "   "})
    assert "topic" in blank["message"] and blank["error"] == "INVALID_ARGUMENT"


def test_server_instructions_carry_the_workshop_quick_start(quiz_index: Settings) -> None:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    with LiveServer(quiz_index) as server:
        text = server.rpc("initialize", params).json()["result"]["instructions"]
    assert text.index("list_workshops") < text.index("retrieve_quiz_instructions") < text.index("search_topic_context")
    with LiveServer(make_settings(quiz_index.db_uri, toolsets=("handbook",))) as server:
        text = server.rpc("initialize", params).json()["result"]["instructions"]
    assert "list_workshops" not in text and "Thoth" in text


# -- list_workshops ------------------------------------------------------------------------------------


def test_list_workshops_titles_counts_and_last_indexed(live: LiveServer) -> None:
    data = ok(live, "list_workshops", {})
    assert data["total"] == 2 and data["nextCursor"] is None
    by_slug = {w["workshop"]: w for w in data["workshops"]}
    quiz = by_slug[WS]  # --name set the slug; the title is the repository's own
    assert (quiz["title"], quiz["product"], quiz["hasDiffs"]) == (TITLE, PRODUCT, True)
    assert (quiz["exerciseCount"], quiz["stepCount"]) == (2, 2)
    assert by_slug["web-forms"]["title"] == "Web Forms From Scratch"  # no epicshop.title: the README heading
    assert by_slug["web-forms"]["product"] == "epic-web"
    for w in data["workshops"]:
        assert datetime.fromisoformat(w["lastIndexedAt"]).tzinfo is not None


def test_list_workshops_all_by_default_and_pages_on_request(live: LiveServer) -> None:
    everything = ok(live, "list_workshops", {"limit": 1})
    assert len(everything["workshops"]) == 2 and everything["nextCursor"] is None  # all=true ignores the page size
    first = ok(live, "list_workshops", {"all": False, "limit": 1})
    assert len(first["workshops"]) == 1 and first["nextCursor"]
    second = ok(live, "list_workshops", {"all": False, "limit": 1, "cursor": first["nextCursor"]})
    assert second["nextCursor"] is None
    assert [first["workshops"][0]["workshop"], second["workshops"][0]["workshop"]] == [WS, "web-forms"]
    assert call(live, "list_workshops", {"all": False, "limit": 101})["isError"]
    bad = failed(live, "list_workshops", {"all": False, "cursor": "garbage"})
    assert bad["error"] == "INVALID_CURSOR" and "cursor" in bad["message"]


# -- bundles -----------------------------------------------------------------------------------------------


def test_learning_context_shape_scope_at_top_level(live: LiveServer) -> None:
    data = ok(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "stepNumber": 1})
    assert (data["workshop"], data["exerciseNumber"], data["stepNumber"]) == (WS, 1, 1)
    assert data["truncated"] is False and data["nextCursor"] is None and data["maxCharsClamped"] is False
    labels = [(s["label"], s["sourcePath"]) for s in data["sections"]]
    base = "exercises/01.closures"
    assert labels == [
        ("Problem instructions", f"{base}/01.problem.counter/README.mdx"),
        ("Solution instructions", f"{base}/01.solution.counter/README.mdx"),
        ("Problem code: src/counter.ts", f"{base}/01.problem.counter/src/counter.ts"),
        ("Solution code: src/counter.ts", f"{base}/01.solution.counter/src/counter.ts"),
        ("Diff summary", f"{base}/01.solution.counter"),
        ("Diff: src/counter.ts", f"{base}/01.solution.counter/src/counter.ts"),
    ]
    diff = data["sections"][-1]
    assert diff["isDiff"] and "+\tlet count = 0" in diff["content"] and diff["content"].count("@@") == 2
    whole = ok(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1})
    assert [s["kind"] for s in whole["sections"][:2]] == ["exercise-instructions", "exercise-finished"]
    assert whole["sections"][0]["sourcePath"] == f"{base}/README.mdx" and whole["stepNumber"] is None


def test_bundles_leave_out_what_the_workshop_hides(live: LiveServer, tmp_path: Path) -> None:
    shown = []
    for exercise in (1, 2):
        data = ok(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": exercise, "maxChars": 100000})
        shown += [s["sourcePath"] or "" for s in data["sections"]]
        shown += [s["content"] for s in data["sections"] if s["kind"] == "diff-summary"]
    assert shown and not [p for p in shown if any(marker in p for marker in HIDDEN_MARKERS)]
    # what was left out is a large share of the characters: here, as on a real workshop, mostly tests
    bundle = sum(
        ok(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": n, "maxChars": 100000})["totalChars"]
        for n in (1, 2)
    )
    hidden = hidden_chars(write_epic_workshop(tmp_path / "again"))
    assert hidden / (hidden + bundle) > 0.25


def test_max_chars_is_clamped_and_said(live: LiveServer, quiz_index: Settings) -> None:
    data = ok(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": 10**9})
    assert data["maxChars"] == MAX_CHARS_LIMIT and data["maxCharsClamped"] is True
    assert any("clamped" in w for w in data["warnings"])
    text = call(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": 10**9})
    assert "clamped" in text["content"][0]["text"]
    assert call(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "maxChars": 5})["isError"]


def test_diff_context_and_a_focus_that_matches_nothing(live: LiveServer) -> None:
    data = ok(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2})
    assert (data["workshop"], data["exerciseNumber"]) == (WS, 2)
    assert [s["label"] for s in data["sections"]] == ["Diff summary", "Diff: src/app.tsx"]
    assert data["sections"][0]["content"] == "modified src/app.tsx"
    focused = ok(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2, "focus": "app.tsx"})
    assert focused["sections"][-1]["sourcePath"].endswith("01.solution.use-state/src/app.tsx")
    whitespace = ok(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 2, "focus": "   "})
    assert whitespace["focus"] is None and len(whitespace["sections"]) == 2
    miss = failed(live, "retrieve_diff_context", {"workshop": WS, "exerciseNumber": 1, "focus": "no-such-file"})
    assert "focus" in miss["message"] and "src/counter.ts" in miss["message"]
    assert "focus" in miss["next"][0]


def test_scope_errors_say_what_to_call_next(live: LiveServer) -> None:
    unknown = failed(live, "retrieve_learning_context", {"workshop": "nope", "exerciseNumber": 1})
    assert unknown["next"] == ["Call `list_workshops` to see available workshop slugs."]
    assert "Next:" in unknown["text"] and WS in unknown["message"]
    step = failed(live, "retrieve_learning_context", {"workshop": WS, "exerciseNumber": 1, "stepNumber": 9})
    assert "stepNumber 9" in step["message"] and "list_workshops" in step["next"][0]
    cursor = failed(live, "retrieve_diff_context", {"cursor": "bad"})
    assert cursor["error"] == "INVALID_CURSOR" and "nextCursor" in cursor["next"][0]
    search = failed(live, "search_topic_context", {"query": "state", "workshop": "nope"})
    assert search["next"] == ["Call `list_workshops` to see available workshop slugs."]


# -- search_topic_context -------------------------------------------------------------------------------------


def test_search_topic_context_contract(live: LiveServer) -> None:
    data = ok(live, "search_topic_context", {"query": "how a component keeps a value between renders", "limit": 20})
    assert (data["mode"], data["vectorSearchAvailable"], data["warnings"], data["limit"]) == ("semantic", True, [], 20)
    assert data["matches"] and len(data["matches"]) <= 20
    for match in data["matches"]:
        assert {"workshop", "exerciseNumber", "stepNumber", "sourcePath", "chunk", "sectionLabel"} <= set(match)
        assert match["chunk"] and match["workshop"] in (WS, "web-forms")
    top = data["matches"][0]
    # the scope of a match is what retrieve_learning_context takes
    scope = {k: top[k] for k in ("workshop", "exerciseNumber", "stepNumber") if top[k] is not None}
    assert ok(live, "retrieve_learning_context", scope)["sections"]
    assert call(live, "search_topic_context", {"query": "state", "limit": 21})["isError"]


def test_concepts_find_the_teaching_exercise_identifiers_find_code(live: LiveServer) -> None:
    concept = ok(live, "search_topic_context", {"query": "what is a closure and what does it remember", "workshop": WS})
    first = concept["matches"][0]
    assert concept["queryKind"] == "concept"
    assert (first["exerciseNumber"], first["sectionKind"]) == (1, "exercise-instructions"), first
    identifier = ok(live, "search_topic_context", {"query": "useState", "workshop": WS})
    first = identifier["matches"][0]
    assert identifier["queryKind"] == "identifier"
    assert first["sectionKind"].endswith("-code") and "useState" in first["chunk"], first
    counter = ok(live, "search_topic_context", {"query": "createCounter", "workshop": WS})
    assert counter["matches"][0]["sourcePath"].endswith("src/counter.ts")


def test_search_falls_back_to_keywords_without_a_model(quiz_index: Settings, tmp_path: Path) -> None:
    settings = make_settings(quiz_index.db_uri, embed_model=str(tmp_path / "no-such-model"))
    with LiveServer(settings) as server:
        data = ok(server, "search_topic_context", {"query": "closure private state", "workshop": WS})
        assert (data["mode"], data["vectorSearchAvailable"]) == ("keyword", False)
        assert data["warnings"] and "no-such-model" in data["warnings"][0]
        assert data["matches"] and all(m["workshop"] == WS and m["chunk"] for m in data["matches"])
        assert data["matches"][0]["exerciseNumber"] == 1
        assert ok(server, "retrieve_quiz_instructions", {})["targetQuestionCount"] == 8  # needs no index


@pytest.mark.parametrize(
    ("query", "identifier"),
    [
        ("useState", True),
        ("createRoot", True),
        ("React.memo", True),
        ("use_effect", True),
        ("fetchData()", True),
        ("closures", False),
        ("what is a closure", False),
        ("Caching", False),
    ],
)
def test_identifier_queries_are_told_from_concepts(query: str, identifier: bool) -> None:
    assert workshop_topics.looks_like_identifier(query) is identifier
