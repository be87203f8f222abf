"""The workshop surface for quiz authoring (seed 000): list_workshops, retrieve_learning_context,
retrieve_diff_context, search_topic_context, and `POST /internal/workshop-index/reindex`.
"""

# No `from __future__ import annotations`: the argument bounds below use this server's settings, so the
# annotations must be evaluated where the tools are defined.
import logging
import random
import threading
import time
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.mcp.auth import admin_refusal
from thoth.mcp.tools import call, correlation, read_only_tool, respond
from thoth.retrieval import workshops
from thoth.store import StoreError

log = logging.getLogger("thoth.workshop")

WorkshopId = Annotated[str, Field(description="workshop id (from list_workshops)", min_length=1, max_length=200)]
Cursor = Annotated[str | None, Field(description="nextCursor of the previous answer, to continue")]


class ExerciseInfo(BaseModel):
    exerciseNumber: int
    title: str
    steps: list[int]


class WorkshopInfo(BaseModel):
    workshop: str = Field(description="the id to pass as `workshop`")
    title: str
    product: str | None
    hasDiffs: bool
    exerciseCount: int
    stepCount: int
    sectionCount: int
    diffSectionCount: int
    exercises: list[ExerciseInfo]
    updatedAt: str | None


class WorkshopList(BaseModel):
    workshops: list[WorkshopInfo]
    total: int
    nextCursor: str | None


class ScopeInfo(BaseModel):
    workshop: str
    exerciseNumber: int
    stepNumber: int | None


class Section(BaseModel):
    id: str
    kind: str = Field(
        description="workshop-/exercise-instructions or -finished, problem-/solution-instructions, "
        "problem-/solution-code, diff-summary, diff"
    )
    title: str
    path: str | None
    exerciseNumber: int | None
    stepNumber: int | None
    isDiff: bool
    offset: int = Field(description="where `content` starts in the section (non-zero: continued from the last page)")
    totalChars: int = Field(description="the whole section's length")
    content: str


class ContextBundle(BaseModel):
    scope: ScopeInfo
    random: bool
    focus: str | None
    sectionCount: int
    totalChars: int
    sections: list[Section]
    truncated: bool
    nextCursor: str | None


class TopicMatch(BaseModel):
    rank: int
    score: float
    similarity: float | None
    workshop: str
    exerciseNumber: int | None
    stepNumber: int | None
    sectionKind: str | None
    sectionTitle: str | None
    path: str | None
    isDiff: bool
    contentType: str
    language: str | None
    content: str


class TopicResults(BaseModel):
    query: str
    matches: list[TopicMatch]


def _render_bundle(data: ContextBundle, tool: str) -> str:
    scope = data.scope
    where = f"{scope.workshop} exercise {scope.exerciseNumber}" + (
        f" step {scope.stepNumber}" if scope.stepNumber is not None else ""
    )
    lines = [
        f"{'Random scope: ' if data.random else ''}{where} — {data.sectionCount} sections, {data.totalChars} chars"
    ]
    if not data.sections:
        lines.append("No sections" + (f" match focus {data.focus!r}." if data.focus else " in this scope."))
    for section in data.sections:
        label = section.title + (" (continued)" if section.offset else "")
        lines.append(f"\n### {label}\n{section.content}")
    if data.nextCursor:
        lines.append(f'\n[Truncated. Continue with {tool}(cursor="{data.nextCursor}")]')
    return "\n".join(lines)


def register(mcp: MCPServer, app: Thoth) -> None:
    settings = app.settings
    rng = random.Random()  # seeded from the OS: a fresh draw per call, uniform over exercises
    MaxChars = Annotated[
        int,
        Field(
            description=f"most characters of section content per answer (default {settings.max_chars}, "
            f"at most {settings.max_chars_limit}); the rest comes with nextCursor",
            ge=100,
            le=settings.max_chars_limit,
        ),
    ]

    @read_only_tool(mcp)
    def list_workshops(
        product: Annotated[str | None, Field(description="only workshops of this product, e.g. 'Epic Web'")] = None,
        hasDiffs: Annotated[bool | None, Field(description="only workshops with (true) or without diffs")] = None,
        limit: Annotated[int, Field(description="workshops per answer", ge=1, le=100)] = 20,
        cursor: Cursor = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, WorkshopList]:
        """List indexed workshops with metadata and coverage (exercises, steps, sections, whether diffs exist).

        Use the `workshop` ids and exercise/step numbers with the other workshop tools.
        """
        with correlation(ctx):
            data = call(
                "list_workshops",
                lambda: workshops.list_workshops(
                    app.store, product=product, has_diffs=hasDiffs, limit=limit, cursor=cursor
                ),
            )
            result = WorkshopList.model_validate(data)
            lines = [
                f"{result.total} workshops" + (f" (showing {len(result.workshops)})" if result.nextCursor else ":")
            ]
            for w in result.workshops:
                lines.append(
                    f"- {w.workshop}: {w.title} [{w.product or 'no product'}] — {w.exerciseCount} exercises, "
                    f"{w.stepCount} steps, {w.sectionCount} sections, diffs: {'yes' if w.hasDiffs else 'no'}"
                )
                lines += [f"    {e.exerciseNumber}. {e.title} (steps {e.steps})" for e in w.exercises]
            if result.nextCursor:
                lines.append(f'\nMore: list_workshops(cursor="{result.nextCursor}")')
            return respond(result, "\n".join(lines))

    def _bundle(
        tool: str,
        workshop: str | None,
        exercise: int | None,
        step: int | None,
        random_scope: bool,
        max_chars: int,
        cursor: str | None,
        diffs_only: bool,
        focus: str | None,
    ) -> CallToolResult:
        def run() -> dict:
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
            )

        result = ContextBundle.model_validate(call(tool, run))
        return respond(result, _render_bundle(result, tool))

    @read_only_tool(mcp)
    def retrieve_learning_context(
        workshop: Annotated[str | None, Field(description="workshop id (from list_workshops)", max_length=200)] = None,
        exerciseNumber: Annotated[int | None, Field(description="exercise number", ge=0)] = None,
        stepNumber: Annotated[int | None, Field(description="step number within the exercise", ge=0)] = None,
        random: Annotated[
            bool, Field(description="pick an exercise uniformly at random (within `workshop` if given)")
        ] = False,
        maxChars: MaxChars = settings.max_chars,
        cursor: Cursor = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextBundle]:
        """Bundled learning context for quiz authoring: a scope's sections in reading order.

        Scope: workshop + exerciseNumber (+ stepNumber), or random=true. Sections: exercise instructions
        and finished notes, then per step problem/solution instructions, code, diff summary and diffs.
        When truncated, pass nextCursor back (alone) to continue exactly where the answer stopped.
        """
        with correlation(ctx):
            return _bundle(
                "retrieve_learning_context",
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
        workshop: Annotated[str | None, Field(description="workshop id (from list_workshops)", max_length=200)] = None,
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
        """The problem-to-solution diffs of a scope (diff summary and one unified diff per file), in order.

        `focus` keeps the diffs whose file path or content mentions it. Pages like retrieve_learning_context.
        """
        with correlation(ctx):
            return _bundle(
                "retrieve_diff_context",
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
        limit: Annotated[int, Field(description="most matches to return", ge=1, le=50)] = 8,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TopicResults]:
        """Semantic search over workshop content: the passages closest in meaning to the query, deduplicated.

        Scope filters are checked against the index first; an unknown workshop, exercise or step is an error.
        """
        with correlation(ctx):
            rows = call(
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
                    similarity=round(row["similarity"], 4) if row.get("similarity") is not None else None,
                    workshop=row["source_id"],
                    exerciseNumber=row.get("exercise_number"),
                    stepNumber=row.get("step_number"),
                    sectionKind=row["section_kind"],
                    sectionTitle=row["section_title"],
                    path=row["path"],
                    isDiff=row["is_diff"],
                    contentType=row.get("content_type") or "text",
                    language=row.get("language") or None,
                    content=row["text"],
                )
                for i, row in enumerate(rows, start=1)
            ]
            lines = [f"{len(matches)} matches for {query!r}" + (":" if matches else ".")]
            for m in matches:
                where = f"{m.workshop} ex {m.exerciseNumber}" + (f" step {m.stepNumber}" if m.stepNumber else "")
                lines.append(
                    f"\n## {m.rank}. {m.sectionTitle or m.path or where} ({where}, score {m.score:.3f})\n{m.content}"
                )
            return respond(TopicResults(query=query, matches=matches), "\n".join(lines))


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
