"""The workshop surface for quiz authoring (seed 000, as its clients use it today): list_workshops,
retrieve_learning_context, retrieve_diff_context, search_topic_context, retrieve_quiz_instructions, and
`POST /internal/workshop-index/reindex`. Every failure comes back in one shape, with `next` hints.
"""

# No `from __future__ import annotations`: the argument bounds below use this server's settings, so the
# annotations must be evaluated where the tools are defined.
import inspect
import logging
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.errors import ServerFault
from thoth.mcp.auth import admin_refusal
from thoth.mcp.outputs.workshop import ContextBundle, QuizInstructionsResult, TopicResults, WorkshopList
from thoth.mcp.tools import READ_ONLY, call, correlation, read_only_tool, respond
from thoth.retrieval import quiz, workshops
from thoth.retrieval.paging import CursorError
from thoth.store import StoreError
from thoth.writes.jobs import JobUnavailable, load_hooks

log = logging.getLogger("thoth.workshop")

# Added to the server's `instructions` when this toolset is on (thoth.mcp.tools reads it).
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

WorkshopId = Annotated[str, Field(description="workshop id (from list_workshops)", min_length=1, max_length=200)]
Cursor = Annotated[str | None, Field(description="nextCursor of the previous answer, to continue")]
QUIZ_TITLE = "Retrieve Quiz Instructions"
M = TypeVar("M", bound=BaseModel)  # a tool's output model


# -- errors: one shape for every workshop tool -------------------------------------------------

CURSOR_HINT = "Pass the `nextCursor` of the previous answer unchanged, or call again without `cursor` to start over."
UNAVAILABLE_HINT = "The index or the model could not be read: try again shortly (GET /health shows why)."


def _next_steps(cause: BaseException | None, default: tuple[str, ...]) -> list[str]:
    if isinstance(cause, workshops.ScopeError) and cause.next:
        return list(cause.next)
    if isinstance(cause, CursorError):
        return [CURSOR_HINT]
    if isinstance(cause, ServerFault):
        return [UNAVAILABLE_HINT]
    return list(default)


def _error_code(cause: BaseException | None) -> str:
    if isinstance(cause, CursorError):
        return "INVALID_CURSOR"
    if isinstance(cause, ServerFault):
        return "UNAVAILABLE"
    return "INVALID_ARGUMENT"


def failure(tool: str, title: str, exc: ToolError, default_next: tuple[str, ...]) -> CallToolResult:
    """An isError result: Markdown for the assistant (title, message, what to do next) and the same as
    structured content (`error`, `message`, `next`), so a client can act on it either way."""
    message = str(exc)
    steps = _next_steps(exc.__cause__, default_next)
    text = "\n".join([f"## {title}", "", message, *(["", "Next:", *(f"- {s}" for s in steps)] if steps else [])])
    structured = {"error": _error_code(exc.__cause__), "tool": tool, "message": message, "next": steps}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured, is_error=True)


def attempt(
    tool: str, title: str, fn: Callable[[], CallToolResult], default_next: tuple[str, ...] = ()
) -> CallToolResult:
    """Run a tool body; Thoth's own failures come back in the one error shape instead of as bare text."""
    try:
        return fn()
    except ToolError as exc:
        return failure(tool, title, exc, default_next)


# -- the tools' bodies (callable without MCP) -----------------------------------------------------


def list_workshops(
    app: Thoth, product: str | None, has_diffs: bool | None, all_pages: bool, limit: int, cursor: str | None
) -> WorkshopList:
    page = workshops.list_workshops(
        app.store, product=product, has_diffs=has_diffs, limit=limit, cursor=cursor, all_pages=all_pages
    )
    return WorkshopList.from_record(page)


def retrieve_learning_context(
    app: Thoth,
    workshop: str | None,
    exercise: int | None,
    step: int | None,
    random_scope: bool,
    max_chars: int,
    cursor: str | None,
    rng: random.Random | None = None,
) -> ContextBundle:
    bundle = workshops.context_page(
        app.store,
        tool="retrieve_learning_context",
        source_id=workshop,
        exercise=exercise,
        step=step,
        random_scope=random_scope,
        max_chars=max_chars,
        cursor=cursor,
        rng=rng,
        max_chars_limit=app.settings.max_chars_limit,
    )
    return ContextBundle.from_record(bundle)


def retrieve_diff_context(
    app: Thoth,
    workshop: str | None,
    exercise: int | None,
    step: int | None,
    focus: str | None,
    max_chars: int,
    cursor: str | None,
) -> ContextBundle:
    bundle = workshops.context_page(
        app.store,
        tool="retrieve_diff_context",
        source_id=workshop,
        exercise=exercise,
        step=step,
        random_scope=False,
        max_chars=max_chars,
        cursor=cursor,
        diffs_only=True,
        focus=focus,
        max_chars_limit=app.settings.max_chars_limit,
    )
    return ContextBundle.from_record(bundle)


def search_topic_context(
    app: Thoth, query: str, workshop: str | None, exercise: int | None, step: int | None, limit: int
) -> TopicResults:
    found = workshops.topic_search(
        app.store, app.embedder, query, source_id=workshop, exercise=exercise, step=step, limit=limit
    )
    return TopicResults.from_record(found)


def retrieve_quiz_instructions(
    app: Thoth, topic: str | None, learner_goal: str | None, question_count: int
) -> QuizInstructionsResult:
    return QuizInstructionsResult.from_record(quiz.quiz_instructions(topic, learner_goal, question_count))


def _answer(
    tool: str,
    title: str,
    fn: Callable[[], M],
    default_next: tuple[str, ...],
    text: Callable[[M], str] = lambda result: result.render(),  # type: ignore[attr-defined]
) -> CallToolResult:
    """A tool's answer (its model and its Markdown), or its failure in the one error shape."""
    return attempt(tool, title, lambda: respond(result := call(tool, fn), text(result)), default_next)


def register(mcp: MCPServer, app: Thoth) -> None:
    this = sys.modules[__name__]  # the tool bodies above, which the tools below shadow by name
    settings = app.settings
    rng = random.Random()  # seeded from the OS: a fresh draw per call, uniform over exercises
    MaxChars = Annotated[
        int,
        Field(
            description=f"most characters of section content per answer (default {settings.max_chars}; "
            f"more than {settings.max_chars_limit} is clamped to it); the rest comes with nextCursor",
            ge=100,
        ),
    ]

    @read_only_tool(mcp)
    def list_workshops(
        product: Annotated[str | None, Field(description="only workshops of this product, e.g. 'Epic Web'")] = None,
        hasDiffs: Annotated[bool | None, Field(description="only workshops with (true) or without diffs")] = None,
        all: Annotated[
            bool, Field(description="every workshop in one answer (default); false: pages of `limit` with `cursor`")
        ] = True,
        limit: Annotated[int, Field(description="workshops per page when all=false", ge=1, le=100)] = 20,
        cursor: Cursor = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, WorkshopList]:
        """List indexed workshops: slug, title, product, whether diffs exist, exercises and steps, last indexed.

        Call this first. Use the `workshop` slugs and exercise/step numbers with the other workshop tools.
        """

        with correlation(ctx):
            return _answer(
                "list_workshops",
                "Unable to list workshops",
                lambda: this.list_workshops(app, product, hasDiffs, all, limit, cursor),
                (CURSOR_HINT,),
            )

    @read_only_tool(mcp)
    def retrieve_learning_context(
        workshop: Annotated[
            str | None, Field(description="workshop slug (from list_workshops)", max_length=200)
        ] = None,
        exerciseNumber: Annotated[int | None, Field(description="exercise number", ge=0)] = None,
        stepNumber: Annotated[int | None, Field(description="step number within the exercise", ge=0)] = None,
        random: Annotated[
            bool, Field(description="pick an exercise uniformly at random (within `workshop` if given)")
        ] = False,
        maxChars: MaxChars = settings.max_chars,
        cursor: Cursor = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextBundle]:
        """What a quiz author needs about a scope, in reading order: the exercise notes, then per step the
        problem and solution instructions, the problem and solution code, and the diffs.

        Scope: workshop + exerciseNumber (+ stepNumber), or random=true. Files the workshop hides from its
        diffs (tests, lock files, configuration, epicshop/.diffignore) are left out. Each section has a
        `label` and a `sourcePath`. When truncated, pass nextCursor back (alone) to continue exactly there.
        """
        with correlation(ctx):
            return _answer(
                "retrieve_learning_context",
                "Unable to retrieve learning context",
                lambda: this.retrieve_learning_context(
                    app, workshop, exerciseNumber, stepNumber, random, maxChars, cursor, rng
                ),
                (workshops.LIST_HINT,),
                lambda result: result.render("retrieve_learning_context"),
            )

    @read_only_tool(mcp)
    def retrieve_diff_context(
        workshop: Annotated[
            str | None, Field(description="workshop slug (from list_workshops)", max_length=200)
        ] = None,
        exerciseNumber: Annotated[int | None, Field(description="exercise number", ge=0)] = None,
        stepNumber: Annotated[int | None, Field(description="step number within the exercise", ge=0)] = None,
        focus: Annotated[
            str | None,
            Field(description="only diffs whose file path or text contains this (case-insensitive)", max_length=200),
        ] = None,
        maxChars: MaxChars = settings.max_chars,
        cursor: Cursor = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextBundle]:
        """The problem-to-solution changes of a scope: a diff summary and one unified diff per file, in order.

        `focus` keeps the diffs whose file path or content mentions it; a focus that matches nothing is an
        error listing the files that have diffs. Pages like retrieve_learning_context.
        """
        with correlation(ctx):
            return _answer(
                "retrieve_diff_context",
                "Unable to retrieve diff context",
                lambda: this.retrieve_diff_context(app, workshop, exerciseNumber, stepNumber, focus, maxChars, cursor),
                (workshops.LIST_HINT,),
                lambda result: result.render("retrieve_diff_context"),
            )

    @read_only_tool(mcp)
    def search_topic_context(
        query: Annotated[
            str, Field(description="what to find (at least 3 non-whitespace characters)", min_length=1, max_length=2000)
        ],
        workshop: Annotated[str | None, Field(description="only this workshop", max_length=200)] = None,
        exerciseNumber: Annotated[int | None, Field(description="only this exercise (needs workshop)", ge=0)] = None,
        stepNumber: Annotated[int | None, Field(description="only this step (needs exerciseNumber)", ge=0)] = None,
        limit: Annotated[int, Field(description="most matches to return", ge=1, le=20)] = 8,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TopicResults]:
        """Find where a topic is taught: the workshop passages that match, each with the scope to pass on.

        A concept ranks the notes that teach it above code that merely uses it; an identifier (`useState`)
        ranks the code that contains it first. Semantic search when the model is available, keyword search
        otherwise (`mode`, `vectorSearchAvailable` and `warnings` say which). Unknown scopes are errors.
        """

        with correlation(ctx):
            return _answer(
                "search_topic_context",
                "Unable to search topic context",
                lambda: this.search_topic_context(app, query, workshop, exerciseNumber, stepNumber, limit),
                ("If scoping by stepNumber, also give exerciseNumber and workshop.",),
            )

    @mcp.tool(
        title=QUIZ_TITLE,
        annotations=READ_ONLY,
        description=inspect.cleandoc(
            """Instructions for running a quiz that makes learning stick: a facilitation protocol (one
            question at a time, wait, probe the reasoning, correct gently, space and interleave, recap),
            a checklist, question types with prompts and follow-ups, and closing steps.

            Call it when a learner asks to be quizzed, then fetch the material with retrieve_learning_context
            (or search_topic_context and its scope). Static content: fast, needs no index.
            """
        ),
    )
    def retrieve_quiz_instructions(
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
                description=f"how many questions to aim for (1–{quiz.MAX_QUESTION_COUNT}, "
                f"default {quiz.DEFAULT_QUESTION_COUNT})",
                ge=1,
                le=quiz.MAX_QUESTION_COUNT,
            ),
        ] = quiz.DEFAULT_QUESTION_COUNT,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, QuizInstructionsResult]:
        with correlation(ctx):
            return _answer(
                "retrieve_quiz_instructions",
                "Unable to retrieve quiz instructions",
                lambda: this.retrieve_quiz_instructions(app, topic, learnerGoal, questionCount),
                ("Every argument is optional: leave out `topic` or `learnerGoal`, or give non-blank text.",),
            )


def routes(app: Thoth) -> list[Route]:
    """`POST /internal/workshop-index/reindex`: re-ingest every workshop source from where it was ingested."""
    busy = threading.Lock()

    def reindex_all() -> dict:
        started = time.perf_counter()
        embedder = app.embedder()
        results = load_hooks(app.settings).reingest(app.settings, app.store, embedder, "workshop")  # the job's code
        return {"status": "ok", "workshops": results, "seconds": round(time.perf_counter() - started, 3)}

    async def reindex(request: Request) -> JSONResponse:
        refusal = admin_refusal(request, app.settings)
        if refusal is not None:
            return refusal
        if not busy.acquire(blocking=False):
            return JSONResponse({"error": "a reindex is already running; try again when it has finished"}, 409)
        try:
            body = await anyio.to_thread.run_sync(reindex_all)
        except (StoreError, EmbedderUnavailable, JobUnavailable) as exc:
            log.error("workshop reindex failed: %s", exc)
            return JSONResponse({"status": "failed", "error": str(exc)}, status_code=503)
        finally:
            busy.release()
        log.info("workshop reindex: %s", body)
        return JSONResponse(body)

    return [Route("/internal/workshop-index/reindex", reindex, methods=["POST"])]
