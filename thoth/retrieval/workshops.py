"""Workshops for quiz authoring: coverage, scoped context bundles in reading order, diffs, topic search.

A workshop is a source of kind `workshop`; its sections are partitions carrying `exercise_number`,
`step_number`, `path` and `is_diff` (see ingest/parsers/workshop.py). A bundle is the scope's sections
in reading order (exercise notes, then each step's sections); it is paged by characters of section
content, and a cursor continues exactly where the previous page stopped.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from thoth.embed import Embedder, EmbedderUnavailable
from thoth.errors import ClientError
from thoth.records import Hit, legacy_row
from thoth.retrieval.paging import CursorError, decode_cursor, encode_cursor, fingerprint, window
from thoth.retrieval.search import MIN_PREFETCH, fuse, keyword_search, vector_search
from thoth.store import ModelMismatch, Store, filters

SECTION_COLUMNS = [
    "partition_id",
    "doc_id",
    "ordinal",
    "kind",
    "heading_path",
    "text",
    "exercise_number",
    "step_number",
    "path",
    "is_diff",
]
MIN_QUERY_CHARS = 3


LIST_HINT = "Call `list_workshops` to see available workshop slugs."
COVERAGE_HINT = "Call `list_workshops` to see each workshop's exercises and their step numbers."


class ScopeError(ClientError):
    """The workshop, exercise or step asked for is not indexed; the message lists what is, and `next`
    says what to call or change instead."""

    def __init__(self, message: str, next: tuple[str, ...] = ()):
        super().__init__(message)
        self.next = next


@dataclass(frozen=True)
class Scope:
    workshop: str
    exercise: int
    step: int | None = None

    def as_dict(self) -> dict:
        return {"workshop": self.workshop, "exerciseNumber": self.exercise, "stepNumber": self.step}


@dataclass
class Coverage:
    exercises: dict[int, dict] = field(default_factory=dict)  # number -> {"title", "steps": set}
    sections: int = 0
    diff_sections: int = 0


# -- what is indexed --------------------------------------------------------------------------


def workshop_sources(store: Store) -> list[dict]:
    return sorted((r for r in store.list_sources() if r["kind"] == "workshop"), key=lambda r: r["source_id"])


def coverage(store: Store, source_ids: list[str]) -> dict[str, Coverage]:
    """Exercises (with titles and steps), section and diff counts per workshop, from the partitions."""
    found: dict[str, Coverage] = {sid: Coverage() for sid in source_ids}
    if not source_ids:
        return found
    columns = ["source_id", "exercise_number", "step_number", "heading_path", "is_diff"]
    for row in store.partitions(filters.is_in("source_id", source_ids), columns):
        cov = found[row["source_id"]]
        cov.sections += 1
        cov.diff_sections += bool(row["is_diff"])
        number = row["exercise_number"]
        if number is None:
            continue
        title = (row["heading_path"] or "").split(" > ")[0]  # workshop sections start with the exercise title
        exercise = cov.exercises.setdefault(number, {"title": title, "steps": set()})
        if row["step_number"] is not None:
            exercise["steps"].add(row["step_number"])
    return found


def list_workshops(
    store: Store,
    *,
    product: str | None,
    has_diffs: bool | None,
    limit: int,
    cursor: str | None,
    all_pages: bool = False,
) -> dict:
    """Indexed workshops with metadata and coverage, sorted by id: `limit` at a time, or with `all_pages`
    every one from the cursor (or the start) on, in one answer."""
    wanted = {"p": product, "d": has_diffs}
    offset = 0
    if cursor:
        state = decode_cursor(cursor, "list_workshops")
        if {"p": state.get("p"), "d": state.get("d")} != wanted or not isinstance(state.get("o"), int):
            raise CursorError("cursor was issued for other filters; pass the same product and hasDiffs as before")
        offset = max(0, state["o"])
    sources = [
        s
        for s in workshop_sources(store)
        if (product is None or (s["product"] or "").lower() == product.lower())
        and (has_diffs is None or bool(s["has_diffs"]) == has_diffs)
    ]
    end = len(sources) if all_pages else offset + limit
    page = sources[offset:end]
    covered = coverage(store, [s["source_id"] for s in page])
    workshops = []
    for source in page:
        cov = covered[source["source_id"]]
        workshops.append(
            {
                "workshop": source["source_id"],
                "title": source["name"],
                "product": source["product"],
                "hasDiffs": bool(source["has_diffs"]),
                "exerciseCount": len(cov.exercises),
                "stepCount": sum(len(e["steps"]) for e in cov.exercises.values()),
                "sectionCount": cov.sections,
                "diffSectionCount": cov.diff_sections,
                "exercises": [
                    {"exerciseNumber": n, "title": e["title"], "steps": sorted(e["steps"])}
                    for n, e in sorted(cov.exercises.items())
                ],
                "lastIndexedAt": source["updated_at"].isoformat() if source.get("updated_at") else None,
            }
        )
    more = end < len(sources)
    return {
        "workshops": workshops,
        "total": len(sources),
        "nextCursor": encode_cursor("list_workshops", {**wanted, "o": end}) if more else None,
    }


def indexed_exercises(store: Store, workshop: str | None = None) -> list[tuple[str, int]]:
    """Every (workshop, exercise number) that has sections, sorted."""
    ids = [workshop] if workshop else [s["source_id"] for s in workshop_sources(store)]
    return sorted((sid, n) for sid, cov in coverage(store, ids).items() for n in cov.exercises)


def choose_exercise(exercises: list[tuple[str, int]], rng: random.Random) -> tuple[str, int]:
    """One exercise, each with the same probability (not each workshop: a big workshop is not penalised)."""
    if not exercises:
        raise ScopeError("no workshop exercises are indexed; ingest a workshop first", (LIST_HINT,))
    return exercises[rng.randrange(len(exercises))]


def require_workshop(store: Store, workshop: str) -> None:
    sources = {s["source_id"] for s in workshop_sources(store)}
    if workshop not in sources:
        known = ", ".join(sorted(sources)) or "(none: ingest a workshop first)"
        raise ScopeError(f"workshop {workshop!r} is not indexed; indexed workshops: {known}", (LIST_HINT,))


def resolve_scope(store: Store, workshop: str, exercise: int, step: int | None) -> Scope:
    """The scope, checked against what is indexed; ScopeError names what is available instead."""
    require_workshop(store, workshop)
    exercises = coverage(store, [workshop])[workshop].exercises
    if exercise not in exercises:
        raise ScopeError(
            f"exerciseNumber {exercise} is not in workshop {workshop!r}; its exercises: "
            + ", ".join(str(n) for n in sorted(exercises)),
            (COVERAGE_HINT,),
        )
    steps = exercises[exercise]["steps"]
    if step is not None and step not in steps:
        listed = ", ".join(str(n) for n in sorted(steps)) or "(none)"
        raise ScopeError(
            f"stepNumber {step} is not in exercise {exercise} of {workshop!r}; its steps: {listed}", (COVERAGE_HINT,)
        )
    return Scope(workshop, exercise, step)


# -- bundles ------------------------------------------------------------------------------


def sections(store: Store, scope: Scope, *, diffs_only: bool = False, focus: str | None = None) -> list[dict]:
    """The scope's sections in reading order: exercise notes first, then each step's sections."""
    conditions: dict[str, object] = {"source_id": scope.workshop, "exercise_number": scope.exercise}
    if scope.step is not None:
        conditions["step_number"] = scope.step
    if diffs_only:
        conditions["is_diff"] = True
    rows = store.partitions(filters.where(conditions), SECTION_COLUMNS)
    rows.sort(key=lambda r: (r["step_number"] is not None, r["step_number"] or 0, r["ordinal"], r["partition_id"]))
    needle = (focus or "").strip().lower()
    if needle:
        rows = [r for r in rows if needle in (r["path"] or "").lower() or needle in r["text"].lower()]
    return [r for r in rows if r["text"]]


def step_file(path: str | None) -> str | None:
    """A section's file inside its step folder: `exercises/NN.x/NN.solution.y/src/a.ts` -> `src/a.ts`."""
    parts = (path or "").split("/")
    return "/".join(parts[3:]) if len(parts) > 3 and parts[0] == "exercises" else None


def _where(scope: Scope) -> str:
    return f"workshop {scope.workshop!r} exercise {scope.exercise}" + (
        f" step {scope.step}" if scope.step is not None else ""
    )


def _no_focus_match(store: Store, scope: Scope, focus: str) -> ScopeError:
    files = sorted(
        {f for r in sections(store, scope, diffs_only=True) if r["kind"] == "diff" and (f := step_file(r["path"]))}
    )
    listed = ", ".join(files) or "(none: this scope has no diffs)"
    return ScopeError(
        f"focus {focus!r} matches no diff in {_where(scope)}; files with diffs: {listed}",
        ("Pass one of the files listed as `focus`, or leave `focus` out for every diff.",),
    )


def _scope_from_arguments(
    store: Store, workshop: str | None, exercise: int | None, step: int | None, random_scope: bool
) -> Scope | None:
    if random_scope and (exercise is not None or step is not None):
        raise ScopeError("random=true picks the exercise: leave exerciseNumber and stepNumber out")
    if step is not None and exercise is None:
        raise ScopeError("stepNumber needs exerciseNumber")
    if random_scope or (workshop is None and exercise is None):
        return None
    if workshop is None or exercise is None:
        raise ScopeError("give both workshop and exerciseNumber (stepNumber is optional)")
    return resolve_scope(store, workshop, exercise, step)


def context_page(
    store: Store,
    *,
    tool: str,
    workshop: str | None,
    exercise: int | None,
    step: int | None,
    random_scope: bool,
    max_chars: int,
    cursor: str | None,
    diffs_only: bool = False,
    focus: str | None = None,
    rng: random.Random | None = None,
    max_chars_limit: int | None = None,
) -> dict:
    """One page of a scope's bundle: the scope is explicit, random (uniform over exercises, within
    `workshop` when given), or the cursor's; explicit arguments given with a cursor must match it.

    `max_chars` above `max_chars_limit` is clamped to it, and the answer says so."""
    warnings: list[str] = []
    clamped = max_chars_limit is not None and max_chars > max_chars_limit
    if clamped:
        warnings.append(f"maxChars {max_chars} is above the hard maximum; clamped to {max_chars_limit}")
        max_chars = max_chars_limit  # type: ignore[assignment]
    focus = (focus or "").strip() or None  # whitespace only is no focus
    scope = _scope_from_arguments(store, workshop, exercise, step, random_scope)
    offset = (0, 0)
    state: dict = {}
    if cursor:
        state = decode_cursor(cursor, tool)
        try:
            cursor_scope = Scope(str(state["w"]), int(state["e"]), None if state["s"] is None else int(state["s"]))
            offset = (int(state["i"]), int(state["o"]))
        except (KeyError, TypeError, ValueError):
            raise CursorError("cursor is not valid: pass the nextCursor value of a previous answer unchanged") from None
        if scope is not None and scope != cursor_scope:
            raise CursorError(
                f"cursor continues {cursor_scope.as_dict()}, not {scope.as_dict()}; leave the scope out or match it"
            )
        if focus not in (None, state.get("f")):
            raise CursorError("cursor was issued for another focus; pass the same focus or leave it out")
        scope, focus = cursor_scope, state.get("f")
    elif random_scope:
        if workshop is not None:
            require_workshop(store, workshop)
        scope = Scope(*choose_exercise(indexed_exercises(store, workshop), rng or random.Random()))
    if scope is None:
        raise ScopeError("give workshop and exerciseNumber (and optionally stepNumber), or random=true", (LIST_HINT,))
    found = sections(store, scope, diffs_only=diffs_only, focus=focus)
    if focus and diffs_only and not found:
        raise _no_focus_match(store, scope, focus)
    marker = fingerprint([r["partition_id"] for r in found])
    if cursor and state.get("h") != marker:
        raise CursorError("the workshop was re-indexed since this cursor was issued; start again without a cursor")
    pieces, following = window([len(r["text"]) for r in found], offset[0], offset[1], max_chars)
    page = []
    for piece in pieces:
        row = found[piece.index]
        page.append(
            {
                "id": row["partition_id"],
                "label": (row["heading_path"] or "").split(" > ")[-1],
                "kind": row["kind"],
                "sourcePath": row["path"] or None,
                "exerciseNumber": row["exercise_number"],
                "stepNumber": row["step_number"],
                "isDiff": bool(row["is_diff"]),
                "offset": piece.start,
                "totalChars": len(row["text"]),
                "content": row["text"][piece.start : piece.end],
            }
        )
    next_cursor = None
    if following is not None:
        state = {"w": scope.workshop, "e": scope.exercise, "s": scope.step, "f": focus or None, "h": marker}
        next_cursor = encode_cursor(tool, {**state, "i": following[0], "o": following[1]})
    return {
        **scope.as_dict(),
        "random": bool(random_scope and not cursor),
        "focus": focus or None,
        "maxChars": max_chars,
        "maxCharsClamped": clamped,
        "warnings": warnings,
        "sectionCount": len(found),
        "totalChars": sum(len(r["text"]) for r in found),
        "sections": page,
        "truncated": following is not None,
        "nextCursor": next_cursor,
    }


# -- topic search -------------------------------------------------------------------------------


# A query that looks like code (one token: camelCase, snake_case, a dotted name or a call) asks for the
# code that uses it; anything else asks for a concept, which the notes teach and the code only uses.
_IDENTIFIER = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?$")
PROSE_KINDS = ("-instructions", "-finished")
# Multipliers on the fused score, by what a section is, for each kind of query.
CONCEPT_WEIGHTS = {"prose": 1.0, "code": 0.6, "diff": 0.5}
IDENTIFIER_WEIGHTS = {"prose": 0.75, "code": 1.0, "diff": 0.9}
EXACT_IDENTIFIER_BOOST = 1.5  # code that contains the identifier as written


def looks_like_identifier(query: str) -> bool:
    text = query.strip()
    if not _IDENTIFIER.match(text):
        return False
    core = text.removesuffix("()")
    return any(c in core for c in "_.$") or text.endswith("()") or any(c.isupper() for c in core[1:])


def _family(kind: str | None, content_type: str | None) -> str:
    if kind and kind.endswith(PROSE_KINDS):
        return "prose"
    if (kind or "").startswith("diff") or content_type == "diff":
        return "diff"
    return "code" if (kind or "").endswith("-code") or content_type == "code" else "prose"


def _check_topic_scope(
    store: Store, query: str, workshop: str | None, exercise: int | None, step: int | None
) -> list[str]:
    if len("".join(query.split())) < MIN_QUERY_CHARS:
        raise ScopeError(
            f"query must have at least {MIN_QUERY_CHARS} non-whitespace characters",
            ("Give a longer query: a concept (e.g. 'cache invalidation') or an identifier (e.g. 'useState').",),
        )
    if step is not None and exercise is None:
        raise ScopeError("stepNumber needs exerciseNumber", ("Pass exerciseNumber too, or leave stepNumber out.",))
    if exercise is not None and workshop is None:
        raise ScopeError("exerciseNumber needs workshop", (LIST_HINT,))
    ids = [s["source_id"] for s in workshop_sources(store)]
    if not ids:
        raise ScopeError("no workshops are indexed; ingest a workshop first", (LIST_HINT,))
    if workshop is not None:
        require_workshop(store, workshop)
    if workshop is not None and exercise is not None:
        resolve_scope(store, workshop, exercise, step)
    return [workshop] if workshop else ids


def topic_search(
    store: Store,
    get_embedder: Callable[[], Embedder],
    query: str,
    *,
    workshop: str | None,
    exercise: int | None,
    step: int | None,
    limit: int,
) -> dict:
    """Where a topic is taught: workshop chunks ranked for the query, deduplicated, each with its scope.

    Semantic (vector and keyword lists fused) when the model loads and the index has vectors; keyword
    only otherwise, with a warning saying why. The scope is checked against the index before any
    embedding. Concept queries favour the notes that teach, identifier queries the code that uses it.
    """
    query = query.strip()
    ids = _check_topic_scope(store, query, workshop, exercise, step)
    match = {"source_id": ids, "exercise_number": exercise, "step_number": step}
    depth = max(MIN_PREFETCH, limit * 4)
    warnings: list[str] = []
    vector_hits: list[Hit] = []
    available = False
    try:
        vector_hits = vector_search(store, get_embedder(), query, depth, match)
        available = True
    except (EmbedderUnavailable, ModelMismatch) as exc:
        warnings.append(f"vector search is unavailable ({exc}); these are keyword matches")
    if available and not vector_hits:
        available = False
        warnings.append("the index holds no vectors for these workshops; these are keyword matches")
    keyword_hits = keyword_search(store, query, depth, match)
    identifier = looks_like_identifier(query)
    if available:
        w_vector = 0.4 if identifier else 0.7  # an identifier is matched best by its exact tokens
        fused = fuse([(w_vector, vector_hits), (1.0 - w_vector, keyword_hits)], depth)
    else:
        fused = fuse([(1.0, keyword_hits)], depth)
    hits = [legacy_row(hit) for hit in fused]
    wanted = sorted({h["partition_id"] for h in hits})
    columns = ["partition_id", "kind", "path", "is_diff", "heading_path"]
    rows = store.partitions(filters.is_in("partition_id", wanted), columns) if wanted else []
    meta = {r["partition_id"]: r for r in rows}
    weights = IDENTIFIER_WEIGHTS if identifier else CONCEPT_WEIGHTS
    for hit in hits:
        part = meta.get(hit["partition_id"], {})
        family = _family(part.get("kind"), hit.get("content_type"))
        factor = weights[family]
        if identifier and family != "prose" and query.removesuffix("()") in hit["text"]:
            factor *= EXACT_IDENTIFIER_BOOST
        hit["score"] = round(hit["score"] * factor, 6)
        hit["section_kind"] = part.get("kind")
        hit["section_label"] = (part.get("heading_path") or "").split(" > ")[-1] or None
        hit["source_path"] = part.get("path") or None
        hit["is_diff"] = bool(part.get("is_diff"))
    hits.sort(key=lambda h: (-h["score"], h["chunk_id"]))
    seen: set[str] = set()
    unique = []
    for hit in hits:  # the same text (a file unchanged from problem to solution) is one result
        text = " ".join(hit["text"].split())
        if text not in seen:
            seen.add(text)
            unique.append(hit)
    if not unique and not available:
        warnings.append("keyword search found nothing; try other words, or the exact name used in the workshop")
    return {
        "query": query,
        "limit": limit,
        "mode": "semantic" if available else "keyword",
        "vectorSearchAvailable": available,
        "warnings": warnings,
        "queryKind": "identifier" if identifier else "concept",
        "matches": unique[:limit],
    }


# -- steps and their diffs ----------------------------------------------------------------------


def step_changes(store: Store, workshop: str) -> dict[tuple[int, int], dict]:
    """(exercise, step) -> which sides the step has and the files its solution adds, removes or modifies.

    Read from the step's sections: `{side}-instructions`/`{side}-code` say a side is there, the
    `diff-summary` section lists `added|removed|modified path` lines (none: nothing to diff).
    """
    require_workshop(store, workshop)
    where = filters.where({"source_id": workshop}) + " AND step_number IS NOT NULL"
    steps: dict[tuple[int, int], dict] = {}
    for row in store.partitions(where, ["exercise_number", "step_number", "kind"]):  # no text: code is long
        step = steps.setdefault(
            (row["exercise_number"], row["step_number"]), {"problem": False, "solution": False, "changes": []}
        )
        side = row["kind"].split("-", 1)[0]
        if side in ("problem", "solution"):
            step[side] = True
    summaries = f"{where} AND {filters.eq('kind', 'diff-summary')}"
    for row in store.partitions(summaries, ["exercise_number", "step_number", "text"]):
        step = steps[(row["exercise_number"], row["step_number"])]
        for line in row["text"].splitlines():
            change, _, path = line.partition(" ")
            if path:
                step["changes"].append({"change": change, "path": path})
    for step in steps.values():
        step["changes"].sort(key=lambda c: c["path"])
    return steps
