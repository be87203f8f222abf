"""The workshop tools' bodies called directly (no HTTP, no MCP): the retrieval layer hands records and
typed results to the output models, which alone apply the seed's names and render the Markdown."""

from __future__ import annotations

import random

import pytest

from thoth.app import Thoth
from thoth.config import Settings
from thoth.errors import ClientError
from thoth.mcp.toolsets import workshop as surface
from thoth.records import Chunk, Partition, Source
from thoth.retrieval import workshop_topics, workshops
from thoth.retrieval.paging import CursorError
from thoth.retrieval.sources import all_sources

WS = "caching-fundamentals"


@pytest.fixture(scope="module")
def app(library: Settings) -> Thoth:
    return Thoth(library)


def test_list_workshops_body_from_sources_and_coverage(app: Thoth) -> None:
    sources = all_sources(app.store, workshops.WORKSHOP)
    assert all(isinstance(s, Source) and s.kind == "workshop" for s in sources)
    assert [s.source_id for s in sources] == [WS, "hooks-mini"]
    result = surface.list_workshops(app, None, None, True, 20, None)
    caching = result.workshops[0]
    assert (caching.workshop, caching.title, caching.product) == (WS, "Caching Fundamentals", "Epic Web")
    assert (caching.exerciseCount, caching.stepCount, caching.hasDiffs) == (3, 4, True)
    assert caching.exercises[0].model_dump() == {"exerciseNumber": 1, "title": "memoization", "steps": [1, 2]}
    assert result.render().splitlines()[:2] == [
        "2 workshops:",
        f"- `{WS}`: Caching Fundamentals [Epic Web] — 3 exercises, 4 steps, diffs: yes, "
        f"last indexed {caching.lastIndexedAt}",
    ]
    first = surface.list_workshops(app, None, None, False, 1, None)
    assert first.nextCursor and [w.workshop for w in first.workshops] == [WS]
    second = surface.list_workshops(app, None, None, False, 1, first.nextCursor)
    assert [w.workshop for w in second.workshops] == ["hooks-mini"] and second.nextCursor is None
    with pytest.raises(CursorError):
        surface.list_workshops(app, None, True, False, 1, first.nextCursor)  # other filters


def test_learning_context_pages_cover_the_sections_in_reading_order(app: Thoth) -> None:
    scope = workshops.resolve_scope(app.store, WS, 1, None)
    sections = workshops.sections(app.store, scope)
    assert sections and all(isinstance(p, Partition) and p.text for p in sections)
    steps = [p.step_number for p in sections]
    assert steps == sorted(steps, key=lambda n: (n is not None, n or 0))  # exercise notes first, then by step
    pages = [surface.retrieve_learning_context(app, WS, 1, None, False, 500, None)]
    while pages[-1].nextCursor:
        pages.append(surface.retrieve_learning_context(app, None, None, None, False, 500, pages[-1].nextCursor))
    assert len(pages) > 1 and all(sum(len(s.content) for s in page.sections) <= 500 for page in pages)
    joined: dict[str, str] = {}
    for page in pages:
        for section in page.sections:
            joined[section.id] = joined.get(section.id, "") + section.content
    assert joined == {p.partition_id: p.text for p in sections}
    last = pages[-1].render("retrieve_learning_context")
    assert last.startswith(f"{WS} exercise 1 — {len(sections)} sections") and "[Truncated." not in last
    assert "[Truncated. Continue with retrieve_learning_context(cursor=" in pages[0].render("retrieve_learning_context")


def test_random_scope_and_diff_focus(app: Thoth) -> None:
    drawn = surface.retrieve_learning_context(app, "hooks-mini", None, None, True, 20000, None, random.Random(3))
    assert (drawn.workshop, drawn.exerciseNumber, drawn.random) == ("hooks-mini", 1, True)
    focused = surface.retrieve_diff_context(app, WS, 2, None, "src/headers.ts", 20000, None)
    assert focused.sections and all(s.isDiff for s in focused.sections)
    with pytest.raises(workshops.ScopeError, match="files with diffs: ") as failure:
        surface.retrieve_diff_context(app, WS, 2, None, "no-such-file.ts", 20000, None)
    assert "src/headers.ts" in str(failure.value)


def test_topic_search_hits_keep_their_chunk_and_section(app: Thoth) -> None:
    found = workshop_topics.topic_search(
        app.store, app.embedder, "useState", source_id="hooks-mini", exercise=None, step=None, limit=5
    )
    assert found.identifier and found.hits
    assert all(isinstance(t.chunk, Chunk) and t.chunk.source_id == "hooks-mini" for t in found.hits)
    assert all(t.section is not None and t.section.partition_id == t.chunk.partition_id for t in found.hits)
    result = surface.search_topic_context(app, "useState", "hooks-mini", None, None, 5)
    assert [m.rank for m in result.matches] == list(range(1, len(found.hits) + 1))
    assert [m.chunk for m in result.matches] == [t.chunk.text for t in found.hits]
    assert result.queryKind == "identifier" and result.render().startswith(f"{len(result.matches)} matches for")


def test_step_changes_and_quiz_instructions(app: Thoth) -> None:
    steps = workshops.step_changes(app.store, WS)
    step = steps[(1, 1)]
    assert step.problem and step.solution
    assert "src/memo.ts" in [c.path for c in step.changes]
    assert [c.path for c in step.changes] == sorted(c.path for c in step.changes)
    quiz = surface.retrieve_quiz_instructions(app, " HTTP caching ", None, 5)
    assert (quiz.tool, quiz.topic, quiz.targetQuestionCount) == ("retrieve_quiz_instructions", "HTTP caching", 5)
    assert quiz.questionTypes[0].promptTemplate.startswith("Without looking back")
    text = quiz.render()
    assert text.startswith(quiz.instructionsMarkdown) and "## Checklist" in text
    with pytest.raises(ClientError, match="learnerGoal must not be blank"):
        surface.retrieve_quiz_instructions(app, None, "  ", 5)
