"""The workshop surface for quiz authoring (seed 000, as its clients use it today): list_workshops,
retrieve_learning_context, retrieve_diff_context, search_topic_context, retrieve_quiz_instructions, and
`POST /internal/workshop-index/reindex`. Every failure comes back in one shape, with `next` hints.
"""

# No `from __future__ import annotations`: the argument bounds below use this server's settings, so the
# annotations must be evaluated where the tools are defined.
import dataclasses
import inspect
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Annotated, Literal

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
from thoth.mcp.tools import READ_ONLY, call, correlation, read_only_tool, respond
from thoth.retrieval import quiz, workshops
from thoth.retrieval.paging import CursorError
from thoth.store import StoreError

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


class ExerciseInfo(BaseModel):
    exerciseNumber: int
    title: str
    steps: list[int]


class WorkshopInfo(BaseModel):
    workshop: str = Field(description="the slug to pass as `workshop`")
    title: str = Field(description="the workshop's own title (package.json epicshop.title, else its README)")
    product: str | None
    hasDiffs: bool
    exerciseCount: int
    stepCount: int
    sectionCount: int
    diffSectionCount: int
    exercises: list[ExerciseInfo]
    lastIndexedAt: str | None = Field(description="when the workshop was last ingested (ISO 8601)")


class WorkshopList(BaseModel):
    workshops: list[WorkshopInfo]
    total: int
    nextCursor: str | None


class Section(BaseModel):
    id: str
    label: str = Field(description="what the section is, e.g. 'Problem instructions' or 'Diff: src/app.ts'")
    kind: str = Field(
        description="workshop-/exercise-instructions or -finished, problem-/solution-instructions, "
        "problem-/solution-code, diff-summary, diff"
    )
    sourcePath: str | None = Field(
        description="the file (or, for a diff summary, the step folder) it came from, relative to the workshop root"
    )
    exerciseNumber: int | None
    stepNumber: int | None
    isDiff: bool
    offset: int = Field(description="where `content` starts in the section (non-zero: continued from the last page)")
    totalChars: int = Field(description="the whole section's length")
    content: str


class ContextBundle(BaseModel):
    workshop: str
    exerciseNumber: int
    stepNumber: int | None
    random: bool
    focus: str | None
    maxChars: int = Field(description="the maxChars this answer used (after clamping)")
    maxCharsClamped: bool = Field(description="true when the maxChars asked for was above the hard maximum")
    warnings: list[str]
    sectionCount: int
    totalChars: int
    sections: list[Section]
    truncated: bool
    nextCursor: str | None


class TopicMatch(BaseModel):
    rank: int
    score: float
    workshop: str
    exerciseNumber: int | None
    stepNumber: int | None
    sectionKind: str | None
    sectionLabel: str | None
    sourcePath: str | None
    isDiff: bool
    contentType: str
    language: str | None
    chunk: str


class TopicResults(BaseModel):
    query: str
    limit: int
    mode: Literal["semantic", "keyword"]
    vectorSearchAvailable: bool
    warnings: list[str]
    queryKind: Literal["concept", "identifier"] = Field(
        description="concept: notes that teach rank first; identifier: code that contains it ranks first"
    )
    matches: list[TopicMatch]


class QuestionTypeInfo(BaseModel):
    id: str
    label: str
    promptTemplate: str
    whatToListenFor: list[str]
    followUps: list[str]


class QuizInstructionsResult(BaseModel):
    tool: Literal["retrieve_quiz_instructions"]
    version: Literal["1"]
    topic: str | None
    learnerGoal: str | None
    targetQuestionCount: int
    instructionsMarkdown: str
    checklist: list[str]
    questionTypes: list[QuestionTypeInfo]
    closingSteps: list[str]


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


# -- rendering ------------------------------------------------------------------------------------


def _render_bundle(data: ContextBundle, tool: str) -> str:
    where = f"{data.workshop} exercise {data.exerciseNumber}" + (
        f" step {data.stepNumber}" if data.stepNumber is not None else ""
    )
    lines = [
        f"{'Random scope: ' if data.random else ''}{where} — {data.sectionCount} sections, {data.totalChars} chars"
    ]
    lines += [f"> Warning: {w}" for w in data.warnings]
    if not data.sections:
        lines.append("No sections" + (f" match focus {data.focus!r}." if data.focus else " in this scope."))
    for section in data.sections:
        label = section.label + (" (continued)" if section.offset else "")
        source = f"\n_Source_: `{section.sourcePath}`" if section.sourcePath else ""
        fence = "diff" if section.isDiff else "" if section.kind.endswith("-code") else None
        body = section.content if fence is None else f"```{fence}\n{section.content}\n```"
        lines.append(f"\n### {label}{source}\n\n{body}")
    if data.nextCursor:
        lines.append(f'\n[Truncated. Continue with {tool}(cursor="{data.nextCursor}")]')
    return "\n".join(lines)


def _render_topics(result: TopicResults) -> str:
    lines = [
        f"{len(result.matches)} matches for {result.query!r} ({result.mode} search)" + (":" if result.matches else ".")
    ]
    lines += [f"> Warning: {w}" for w in result.warnings]
    for m in result.matches:
        where = f"{m.workshop} exercise {m.exerciseNumber}" + (f" step {m.stepNumber}" if m.stepNumber else "")
        source = f"\n_Source_: `{m.sourcePath}`" if m.sourcePath else ""
        lines.append(f"\n## {m.rank}. {m.sectionLabel or where} ({where}, score {m.score:.3f}){source}\n\n{m.chunk}")
    return "\n".join(lines)


def register(mcp: MCPServer, app: Thoth) -> None:
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

        def run() -> CallToolResult:
            data = call(
                "list_workshops",
                lambda: workshops.list_workshops(
                    app.store, product=product, has_diffs=hasDiffs, limit=limit, cursor=cursor, all_pages=all
                ),
            )
            result = WorkshopList.model_validate(data)
            shown = f" (showing {len(result.workshops)})" if result.nextCursor else ":"
            lines = [f"{result.total} workshops{shown}"]
            for w in result.workshops:
                lines.append(
                    f"- `{w.workshop}`: {w.title} [{w.product or 'no product'}] — {w.exerciseCount} exercises, "
                    f"{w.stepCount} steps, diffs: {'yes' if w.hasDiffs else 'no'}, last indexed {w.lastIndexedAt}"
                )
                lines += [f"    {e.exerciseNumber}. {e.title} (steps {e.steps})" for e in w.exercises]
            if result.nextCursor:
                lines.append(f'\nMore: list_workshops(all=false, cursor="{result.nextCursor}")')
            return respond(result, "\n".join(lines))

        with correlation(ctx):
            return attempt("list_workshops", "Unable to list workshops", run, (CURSOR_HINT,))

    def _bundle(
        tool: str,
        title: str,
        workshop: str | None,
        exercise: int | None,
        step: int | None,
        random_scope: bool,
        max_chars: int,
        cursor: str | None,
        diffs_only: bool,
        focus: str | None,
    ) -> CallToolResult:
        def fetch() -> dict:
            return workshops.context_page(
                app.store,
                tool=tool,
                workshop=workshop,
                exercise=exercise,
                step=step,
                random_scope=random_scope,
                max_chars=max_chars,
                cursor=cursor,
                diffs_only=diffs_only,
                focus=focus,
                rng=rng,
                max_chars_limit=settings.max_chars_limit,
            )

        def run() -> CallToolResult:
            result = ContextBundle.model_validate(call(tool, fetch))
            return respond(result, _render_bundle(result, tool))

        return attempt(tool, title, run, (workshops.LIST_HINT,))

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
            return _bundle(
                "retrieve_learning_context",
                "Unable to retrieve learning context",
                workshop,
                exerciseNumber,
                stepNumber,
                random,
                maxChars,
                cursor,
                diffs_only=False,
                focus=None,
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
            return _bundle(
                "retrieve_diff_context",
                "Unable to retrieve diff context",
                workshop,
                exerciseNumber,
                stepNumber,
                False,
                maxChars,
                cursor,
                diffs_only=True,
                focus=focus,
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

        def run() -> CallToolResult:
            data = call(
                "search_topic_context",
                lambda: workshops.topic_search(
                    app.store,
                    app.embedder,
                    query,
                    workshop=workshop,
                    exercise=exerciseNumber,
                    step=stepNumber,
                    limit=limit,
                ),
            )
            matches = [
                TopicMatch(
                    rank=i,
                    score=row["score"],
                    workshop=row["source_id"],
                    exerciseNumber=row.get("exercise_number"),
                    stepNumber=row.get("step_number"),
                    sectionKind=row["section_kind"],
                    sectionLabel=row["section_label"],
                    sourcePath=row["source_path"],
                    isDiff=row["is_diff"],
                    contentType=row.get("content_type") or "text",
                    language=row.get("language") or None,
                    chunk=row["text"],
                )
                for i, row in enumerate(data["matches"], start=1)
            ]
            result = TopicResults.model_validate({**data, "matches": matches})
            return respond(result, _render_topics(result))

        with correlation(ctx):
            return attempt(
                "search_topic_context",
                "Unable to search topic context",
                run,
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
        def run() -> CallToolResult:
            found = call(
                "retrieve_quiz_instructions", lambda: quiz.quiz_instructions(topic, learnerGoal, questionCount)
            )
            result = QuizInstructionsResult.model_validate(dataclasses.asdict(found))
            return respond(result, quiz.render(found))

        with correlation(ctx):
            return attempt(
                "retrieve_quiz_instructions",
                "Unable to retrieve quiz instructions",
                run,
                ("Every argument is optional: leave out `topic` or `learnerGoal`, or give non-blank text.",),
            )


def routes(app: Thoth) -> list[Route]:
    """`POST /internal/workshop-index/reindex`: re-ingest every workshop source from where it was ingested."""
    busy = threading.Lock()

    def reindex_all() -> dict:
        from ingest.pipeline import Ingestor, reingest  # the ingest job's code, loaded only when asked

        started = time.perf_counter()
        results = reingest(Ingestor(app.settings, store=app.store, embedder=app.embedder()), "workshop")
        return {"status": "ok", "workshops": results, "seconds": round(time.perf_counter() - started, 3)}

    async def reindex(request: Request) -> JSONResponse:
        refusal = admin_refusal(request, app.settings)
        if refusal is not None:
            return refusal
        if not busy.acquire(blocking=False):
            return JSONResponse({"error": "a reindex is already running; try again when it has finished"}, 409)
        try:
            body = await anyio.to_thread.run_sync(reindex_all)
        except (StoreError, EmbedderUnavailable) as exc:
            log.error("workshop reindex failed: %s", exc)
            return JSONResponse({"status": "failed", "error": str(exc)}, status_code=503)
        finally:
            busy.release()
        log.info("workshop reindex: %s", body)
        return JSONResponse(body)

    return [Route("/internal/workshop-index/reindex", reindex, methods=["POST"])]
