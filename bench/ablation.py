"""Ablation of the ranking levers (issue 16): each on and off, both dev sets, and what it costs.

    python -m bench.quality --ablation [--only scifact|handbook] [--limit-queries N]

Every query's vector and keyword lists are fetched once from the real index (DEEPEST deep; each
configuration takes its `Ranking.candidates`, by default the depth the server fetches; vectors by exact
search, so the ANN index the shared bench folder has does not blur the comparison), then ranked under
each configuration by the functions the server runs (`fuse_lists`, `by_document`), so a figure here is
what a tool returns. The levers:

- fusion: plain RRF (the old default) against a convex combination of scores scaled per list, with
  the vector weight chosen on dev (`--grid` prints the whole grid);
- title: the title/heading-path BM25 field, boosted, beside the text field;
- documents: files ranked by their best chunk plus a share of their next ones, each file served once
  (tools that rank files: search_handbook, qurio_search) — "served@5" counts the gold file among the
  five hits a client sees, which is where crowding shows;
- feedback: pseudo-relevance feedback (RM3-style): a second keyword search for the query plus the
  words that weigh most in the first passages of the default ranking, fused beside the first keyword
  list with a share of its weight (`with_feedback`); the expanded lists are fetched once per
  (passages, words) setting and the share varies on them;
- dense feedback (Rocchio): the query vector moved toward the mean vector of the first retrieval's top
  fused passages, `q + beta * mean`, and searched again; that list replaces the first vector list;
- short queries: a query of at most N content words weighed with a lower vector weight (leaning
  lexical), longer ones with the default's (`query_vector_weight`);
- confidence: the vector weight moved by beta x (the vector list's cosine spread, best less 10th, minus
  its dev median), so a query whose nearest passages stand out from the rest leans dense;
- normalisation: how convex fusion scales each list (min-max between its best and last candidate, the
  previous default; DBSF, mean +- 3 sigma; a fixed floor: cosine from `vector_floor`, BM25 from 0;
  a floor below the last candidate by `vector_spread` times the list's range);
- depth: lists 60 or 100 deep instead of 40 (`Ranking.candidates`);
- document fusion: a file scored by its best chunk in each list, not by its best fused chunk;
- context: chunks embedded with their title and heading path (the index's default) against the text
  alone (vectors computed here and cached under the --db folder; SciFact only with --context-scifact,
  it re-embeds ~13k chunks).

"below" is the share of queries where hybrid scores below the better of vector-only and keyword-only
(nDCG@10 on SciFact, MRR@5 on the handbook) under the same levers. Latency: the real `hybrid_search`
per handbook query, the default ranking against the old one, interleaved so that load hits both alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path
from statistics import median

import numpy as np

from thoth.embed import Embedder
from thoth.records import Chunk, Hit
from thoth.retrieval.search import (
    DEFAULT_RANKING,
    MIN_PREFETCH,
    Lists,
    Ranking,
    by_document,
    fuse_lists,
    hybrid_search,
    keyword_search,
    query_vector_weight,
    with_feedback,
)
from thoth.store import Store

OLD = Ranking(fusion="rrf", vector_weight=0.5, section_boost=0.0, document_share=0.0, document_fusion=False)
# the default before the normalisation and document-fusion levers (convex, min-max, best fused chunk)
PREVIOUS = replace(DEFAULT_RANKING, normalise="minmax", vector_floor=0.0, document_fusion=False)
BOOSTS = (0.0, 1.0, 2.0)
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
SHARES = (0.0, 0.2, 0.5)
FEEDBACK = ((3, 10), (5, 10), (10, 20))  # (passages, words) settings fetched for the feedback lever
FEEDBACK_WEIGHTS = (0.2, 0.3, 0.5)
DENSE_FEEDBACK = ((3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0), (10, 0.5), (10, 1.0))  # (passages, beta)
SHORT = ((5, 0.2), (5, 0.3), (7, 0.2), (7, 0.3), (9, 0.3))  # (content words at most, vector weight)
CONFIDENCE = (0.5, 1.0, 2.0, 4.0)  # beta: vector weight change per unit of cosine spread
SPREAD_MEDIAN = 0.13  # the median spread (best cosine less the 10th) over both dev sets' queries
DEEPEST = 100  # lists are fetched this deep once; a configuration's `candidates` takes the first ones
DEPTHS = (60, 100)
NORMALISE = (("dbsf", 0.0), ("floor", 0.0), ("floor", 0.1), ("floor", 0.2))  # (normalise, vector floor)


@dataclass
class Case:
    text: str
    gold: set[str]
    vector: list[Hit] = field(default_factory=list)
    vector_plain: list[Hit] | None = None  # against vectors of the text alone (no title/heading context)
    keyword: dict[float, list[Hit]] = field(default_factory=dict)  # by title boost
    feedback: dict[tuple[int, int], list[Hit]] = field(default_factory=dict)  # by (passages, words)
    dense: dict[tuple[int, float], list[Hit]] = field(default_factory=dict)  # Rocchio, by (passages, beta)


@dataclass
class Dataset:
    name: str
    cases: list[Case]
    metric: str  # the per-query metric "below" compares
    metrics: dict[str, Callable[[list[str], set[str]], float]]


@dataclass(frozen=True)
class Config:
    ranking: Ranking
    documents: bool = False  # files served once each (by_document)
    context: bool = True  # the index's vectors (with context) or those of the text alone
    dense: tuple[int, float] | None = None  # dense feedback (passages, beta): its vector list instead
    confidence: float = 0.0  # beta of the confidence weight (0: off)


def collect(store: Store, embedder: Embedder, source_id: str, pairs: list[tuple[str, set[str]]]) -> list[Case]:
    match = {"source_id": source_id}
    cases = []
    vectors = embedder.embed([text for text, _ in pairs])
    for (text, gold), vector in zip(pairs, vectors, strict=True):
        # exact: the levers' effect, not the ANN index's (the bench folder holds both sets, over its threshold)
        case = Case(text, gold, store.vector_search(vector, DEEPEST, match, exact=True))
        for boost in BOOSTS:
            case.keyword[boost] = keyword_search(store, text, DEEPEST, match, section_boost=boost)
        w = DEFAULT_RANKING.vector_weight
        first = {"vector": (w, case.vector[:MIN_PREFETCH]), "keyword": (1 - w, case.keyword[0.0][:MIN_PREFETCH])}
        for passages, words in FEEDBACK:
            ranking = replace(DEFAULT_RANKING, feedback_weight=0.5, feedback_passages=passages, feedback_terms=words)
            lists = with_feedback(store, text, first, MIN_PREFETCH, match, ranking)
            case.feedback[passages, words] = lists["feedback"][1] if "feedback" in lists else []
        top = fuse_lists(first, max(p for p, _ in DENSE_FEEDBACK), DEFAULT_RANKING)
        found = store.vectors(Chunk, [h.chunk_id for h in top])
        for passages, beta in DENSE_FEEDBACK:
            moved = vector + beta * np.mean([np.asarray(found[h.chunk_id]) for h in top[:passages]], axis=0)
            case.dense[passages, beta] = store.vector_search(moved / np.linalg.norm(moved), DEEPEST, match, exact=True)
        cases.append(case)
    return cases


def add_plain_vectors(store: Store, embedder: Embedder, source_id: str, cases: list[Case], cache: Path) -> None:
    """Vector lists over embeddings of each chunk's text alone (the 'context off' arm), brute force."""
    rows = store.find(Chunk, {"source_id": source_id}, fields=["doc_id", "source_id", "key", "text"])
    rows.sort(key=lambda r: r.chunk_id)
    path = cache / f"plain-vectors-{source_id}-{len(rows)}.npy"
    if path.is_file():
        matrix = np.load(path)
    else:
        started = time.perf_counter()
        matrix = np.asarray(embedder.embed([r.text for r in rows]), dtype=np.float32)
        np.save(path, matrix)
        print(f"  embedded {len(rows)} chunk texts without context ({time.perf_counter() - started:.0f}s)")
    queries = np.asarray(embedder.embed([c.text for c in cases]), dtype=np.float32)
    for case, q in zip(cases, queries, strict=True):
        sims = matrix @ q
        top = np.argsort(-sims)[:DEEPEST]
        case.vector_plain = [Hit(rows[i], similarity=float(sims[i])) for i in top]


def _lists(case: Case, config: Config, mode: str) -> Lists:
    ranking = config.ranking
    if config.dense is not None:
        vector = case.dense[config.dense]
    else:
        vector = case.vector if config.context else case.vector_plain
        assert vector is not None, "context off needs add_plain_vectors"
    depth = ranking.candidates
    vector, keyword = vector[:depth], case.keyword[ranking.section_boost][:depth]
    if mode == "vector":
        return {"vector": (1.0, vector)}
    if mode == "keyword":
        return {"keyword": (1.0, keyword)}
    w_vector = query_vector_weight(case.text, ranking)
    if config.confidence and len(vector) >= 10:
        spread = vector[0].similarity - vector[9].similarity
        w_vector = min(0.9, max(0.1, w_vector + config.confidence * (spread - SPREAD_MEDIAN)))
    lists = {"vector": (w_vector, vector), "keyword": (1.0 - w_vector, keyword)}
    expanded = case.feedback.get((ranking.feedback_passages, ranking.feedback_terms))
    if ranking.feedback_weight > 0 and expanded:
        share, w_keyword = ranking.feedback_weight, 1.0 - w_vector
        lists.update(keyword=((1 - share) * w_keyword, keyword), feedback=(share * w_keyword, expanded))
    return lists


def rank(case: Case, config: Config, mode: str = "hybrid") -> tuple[list[str], list[str]]:
    """(files in ranked order, files of the five hits served) for one query."""
    lists = _lists(case, config, mode)
    fused = fuse_lists(lists, 4 * config.ranking.candidates, config.ranking)
    files = list(dict.fromkeys(h.chunk.key for h in by_document(fused, len(fused), config.ranking, lists)))
    served = by_document(fused, 5, config.ranking, lists) if config.documents else fused[:5]
    return files, [h.chunk.key for h in served]


def evaluate(data: Dataset, config: Config) -> dict[str, float]:
    totals: dict[str, float] = dict.fromkeys([*data.metrics, "served@5", "below"], 0.0)
    primary = data.metrics[data.metric]
    for case in data.cases:
        files, served = rank(case, config)
        for name, fn in data.metrics.items():
            totals[name] += fn(files, case.gold)
        totals["served@5"] += bool(set(served) & case.gold)
        parts = max(primary(rank(case, config, mode)[0], case.gold) for mode in ("vector", "keyword"))
        totals["below"] += primary(files, case.gold) < parts - 1e-9
    return {name: value / len(data.cases) for name, value in totals.items()}


TITLE_BOOST = 1.0  # the title/heading field's weight when the ablation turns it on (the default leaves it off)


def levers(best: Ranking = DEFAULT_RANKING) -> list[tuple[str, Config]]:
    """The old ranking, each lever alone on it, the previous default and each newer lever alone on it,
    the new default, and the default less or plus each lever."""
    fusion = {"fusion": best.fusion, "vector_weight": best.vector_weight}
    prev = PREVIOUS
    return [
        ("old default (plain RRF)", Config(OLD)),
        ("old + fusion (min-max)", Config(replace(OLD, **fusion, normalise="minmax"))),
        ("old + fusion (floor)", Config(replace(OLD, **fusion, normalise=best.normalise))),
        ("old + documents", Config(replace(OLD, document_share=best.document_share), documents=True)),
        ("old + title field", Config(replace(OLD, section_boost=TITLE_BOOST))),
        ("old, context off", Config(OLD, context=False)),
        *((f"old + depth {d}", Config(replace(OLD, candidates=d))) for d in DEPTHS),
        ("previous default", Config(prev, documents=True)),
        *((f"prev + depth {d}", Config(replace(prev, candidates=d), documents=True)) for d in DEPTHS),
        *(
            (f"prev + {n}{f' {f}' if n == 'floor' else ''}", Config(replace(prev, normalise=n, vector_floor=f), True))
            for n, f in NORMALISE
        ),
        ("prev + document fusion", Config(replace(prev, document_fusion=True), documents=True)),
        ("prev, context off", Config(prev, documents=True, context=False)),
        ("new default", Config(best, documents=True)),
        ("new - floor (min-max)", Config(replace(best, normalise="minmax"), documents=True)),
        ("new - document fusion", Config(replace(best, document_fusion=False), documents=True)),
        ("new - fusion", Config(replace(best, fusion=OLD.fusion, vector_weight=OLD.vector_weight), documents=True)),
        ("new - documents", Config(replace(best, document_share=0.0))),
        ("new + title field", Config(replace(best, section_boost=TITLE_BOOST), documents=True)),
        ("new, context off", Config(best, documents=True, context=False)),
        ("new, spread 1.0 for the floor", Config(replace(best, normalise="spread", vector_spread=1.0), True)),
        *((f"new + depth {d}", Config(replace(best, candidates=d), documents=True)) for d in DEPTHS),
        *(
            (f"new + feedback {p}p {n}w {w}", Config(feedback(best, w, p, n), documents=True))
            for p, n in FEEDBACK
            for w in FEEDBACK_WEIGHTS
        ),
        ("old + feedback 3p 10w 0.3", Config(feedback(OLD, 0.3, 3, 10))),
        *((f"new + dense feedback {p}p b{b}", Config(best, documents=True, dense=(p, b))) for p, b in DENSE_FEEDBACK),
        *(
            (f"new + short<={n} at {w}", Config(replace(best, short_query_words=n, short_query_weight=w), True))
            for n, w in SHORT
        ),
        *((f"new + confidence b{b}", Config(best, documents=True, confidence=b)) for b in CONFIDENCE),
    ]


def feedback(ranking: Ranking, weight: float, passages: int, words: int) -> Ranking:
    return replace(ranking, feedback_weight=weight, feedback_passages=passages, feedback_terms=words)


def table(datasets: list[Dataset], rows: list[tuple[str, Config]]) -> None:
    for data in datasets:
        names = [*data.metrics, "served@5", "below"]
        print(f"\n  {data.name}: {len(data.cases)} dev queries")
        short = {
            n: sum(
                query_vector_weight(c.text, Ranking(short_query_words=n)) != Ranking().vector_weight for c in data.cases
            )
            for n, _ in SHORT
        }
        print(
            "  short queries (content words at most N: how many): " + ", ".join(f"{n}: {k}" for n, k in short.items())
        )
        print(f"  {'configuration':<30}" + "".join(f"{n:>10}" for n in names))
        for label, config in rows:
            if not config.context and data.cases[0].vector_plain is None:
                continue
            scores = evaluate(data, config)
            print(f"  {label:<30}" + "".join(f"{scores[n]:>10.3f}" for n in names), flush=True)


def grid(datasets: list[Dataset]) -> None:
    """Every fusion x weight x title boost x document share, each data set's figures side by side."""
    print("\n  grid (documents served once each):")
    header = "  fusion  w_vec  boost  share" + "".join(
        f"{d.name[:8] + ' ' + n:>22}" for d in datasets for n in [*d.metrics, "served@5", "below"]
    )
    print(header)
    for fusion in ("rrf", "convex"):
        for w in WEIGHTS:
            for boost in BOOSTS:
                for share in SHARES:
                    config = Config(Ranking(fusion, w, boost, share), documents=True)
                    cells = []
                    for d in datasets:
                        scores = evaluate(d, config)
                        cells += [scores[n] for n in [*d.metrics, "served@5", "below"]]
                    print(f"  {fusion:<7} {w:>5} {boost:>6} {share:>6}" + "".join(f"{c:>22.3f}" for c in cells))


def latency(store: Store, embedder: Embedder, source_id: str, queries: list[str], rounds: int = 2) -> None:
    """ms per `hybrid_search` call, old ranking against the default one, interleaved per query."""
    match = {"source_id": source_id}
    runs = {
        "old default": lambda q: hybrid_search(store, embedder, q, 5, match=match, ranking=OLD),
        "previous default, files": lambda q: hybrid_search(
            store, embedder, q, 5, match=match, documents=True, ranking=PREVIOUS
        ),
        "new default, files": lambda q: hybrid_search(store, embedder, q, 5, match=match, documents=True),
        "new default, chunks": lambda q: hybrid_search(store, embedder, q, 5, match=match),
        "new + depth 100, files": lambda q: hybrid_search(
            store, embedder, q, 5, match=match, documents=True, ranking=replace(DEFAULT_RANKING, candidates=100)
        ),
        "new + feedback, files": lambda q: hybrid_search(
            store, embedder, q, 5, match=match, documents=True, ranking=feedback(DEFAULT_RANKING, 0.3, 3, 10)
        ),
        "new + short<=7 at 0.3, files": lambda q: hybrid_search(
            store,
            embedder,
            q,
            5,
            match=match,
            documents=True,
            ranking=replace(DEFAULT_RANKING, short_query_words=7, short_query_weight=0.3),
        ),
    }
    for run in runs.values():  # warm: model, tables, indexes
        run(queries[0])
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for q in queries:
            for name, run in runs.items():
                started = time.perf_counter()
                run(q)
                times[name].append(time.perf_counter() - started)
    base = median(times["old default"])
    print(f"\n  latency, hybrid_search on {len(queries)} handbook queries x {rounds} (median ms/query):")
    for name, values in times.items():
        print(f"  {name:<30} {1000 * median(values):7.1f} ms   x{median(values) / base:.2f}")


LEVER_WEIGHTS = (0.3, 0.4, 0.5)
LEVER_NORMALISE = (("minmax", 0.0), ("dbsf", 0.0), ("floor", 0.0), ("floor", 0.1), ("floor", 0.2), ("floor", 0.3))


def lever_grid(datasets: list[Dataset], best: Ranking = DEFAULT_RANKING) -> None:
    """The convex fusion's levers together: normalisation x depth x document fusion x vector weight,
    documents served once each, every data set's figures side by side."""
    print("\n  lever grid (convex fusion, documents served once each):")
    names = [f"{d.name[:8]} {n}" for d in datasets for n in [*d.metrics, "served@5", "below"]]
    print(
        f"  {'normalise':<10} {'floor':>5} {'depth':>5} {'docfu':>5} {'w_vec':>5}" + "".join(f"{n:>19}" for n in names)
    )
    settings = product(LEVER_NORMALISE, (MIN_PREFETCH, *DEPTHS), (False, True), LEVER_WEIGHTS)
    for (normalise, floor), depth, document_fusion, w in settings:
        chosen = {"normalise": normalise, "vector_floor": floor, "candidates": depth, "vector_weight": w}
        ranking = replace(best, document_fusion=document_fusion, **chosen)
        cells = []
        for d in datasets:
            scores = evaluate(d, Config(ranking, documents=True))
            cells += [scores[n] for n in [*d.metrics, "served@5", "below"]]
        row = f"  {normalise:<10} {floor:>5} {depth:>5} {document_fusion!s:>5} {w:>5}"
        print(row + "".join(f"{c:>19.3f}" for c in cells), flush=True)
