"""Workshop topic search: where a topic is taught, as workshop chunks ranked for the query.

Hybrid search (thoth.retrieval.search) with a reciprocal-rank preset per kind of query, then each
chunk weighted by what its section is (the notes that teach, the code that uses, the diffs that
change) and the same text kept once. Keyword only, with a warning saying why, when the model or the
vectors are not there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from thoth.embed import Embedder, EmbedderUnavailable
from thoth.records import Chunk, Hit, Partition
from thoth.retrieval.search import MIN_PREFETCH, Ranking, hybrid_search, keyword_only
from thoth.retrieval.sources import all_sources
from thoth.retrieval.workshops import WORDS, WORKSHOP, ScopeError, ScopeWords, require_workshop, resolve_scope
from thoth.store import ModelMismatch, Store

MIN_QUERY_CHARS = 3

# A query that looks like code (one token: camelCase, snake_case, a dotted name or a call) asks for the
# code that uses it; anything else asks for a concept, which the notes teach and the code only uses.
_IDENTIFIER = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?$")
PROSE_KINDS = ("-instructions", "-finished")
# Multipliers on the fused score, by what a section is, for each kind of query.
CONCEPT_WEIGHTS = {"prose": 1.0, "code": 0.6, "diff": 0.5}
IDENTIFIER_WEIGHTS = {"prose": 0.75, "code": 1.0, "diff": 0.9}
EXACT_IDENTIFIER_BOOST = 1.5  # code that contains the identifier as written
# Reciprocal rank fusion, by whether the query looks like an identifier: one is matched best by its
# exact tokens, so the keyword list weighs more.
TOPIC_RANKINGS = {True: Ranking(fusion="rrf", vector_weight=0.4), False: Ranking(fusion="rrf", vector_weight=0.7)}


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
    store: Store, query: str, source_id: str | None, exercise: int | None, step: int | None, w: ScopeWords
) -> list[str]:
    if len("".join(query.split())) < MIN_QUERY_CHARS:
        raise ScopeError(
            f"query must have at least {MIN_QUERY_CHARS} non-whitespace characters",
            ("Give a longer query: a concept (e.g. 'cache invalidation') or an identifier (e.g. 'useState').",),
        )
    if step is not None and exercise is None:
        raise ScopeError(f"{w.step} needs {w.exercise}", (f"Pass {w.exercise} too, or leave {w.step} out.",))
    if exercise is not None and source_id is None:
        raise ScopeError(f"{w.exercise} needs {w.workshop}", w.list_hint)
    ids = [s.source_id for s in all_sources(store, WORKSHOP)]
    if not ids:
        raise ScopeError("no workshops are indexed; ingest a workshop first", w.list_hint)
    if source_id is not None:
        require_workshop(store, source_id, w)
    if source_id is not None and exercise is not None:
        resolve_scope(store, source_id, exercise, step, w)
    return [source_id] if source_id else ids


@dataclass(frozen=True)
class TopicHit:
    """A chunk found by `topic_search`, with its score weighted by what its section is, and that section."""

    hit: Hit
    section: Partition | None  # kind, heading_path, path, is_diff; None when the partition is gone

    @property
    def chunk(self) -> Chunk:
        return self.hit.chunk


@dataclass(frozen=True)
class TopicSearch:
    query: str
    limit: int
    semantic: bool  # vector and keyword lists fused; False: keyword only (`warnings` say why)
    warnings: list[str]
    identifier: bool  # the query looks like code (see looks_like_identifier)
    hits: list[TopicHit]


def topic_search(
    store: Store,
    get_embedder: Callable[[], Embedder],
    query: str,
    *,
    source_id: str | None,
    exercise: int | None,
    step: int | None,
    limit: int,
    words: ScopeWords = WORDS,
) -> TopicSearch:
    """Where a topic is taught: workshop chunks ranked for the query, deduplicated, each with its section.

    Semantic (vector and keyword lists fused) when the model loads and the index has vectors; keyword
    only otherwise, with a warning saying why. The scope is checked against the index before any
    embedding. Concept queries favour the notes that teach, identifier queries the code that uses it.
    """
    query = query.strip()
    ids = _check_topic_scope(store, query, source_id, exercise, step, words)
    match = {"source_id": ids, "exercise_number": exercise, "step_number": step}
    depth = max(MIN_PREFETCH, limit * 4)
    identifier = looks_like_identifier(query)
    ranking = TOPIC_RANKINGS[identifier]
    warnings: list[str] = []
    fused: list[Hit] = []
    available = False
    try:
        found = hybrid_search(store, get_embedder(), query, depth, match=match, ranking=ranking)
        fused = found.hits
        # With the vector list's weight at 0.4 or more and `depth` at least MIN_PREFETCH, its first hit
        # always ranks among the fused ones: no hit with a similarity means the vector list was empty.
        available = any(hit.similarity is not None for hit in fused)
        if found.keyword_only:  # the provider failed mid-search: said in this result's warnings
            warnings.append(found.keyword_only)
        elif not available:
            warnings.append("the index holds no vectors for these workshops; these are keyword matches")
    except (EmbedderUnavailable, ModelMismatch) as exc:
        warnings.append(keyword_only(exc))
    if not available:
        fused = hybrid_search(store, None, query, depth, alpha=0.0, match=match, ranking=ranking).hits
    wanted = sorted({hit.chunk.partition_id for hit in fused if hit.chunk.partition_id is not None})
    fields = ["kind", "path", "is_diff", "heading_path"]
    found = store.find(Partition, {"partition_id": wanted}, fields=fields) if wanted else []
    section_of = {p.partition_id: p for p in found}
    weights = IDENTIFIER_WEIGHTS if identifier else CONCEPT_WEIGHTS
    weighted = []
    for hit in fused:
        section = section_of.get(hit.chunk.partition_id or "")
        family = _family(section.kind if section else None, hit.chunk.content_type)
        factor = weights[family]
        if identifier and family != "prose" and query.removesuffix("()") in hit.chunk.text:
            factor *= EXACT_IDENTIFIER_BOOST
        weighted.append(TopicHit(replace(hit, score=round(hit.score * factor, 6)), section))
    weighted.sort(key=lambda t: (-t.hit.score, t.hit.chunk_id))
    seen: set[str] = set()
    unique = []
    for topic_hit in weighted:  # the same text (a file unchanged from problem to solution) is one result
        text = " ".join(topic_hit.chunk.text.split())
        if text not in seen:
            seen.add(text)
            unique.append(topic_hit)
    if not unique and not available:
        warnings.append("keyword search found nothing; try other words, or the exact name used in the workshop")
    return TopicSearch(query, limit, available, warnings, identifier, unique[:limit])
