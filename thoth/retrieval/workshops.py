"""Workshops for quiz authoring: coverage, scoped context bundles in reading order, diffs, topic search.

A workshop is a source of kind `workshop`; its sections are partitions carrying `exercise_number`,
`step_number`, `path` and `is_diff` (see thoth/writes/parsers/workshop.py). A bundle is the scope's sections
in reading order (exercise notes, then each step's sections); it is paged by characters of section
content, and a cursor continues exactly where the previous page stopped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from thoth.errors import ClientError
from thoth.records import Partition, Present, Source
from thoth.retrieval.paging import CursorError, OffsetCursor, decode_cursor, encode_cursor, fingerprint, window
from thoth.retrieval.sources import all_sources
from thoth.store import Store

SECTION_FIELDS = ["doc_id", "ordinal", "kind", "heading_path", "text", "exercise_number", "step_number", "path",
                  "is_diff"]  # fmt: skip
WORKSHOP = "workshop"  # the source kind


@dataclass(frozen=True)
class ScopeWords:
    """What a caller names a scope's parts, and where it sends someone to look, for the messages here: a tool
    surface passes its own (thoth.mcp.outputs.workshop); the default is the core's words, with no hints."""

    workshop: str = "workshop"
    exercise: str = "exercise"
    step: str = "step"
    random: str = "random"
    max_chars: str = "max_chars"
    list_hint: tuple[str, ...] = ()  # where to see the indexed workshops
    coverage_hint: tuple[str, ...] = ()  # where to see a workshop's exercises and steps


WORDS = ScopeWords()


class ScopeError(ClientError):
    """The workshop, exercise or step asked for is not indexed; the message lists what is, and `next`
    says what to call or change instead."""

    def __init__(self, message: str, next: tuple[str, ...] = ()):
        super().__init__(message)
        self.next = next


@dataclass(frozen=True)
class Scope:
    source_id: str  # the workshop
    exercise: int
    step: int | None = None

    def arguments(self, words: ScopeWords) -> dict:
        """The scope in the caller's words (for messages that tell a caller what to pass)."""
        return {words.workshop: self.source_id, words.exercise: self.exercise, words.step: self.step}


@dataclass
class Exercise:
    title: str
    steps: set[int] = field(default_factory=set)


@dataclass
class Coverage:
    exercises: dict[int, Exercise] = field(default_factory=dict)  # by exercise number
    sections: int = 0
    diff_sections: int = 0


@dataclass(frozen=True)
class IndexedWorkshop:
    source: Source
    coverage: Coverage


@dataclass(frozen=True)
class WorkshopPage:
    """A page of the indexed workshops (sources): those on it, how many match in all, and the next page's cursor."""

    sources: list[IndexedWorkshop]
    total: int
    next_cursor: str | None


@dataclass(frozen=True)
class SectionPiece:
    """The part of a section (a partition) that fits on a page: its text from `offset` on."""

    partition: Partition
    offset: int
    content: str


@dataclass(frozen=True)
class Bundle:
    """One page of a scope's sections in reading order."""

    scope: Scope
    random: bool
    focus: str | None
    max_chars: int  # after clamping
    clamped: bool
    warnings: list[str]
    section_count: int
    total_chars: int
    sections: list[SectionPiece]
    next_cursor: str | None

    @property
    def truncated(self) -> bool:
        return self.next_cursor is not None


# -- what is indexed --------------------------------------------------------------------------


def coverage(store: Store, source_ids: list[str]) -> dict[str, Coverage]:
    """Exercises (with titles and steps), section and diff counts per workshop, from the partitions."""
    found: dict[str, Coverage] = {sid: Coverage() for sid in source_ids}
    if not source_ids:
        return found
    fields = ["source_id", "exercise_number", "step_number", "heading_path", "is_diff"]
    for partition in store.find(Partition, {"source_id": source_ids}, fields=fields):
        cov = found[partition.source_id]
        cov.sections += 1
        cov.diff_sections += bool(partition.is_diff)
        number = partition.exercise_number
        if number is None:
            continue
        title = (partition.heading_path or "").split(" > ")[0]  # workshop sections start with the exercise title
        exercise = cov.exercises.setdefault(number, Exercise(title))
        if partition.step_number is not None:
            exercise.steps.add(partition.step_number)
    return found


def list_workshops(
    store: Store,
    *,
    product: str | None,
    has_diffs: bool | None,
    limit: int,
    cursor: str | None,
    cursors: OffsetCursor,
    all_pages: bool = False,
) -> WorkshopPage:
    """Indexed workshops with metadata and coverage, sorted by id: `limit` at a time, or with `all_pages`
    every one from the cursor (or the start) on, in one answer."""
    wanted = {"p": product, "d": has_diffs}
    offset = cursors.offset(cursor, wanted)
    sources = [
        s
        for s in all_sources(store, WORKSHOP)
        if (product is None or (s.product or "").lower() == product.lower())
        and (has_diffs is None or bool(s.has_diffs) == has_diffs)
    ]
    end = len(sources) if all_pages else offset + limit
    page = sources[offset:end]
    covered = coverage(store, [s.source_id for s in page])
    more = end < len(sources)
    return WorkshopPage(
        sources=[IndexedWorkshop(source, covered[source.source_id]) for source in page],
        total=len(sources),
        next_cursor=cursors.next(end, wanted) if more else None,
    )


def indexed_exercises(store: Store, source_id: str | None = None) -> list[tuple[str, int]]:
    """Every (workshop, exercise number) that has sections, sorted."""
    ids = [source_id] if source_id else [s.source_id for s in all_sources(store, WORKSHOP)]
    return sorted((sid, n) for sid, cov in coverage(store, ids).items() for n in cov.exercises)


def choose_exercise(exercises: list[tuple[str, int]], rng: random.Random, words: ScopeWords = WORDS) -> tuple[str, int]:
    """One exercise, each with the same probability (not each workshop: a big workshop is not penalised)."""
    if not exercises:
        raise ScopeError("no workshop exercises are indexed; ingest a workshop first", words.list_hint)
    return exercises[rng.randrange(len(exercises))]


def require_workshop(store: Store, source_id: str, words: ScopeWords = WORDS) -> None:
    sources = {s.source_id for s in all_sources(store, WORKSHOP)}
    if source_id not in sources:
        known = ", ".join(sorted(sources)) or "(none: ingest a workshop first)"
        raise ScopeError(f"workshop {source_id!r} is not indexed; indexed workshops: {known}", words.list_hint)


def resolve_scope(store: Store, source_id: str, exercise: int, step: int | None, words: ScopeWords = WORDS) -> Scope:
    """The scope, checked against what is indexed; ScopeError names what is available instead."""
    require_workshop(store, source_id, words)
    exercises = coverage(store, [source_id])[source_id].exercises
    if exercise not in exercises:
        raise ScopeError(
            f"{words.exercise} {exercise} is not in workshop {source_id!r}; its exercises: "
            + ", ".join(str(n) for n in sorted(exercises)),
            words.coverage_hint,
        )
    steps = exercises[exercise].steps
    if step is not None and step not in steps:
        listed = ", ".join(str(n) for n in sorted(steps)) or "(none)"
        raise ScopeError(
            f"{words.step} {step} is not in exercise {exercise} of {source_id!r}; its steps: {listed}",
            words.coverage_hint,
        )
    return Scope(source_id, exercise, step)


# -- bundles ------------------------------------------------------------------------------


def sections(store: Store, scope: Scope, *, diffs_only: bool = False, focus: str | None = None) -> list[Partition]:
    """The scope's sections in reading order: exercise notes first, then each step's sections."""
    match: dict[str, object] = {
        "source_id": scope.source_id,
        "exercise_number": scope.exercise,
        "step_number": scope.step,
    }
    if diffs_only:
        match["is_diff"] = True
    found = store.find(Partition, match, fields=SECTION_FIELDS)
    found.sort(key=lambda p: (p.step_number is not None, p.step_number or 0, p.ordinal, p.partition_id))
    needle = (focus or "").strip().lower()
    if needle:
        found = [p for p in found if needle in (p.path or "").lower() or needle in p.text.lower()]
    return [p for p in found if p.text]


def section_label(partition: Partition) -> str:
    """What a section is, the last part of its heading path: 'Problem instructions', 'Diff: src/app.ts'."""
    return (partition.heading_path or "").split(" > ")[-1]


def step_file(path: str | None) -> str | None:
    """A section's file inside its step folder: `exercises/NN.x/NN.solution.y/src/a.ts` -> `src/a.ts`."""
    parts = (path or "").split("/")
    return "/".join(parts[3:]) if len(parts) > 3 and parts[0] == "exercises" else None


def _where(scope: Scope) -> str:
    return f"workshop {scope.source_id!r} exercise {scope.exercise}" + (
        f" step {scope.step}" if scope.step is not None else ""
    )


def _no_focus_match(store: Store, scope: Scope, focus: str) -> ScopeError:
    files = sorted(
        {f for p in sections(store, scope, diffs_only=True) if p.kind == "diff" and (f := step_file(p.path))}
    )
    listed = ", ".join(files) or "(none: this scope has no diffs)"
    return ScopeError(
        f"focus {focus!r} matches no diff in {_where(scope)}; files with diffs: {listed}",
        ("Pass one of the files listed as `focus`, or leave `focus` out for every diff.",),
    )


def _scope_from_arguments(
    store: Store, source_id: str | None, exercise: int | None, step: int | None, random_scope: bool, w: ScopeWords
) -> Scope | None:
    if random_scope and (exercise is not None or step is not None):
        raise ScopeError(f"{w.random}=true picks the exercise: leave {w.exercise} and {w.step} out")
    if step is not None and exercise is None:
        raise ScopeError(f"{w.step} needs {w.exercise}")
    if random_scope or (source_id is None and exercise is None):
        return None
    if source_id is None or exercise is None:
        raise ScopeError(f"give both {w.workshop} and {w.exercise} ({w.step} is optional)")
    return resolve_scope(store, source_id, exercise, step, w)


def context_page(
    store: Store,
    *,
    cursor_kind: str,
    source_id: str | None,
    exercise: int | None,
    step: int | None,
    random_scope: bool,
    max_chars: int,
    cursor: str | None,
    diffs_only: bool = False,
    focus: str | None = None,
    rng: random.Random | None = None,
    max_chars_limit: int | None = None,
    words: ScopeWords = WORDS,
) -> Bundle:
    """One page of a scope's bundle: the scope is explicit, random (uniform over exercises, within
    `source_id` when given), or the cursor's; explicit arguments given with a cursor must match it.

    `max_chars` above `max_chars_limit` is clamped to it, and the answer says so."""
    warnings: list[str] = []
    clamped = max_chars_limit is not None and max_chars > max_chars_limit
    if clamped:
        warnings.append(f"{words.max_chars} {max_chars} is above the hard maximum; clamped to {max_chars_limit}")
        max_chars = max_chars_limit  # type: ignore[assignment]
    focus = (focus or "").strip() or None  # whitespace only is no focus
    scope = _scope_from_arguments(store, source_id, exercise, step, random_scope, words)
    offset = (0, 0)
    state: dict = {}
    if cursor:
        state = decode_cursor(cursor, cursor_kind)
        try:
            cursor_scope = Scope(str(state["w"]), int(state["e"]), None if state["s"] is None else int(state["s"]))
            offset = (int(state["i"]), int(state["o"]))
        except (KeyError, TypeError, ValueError):
            raise CursorError("cursor is not valid: pass the nextCursor value of a previous answer unchanged") from None
        if scope is not None and scope != cursor_scope:
            raise CursorError(
                f"cursor continues {cursor_scope.arguments(words)}, not {scope.arguments(words)}; "
                "leave the scope out or match it"
            )
        if focus not in (None, state.get("f")):
            raise CursorError("cursor was issued for another focus; pass the same focus or leave it out")
        scope, focus = cursor_scope, state.get("f")
    elif random_scope:
        if source_id is not None:
            require_workshop(store, source_id, words)
        scope = Scope(*choose_exercise(indexed_exercises(store, source_id), rng or random.Random(), words))
    if scope is None:
        w = words
        raise ScopeError(
            f"give {w.workshop} and {w.exercise} (and optionally {w.step}), or {w.random}=true", w.list_hint
        )
    found = sections(store, scope, diffs_only=diffs_only, focus=focus)
    if focus and diffs_only and not found:
        raise _no_focus_match(store, scope, focus)
    marker = fingerprint([p.partition_id for p in found])
    if cursor and state.get("h") != marker:
        raise CursorError("the workshop was re-indexed since this cursor was issued; start again without a cursor")
    pieces, following = window([len(p.text) for p in found], offset[0], offset[1], max_chars)
    page = [
        SectionPiece(found[piece.index], piece.start, found[piece.index].text[piece.start : piece.end])
        for piece in pieces
    ]
    next_cursor = None
    if following is not None:
        state = {"w": scope.source_id, "e": scope.exercise, "s": scope.step, "f": focus or None, "h": marker}
        next_cursor = encode_cursor(cursor_kind, {**state, "i": following[0], "o": following[1]})
    return Bundle(
        scope=scope,
        random=bool(random_scope and not cursor),
        focus=focus or None,
        max_chars=max_chars,
        clamped=clamped,
        warnings=warnings,
        section_count=len(found),
        total_chars=sum(len(p.text) for p in found),
        sections=page,
        next_cursor=next_cursor,
    )


# -- steps and their diffs ----------------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    change: str  # added | removed | modified
    path: str


@dataclass
class StepChanges:
    """Which sides a step has, and the files its solution adds, removes or modifies."""

    problem: bool = False
    solution: bool = False
    changes: list[FileChange] = field(default_factory=list)


def step_changes(store: Store, source_id: str) -> dict[tuple[int, int], StepChanges]:
    """(exercise, step) -> which sides the step has and the files its solution adds, removes or modifies.

    Read from the step's sections: `{side}-instructions`/`{side}-code` say a side is there, the
    `diff-summary` section lists `added|removed|modified path` lines (none: nothing to diff).
    """
    require_workshop(store, source_id)
    match: dict[str, object] = {"source_id": source_id, "step_number": Present()}
    steps: dict[tuple[int, int], StepChanges] = {}
    for partition in store.find(Partition, match, fields=["exercise_number", "step_number", "kind"]):  # no text
        step = steps.setdefault((partition.exercise_number, partition.step_number), StepChanges())  # type: ignore[arg-type]
        side = partition.kind.split("-", 1)[0]
        if side == "problem":
            step.problem = True
        elif side == "solution":
            step.solution = True
    summaries = {**match, "kind": "diff-summary"}
    for partition in store.find(Partition, summaries, fields=["exercise_number", "step_number", "text"]):
        step = steps[(partition.exercise_number, partition.step_number)]  # type: ignore[index]
        for line in partition.text.splitlines():
            change, _, path = line.partition(" ")
            if path:
                step.changes.append(FileChange(change, path))
    for step in steps.values():
        step.changes.sort(key=lambda c: c.path)
    return steps
