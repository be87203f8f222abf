"""The workshop surface's answers (docs/workshops.md): the JSON its clients read, built from records, and the
Markdown the assistant reads. The surface's names (workshop, exerciseNumber, sourcePath...) live here only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from thoth.mcp.outputs import Flagged, Output, from_fields, workshop_quiz
from thoth.retrieval.paging import OffsetCursor
from thoth.retrieval.workshop_topics import TopicHit, TopicSearch
from thoth.retrieval.workshops import Bundle, IndexedWorkshop, ScopeWords, SectionPiece, WorkshopPage
from thoth.retrieval.workshops import section_label as label_of

# What continues list_workshops, and what a caller is told when a cursor was issued for other filters.
WORKSHOPS_CURSOR = OffsetCursor(
    "list_workshops", "cursor was issued for other filters; pass the same product and hasDiffs as before"
)

LIST_HINT = "Call `list_workshops` to see available workshop slugs."
# The scope's arguments as this surface names them, in the messages the core writes about a scope.
WORDS = ScopeWords(
    workshop="workshop",
    exercise="exerciseNumber",
    step="stepNumber",
    random="random",
    max_chars="maxChars",
    list_hint=(LIST_HINT,),
    coverage_hint=("Call `list_workshops` to see each workshop's exercises and their step numbers.",),
)


class ExerciseInfo(Output):
    exerciseNumber: int
    title: str
    steps: list[int]


class WorkshopInfo(Output):
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

    @classmethod
    def from_record(cls, indexed: IndexedWorkshop) -> WorkshopInfo:
        source, cov = indexed.source, indexed.coverage
        return cls(
            workshop=source.source_id,
            title=source.name,
            product=source.product,
            hasDiffs=bool(source.has_diffs),
            exerciseCount=len(cov.exercises),
            stepCount=sum(len(e.steps) for e in cov.exercises.values()),
            sectionCount=cov.sections,
            diffSectionCount=cov.diff_sections,
            exercises=[
                ExerciseInfo(exerciseNumber=n, title=e.title, steps=sorted(e.steps))
                for n, e in sorted(cov.exercises.items())
            ],
            lastIndexedAt=source.updated_at.isoformat() if source.updated_at else None,
        )


class WorkshopList(Output):
    workshops: list[WorkshopInfo]
    total: int
    nextCursor: str | None

    @classmethod
    def from_record(cls, page: WorkshopPage) -> WorkshopList:
        return from_fields(
            cls, page, workshops=[WorkshopInfo.from_record(w) for w in page.sources], nextCursor=page.next_cursor
        )

    def render(self) -> str:
        shown = f" (showing {len(self.workshops)})" if self.nextCursor else ":"
        lines = [f"{self.total} workshops{shown}"]
        for w in self.workshops:
            lines.append(
                f"- `{w.workshop}`: {w.title} [{w.product or 'no product'}] — {w.exerciseCount} exercises, "
                f"{w.stepCount} steps, diffs: {'yes' if w.hasDiffs else 'no'}, last indexed {w.lastIndexedAt}"
            )
            lines += [f"    {e.exerciseNumber}. {e.title} (steps {e.steps})" for e in w.exercises]
        if self.nextCursor:
            lines.append(f'\nMore: list_workshops(all=false, cursor="{self.nextCursor}")')
        return "\n".join(lines)


class Section(Output):
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

    @classmethod
    def from_record(cls, piece: SectionPiece) -> Section:
        partition = piece.partition
        return cls(
            id=partition.partition_id,
            label=label_of(partition),
            kind=partition.kind,
            sourcePath=partition.path or None,
            exerciseNumber=partition.exercise_number,
            stepNumber=partition.step_number,
            isDiff=bool(partition.is_diff),
            offset=piece.offset,
            totalChars=len(partition.text),
            content=piece.content,
        )


class ContextBundle(Output):
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

    @classmethod
    def from_record(cls, bundle: Bundle) -> ContextBundle:
        return from_fields(
            cls,
            bundle,
            workshop=bundle.scope.source_id,
            exerciseNumber=bundle.scope.exercise,
            stepNumber=bundle.scope.step,
            maxChars=bundle.max_chars,
            maxCharsClamped=bundle.clamped,
            sectionCount=bundle.section_count,
            totalChars=bundle.total_chars,
            sections=[Section.from_record(piece) for piece in bundle.sections],
            nextCursor=bundle.next_cursor,
        )

    def render(self, tool: str) -> str:
        where = f"{self.workshop} exercise {self.exerciseNumber}" + (
            f" step {self.stepNumber}" if self.stepNumber is not None else ""
        )
        lines = [
            f"{'Random scope: ' if self.random else ''}{where} — {self.sectionCount} sections, {self.totalChars} chars"
        ]
        lines += [f"> Warning: {w}" for w in self.warnings]
        if not self.sections:
            lines.append("No sections" + (f" match focus {self.focus!r}." if self.focus else " in this scope."))
        for section in self.sections:
            label = section.label + (" (continued)" if section.offset else "")
            source = f"\n_Source_: `{section.sourcePath}`" if section.sourcePath else ""
            fence = "diff" if section.isDiff else "" if section.kind.endswith("-code") else None
            body = section.content if fence is None else f"```{fence}\n{section.content}\n```"
            lines.append(f"\n### {label}{source}\n\n{body}")
        if self.nextCursor:
            lines.append(f'\n[Truncated. Continue with {tool}(cursor="{self.nextCursor}")]')
        return "\n".join(lines)


class TopicMatch(Flagged):
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

    @classmethod
    def from_record(cls, rank: int, found: TopicHit) -> TopicMatch:
        chunk, section = found.chunk, found.section
        return cls(
            rank=rank,
            score=found.hit.score,
            workshop=chunk.source_id,
            exerciseNumber=chunk.exercise_number,
            stepNumber=chunk.step_number,
            sectionKind=section.kind if section else None,
            sectionLabel=(label_of(section) or None) if section else None,
            sourcePath=(section.path or None) if section else None,
            isDiff=bool(section.is_diff) if section else False,
            contentType=chunk.content_type or "text",
            language=chunk.language or None,
            chunk=chunk.text,
            flags=cls.flags_of(chunk.text),
        )


class TopicResults(Output):
    query: str
    limit: int
    mode: Literal["semantic", "keyword"]
    vectorSearchAvailable: bool
    warnings: list[str]
    queryKind: Literal["concept", "identifier"] = Field(
        description="concept: notes that teach rank first; identifier: code that contains it ranks first"
    )
    matches: list[TopicMatch]

    @classmethod
    def from_record(cls, search: TopicSearch) -> TopicResults:
        return from_fields(
            cls,
            search,
            mode="semantic" if search.semantic else "keyword",
            vectorSearchAvailable=search.semantic,
            queryKind="identifier" if search.identifier else "concept",
            matches=[TopicMatch.from_record(rank, found) for rank, found in enumerate(search.hits, start=1)],
        )

    def render(self) -> str:
        lines = [
            f"{len(self.matches)} matches for {self.query!r} ({self.mode} search)" + (":" if self.matches else ".")
        ]
        lines += [f"> Warning: {w}" for w in self.warnings]
        for m in self.matches:
            where = f"{m.workshop} exercise {m.exerciseNumber}" + (f" step {m.stepNumber}" if m.stepNumber else "")
            source = f"\n_Source_: `{m.sourcePath}`" if m.sourcePath else ""
            lines.append(
                f"\n## {m.rank}. {m.sectionLabel or where} ({where}, score {m.score:.3f}){source}\n"
                f"{m.flag_note()}\n{m.chunk}"
            )
        return "\n".join(lines)


class QuestionTypeInfo(Output):
    id: str
    label: str
    promptTemplate: str
    whatToListenFor: list[str]
    followUps: list[str]

    @classmethod
    def from_record(cls, kind: workshop_quiz.QuestionType) -> QuestionTypeInfo:
        return from_fields(
            cls, kind, promptTemplate=kind.prompt_template, whatToListenFor=kind.listen_for, followUps=kind.follow_ups
        )


class QuizInstructionsResult(Output):
    tool: Literal["retrieve_quiz_instructions"]
    version: Literal["1"]
    topic: str | None
    learnerGoal: str | None
    targetQuestionCount: int
    instructionsMarkdown: str
    checklist: list[str]
    questionTypes: list[QuestionTypeInfo]
    closingSteps: list[str]

    @classmethod
    def from_record(cls, found: workshop_quiz.QuizInstructions) -> QuizInstructionsResult:
        return from_fields(
            cls,
            found,
            tool="retrieve_quiz_instructions",
            learnerGoal=found.learner_goal,
            targetQuestionCount=found.question_count,
            instructionsMarkdown=found.markdown,
            questionTypes=[QuestionTypeInfo.from_record(kind) for kind in found.question_types],
            closingSteps=found.closing_steps,
        )

    def render(self) -> str:
        """The readable Markdown a client shows: the protocol, then the question types, checklist and closing."""
        lines = [self.instructionsMarkdown, "", "## Question types", ""]
        for kind in self.questionTypes:
            lines.append(f"- **{kind.label}** (`{kind.id}`): {kind.promptTemplate}")
            lines.append(f"  - Listen for: {'; '.join(kind.whatToListenFor)}")
            lines.append(f"  - Follow-ups: {' / '.join(kind.followUps)}")
        lines += ["", "## Checklist", ""] + [f"- [ ] {item}" for item in self.checklist]
        lines += ["", "## Closing steps", ""] + [f"{i}. {step}" for i, step in enumerate(self.closingSteps, start=1)]
        return "\n".join(lines)
