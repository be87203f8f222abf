"""The workshop surface for quiz authoring (docs/workshops.md); every failure comes back in one shape, with
`next` hints."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from thoth.app import Thoth
from thoth.errors import ServerFault
from thoth.mcp.completions import exercise_numbers, workshop_names
from thoth.mcp.outputs import workshop_quiz
from thoth.mcp.outputs.workshop import (
    LIST_HINT,
    WORDS,
    WORKSHOPS_CURSOR,
    ContextBundle,
    QuizInstructionsResult,
    TopicResults,
    WorkshopList,
)
from thoth.mcp.tools import expose, respond
from thoth.mcp.toolsets import Toolset
from thoth.retrieval import workshop_topics, workshops
from thoth.retrieval.paging import MAX_CHARS, MAX_CHARS_LIMIT, CursorError

log = logging.getLogger("thoth.workshop")

# Added to the server's `instructions` when this toolset is served.
INSTRUCTIONS = """
Workshops (quiz authoring) quick start:
- Call `list_workshops` first: workshop slugs, titles, exercises and steps, and whether diffs exist (`hasDiffs`).
- To quiz a learner: call `retrieve_quiz_instructions` and follow its protocol, then fetch the material with
  `retrieve_learning_context` (a `workshop` + `exerciseNumber` (+ `stepNumber`), or `random: true`); ask one
  question at a time.
- To locate where a topic is taught: call `search_topic_context`, then pass a match's scope (`workshop`,
  `exerciseNumber`, `stepNumber`) to `retrieve_learning_context` or `retrieve_diff_context`.
- Long answers are paged: when `truncated` is true, call again with `cursor` set to `nextCursor`.
- A failed call says what to do next (`next` in its structured content)."""

Cursor = Annotated[str | None, Field(description="nextCursor of the previous answer, to continue")]
Slug = Annotated[str | None, Field(description="workshop slug (from list_workshops)", max_length=200)]
Exercise = Annotated[int | None, Field(description="exercise number", ge=0)]
Step = Annotated[int | None, Field(description="step number within the exercise", ge=0)]
MaxChars = Annotated[
    int,
    Field(
        description=f"most characters of section content per answer (default {MAX_CHARS}; "
        f"more than {MAX_CHARS_LIMIT} is clamped to it); the rest comes with nextCursor",
        ge=100,
    ),
]


# -- errors: one shape for every workshop tool -------------------------------------------------

CURSOR_HINT = "Pass the `nextCursor` of the previous answer unchanged, or call again without `cursor` to start over."
UNAVAILABLE_HINT = "The index or the model could not be read: try again shortly (GET /health shows why)."


def failure(tool: str, title: str, exc: ToolError, default_next: tuple[str, ...]) -> CallToolResult:
    """An isError result: Markdown for the assistant (title, message, what to do next) and the same as
    structured content (`error`, `message`, `next`), so a client can act on it either way."""
    message, cause = str(exc), exc.__cause__
    if isinstance(cause, CursorError):
        code, steps = "INVALID_CURSOR", [CURSOR_HINT]
    elif isinstance(cause, ServerFault):
        code, steps = "UNAVAILABLE", [UNAVAILABLE_HINT]
    else:
        scoped = isinstance(cause, workshops.ScopeError) and cause.next
        code, steps = "INVALID_ARGUMENT", list(cause.next if scoped else default_next)  # type: ignore[union-attr]
    text = "\n".join([f"## {title}", "", message, *(["", "Next:", *(f"- {s}" for s in steps)] if steps else [])])
    structured = {"error": code, "tool": tool, "message": message, "next": steps}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured, is_error=True)


def list_workshops(
    app: Thoth,
    product: Annotated[str | None, Field(description="only workshops of this product, e.g. 'Epic Web'")] = None,
    hasDiffs: Annotated[bool | None, Field(description="only workshops with (true) or without diffs")] = None,
    all: Annotated[
        bool, Field(description="every workshop in one answer (default); false: pages of `limit` with `cursor`")
    ] = True,
    limit: Annotated[int, Field(description="workshops per page when all=false", ge=1, le=100)] = 20,
    cursor: Cursor = None,
) -> WorkshopList:
    """List indexed workshops: slug, title, product, whether diffs exist, exercises and steps, last indexed.

    Call this first. Use the `workshop` slugs and exercise/step numbers with the other workshop tools.
    """
    page = workshops.list_workshops(
        app.store,
        product=product,
        has_diffs=hasDiffs,
        limit=limit,
        cursor=cursor,
        cursors=WORKSHOPS_CURSOR,
        all_pages=all,
    )
    return WorkshopList.from_record(page)


def _context(
    app: Thoth,
    tool: str,
    scope: tuple[str | None, int | None, int | None],
    max_chars: int,
    cursor: str | None,
    **options: Any,
) -> ContextBundle:
    """A page of a scope's (workshop, exercise, step) context for `tool`; at most `max_chars`."""
    workshop, exercise, step = scope
    bundle = workshops.context_page(
        app.store,
        cursor_kind=tool,
        source_id=workshop,
        exercise=exercise,
        step=step,
        max_chars=max_chars,
        cursor=cursor,
        max_chars_limit=MAX_CHARS_LIMIT,
        words=WORDS,
        **options,
    )
    return ContextBundle.from_record(bundle)


def retrieve_learning_context(
    app: Thoth,
    workshop: Slug = None,
    exerciseNumber: Exercise = None,
    stepNumber: Step = None,
    random: Annotated[
        bool, Field(description="pick an exercise uniformly at random (within `workshop` if given)")
    ] = False,
    maxChars: MaxChars = MAX_CHARS,
    cursor: Cursor = None,
    rng: random.Random | None = None,
) -> ContextBundle:
    """What a quiz author needs about a scope, in reading order: the exercise notes, then per step the
    problem and solution instructions, the problem and solution code, and the diffs.

    Scope: workshop + exerciseNumber (+ stepNumber), or random=true. Files the workshop hides from its
    diffs (tests, lock files, configuration, epicshop/.diffignore) are left out. Each section has a
    `label` and a `sourcePath`. When truncated, pass nextCursor back (alone) to continue exactly there.
    """
    scope = (workshop, exerciseNumber, stepNumber)
    return _context(app, "retrieve_learning_context", scope, maxChars, cursor, random_scope=random, rng=rng)


def retrieve_diff_context(
    app: Thoth,
    workshop: Slug = None,
    exerciseNumber: Exercise = None,
    stepNumber: Step = None,
    focus: Annotated[
        str | None,
        Field(description="only diffs whose file path or text contains this (case-insensitive)", max_length=200),
    ] = None,
    maxChars: MaxChars = MAX_CHARS,
    cursor: Cursor = None,
) -> ContextBundle:
    """The problem-to-solution changes of a scope: a diff summary and one unified diff per file, in order.

    `focus` keeps the diffs whose file path or content mentions it; a focus that matches nothing is an
    error listing the files that have diffs. Pages like retrieve_learning_context.
    """
    scope = (workshop, exerciseNumber, stepNumber)
    return _context(
        app, "retrieve_diff_context", scope, maxChars, cursor, random_scope=False, diffs_only=True, focus=focus
    )


def search_topic_context(
    app: Thoth,
    query: Annotated[
        str, Field(description="what to find (at least 3 non-whitespace characters)", min_length=1, max_length=2000)
    ],
    workshop: Annotated[str | None, Field(description="only this workshop", max_length=200)] = None,
    exerciseNumber: Annotated[int | None, Field(description="only this exercise (needs workshop)", ge=0)] = None,
    stepNumber: Annotated[int | None, Field(description="only this step (needs exerciseNumber)", ge=0)] = None,
    limit: Annotated[int, Field(description="most matches to return", ge=1, le=20)] = 8,
) -> TopicResults:
    """Find where a topic is taught: the workshop passages that match, each with the scope to pass on.

    A concept ranks the notes that teach it above code that merely uses it; an identifier (`useState`)
    ranks the code that contains it first. Semantic search when the model is available, keyword search
    otherwise (`mode`, `vectorSearchAvailable` and `warnings` say which). Unknown scopes are errors.
    """
    found = workshop_topics.topic_search(
        app.store,
        app.embedder,
        query,
        source_id=workshop,
        exercise=exerciseNumber,
        step=stepNumber,
        limit=limit,
        words=WORDS,
    )
    return TopicResults.from_record(found)


def retrieve_quiz_instructions(
    app: Thoth,
    topic: Annotated[
        str | None, Field(description="what the quiz is about, e.g. 'HTTP caching'", min_length=1, max_length=200)
    ] = None,
    learnerGoal: Annotated[
        str | None,
        Field(description="what the learner wants to be able to do afterwards", min_length=1, max_length=500),
    ] = None,
    questionCount: Annotated[
        int,
        Field(
            description=f"how many questions to aim for (1–{workshop_quiz.MAX_QUESTION_COUNT}, "
            f"default {workshop_quiz.DEFAULT_QUESTION_COUNT})",
            ge=1,
            le=workshop_quiz.MAX_QUESTION_COUNT,
        ),
    ] = workshop_quiz.DEFAULT_QUESTION_COUNT,
) -> QuizInstructionsResult:
    """Instructions for running a quiz that makes learning stick: a facilitation protocol (one
    question at a time, wait, probe the reasoning, correct gently, space and interleave, recap),
    a checklist, question types with prompts and follow-ups, and closing steps.

    Call it when a learner asks to be quizzed, then fetch the material with retrieve_learning_context
    (or search_topic_context and its scope). Static content: fast, needs no index.
    """
    return QuizInstructionsResult.from_record(workshop_quiz.quiz_instructions(topic, learnerGoal, questionCount))


def _expose(
    mcp: MCPServer,
    app: Thoth,
    body: Callable[..., BaseModel],
    title: str,
    failed: str,
    *next_steps: str,
    **options: Any,
) -> None:
    """Expose a workshop tool: a failure comes back in the one error shape, titled `failed`, with `next_steps`."""
    name = body.__name__
    expose(mcp, app, body, title=title, on_error=lambda exc: failure(name, failed, exc, next_steps), **options)


def _bundle(tool: str) -> Callable[[ContextBundle], CallToolResult]:
    """A context bundle's answer: its Markdown names the tool to call again with nextCursor."""
    return lambda bundle: respond(bundle, bundle.render(tool))


def register(mcp: MCPServer, app: Thoth) -> None:
    rng = random.Random()  # seeded from the OS: a fresh draw per call, uniform over exercises
    _expose(mcp, app, list_workshops, "List workshops", "Unable to list workshops", CURSOR_HINT)
    _expose(
        mcp,
        app,
        retrieve_learning_context,
        "Get workshop learning context",
        "Unable to retrieve learning context",
        LIST_HINT,
        bind={"rng": lambda: rng},
        result=_bundle("retrieve_learning_context"),
    )
    failed = "Unable to retrieve diff context"
    diffs = "Get problem-to-solution diffs"
    _expose(mcp, app, retrieve_diff_context, diffs, failed, LIST_HINT, result=_bundle("retrieve_diff_context"))
    scope_hint = "If scoping by stepNumber, also give exerciseNumber and workshop."
    _expose(mcp, app, search_topic_context, "Search workshop content", "Unable to search topic context", scope_hint)
    _expose(
        mcp,
        app,
        retrieve_quiz_instructions,
        "Retrieve Quiz Instructions",  # its clients' title, capitalised
        "Unable to retrieve quiz instructions",
        "Every argument is optional: leave out `topic` or `learnerGoal`, or give non-blank text.",
    )


def prompts(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Quiz me on a workshop")
    def quiz_me(
        workshop: Annotated[str, Field(description="the workshop id (list_workshops)")],
        exerciseNumber: Annotated[
            int | None, Field(description="the exercise to be quizzed on; default: one picked at random", ge=0)
        ] = None,
    ) -> str:
        """Quiz me on a workshop exercise: questions one at a time, from its instructions, code and diffs."""
        if exerciseNumber is None:
            scope = f'retrieve_learning_context(workshop="{workshop}", random=true)'
        else:
            scope = f'retrieve_learning_context(workshop="{workshop}", exerciseNumber={exerciseNumber})'
        return (
            f"Quiz me on the workshop {workshop}.\n\n"
            "1. Call retrieve_quiz_instructions and follow its protocol for the whole quiz.\n"
            f"2. Fetch the material with {scope}; while the answer has a nextCursor, call it again with that "
            "cursor alone. retrieve_diff_context has the problem-to-solution diffs.\n"
            "3. Ask me one question at a time about what the exercise teaches, and wait for my answer. Tell me "
            "whether it is right, quoting the part of the exercise that shows it."
        )


TOOLSET = Toolset(
    "workshop",
    register,
    prompts=prompts,
    completions={("quiz_me", "workshop"): workshop_names, ("quiz_me", "exerciseNumber"): exercise_numbers},
    instructions=INSTRUCTIONS,
)
