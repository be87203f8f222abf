"""Retrieval quality per mode — keyword, vector, hybrid, collapsed tree — on the shared dev splits.

    python -m bench.quality [--data ../shared/data] [--db .thoth/bench] [--only scifact|handbook|broad]
                            [--scifact-limit N] [--limit-queries N] [--modes keyword,vector,...]

THOTH_EMBED_PROVIDER=local-int8 measures the int8 ONNX model (in an index of its own); THOTH_TREES=off with
`--modes keyword,vector,hybrid` skips the trees when only the flat modes are wanted.

Any embedder and reranker (docs/models.md) is measured with the same tables: the THOTH_EMBED_* and
THOTH_RERANK_* settings, or these options, which override them: `--embed-provider`, `--embed-model`,
`--embed-url`, `--embed-query-prompt`, `--embed-document-prompt` (each model and prompt pair gets an index
of its own under --db) and `--rerank-provider`, `--rerank-url`, `--rerank-model`, `--rerank-top-n`,
`--rerank-timeout` (the reranker reorders `hybrid`'s first hits; the other modes do not use it).
`--cosine-floor 0.2|measured|minmax` sets how `hybrid` scales cosines (docs/models.md).

- SciFact (BEIR format, dev queries): nDCG@10 and recall@10 of the relevant abstracts. Each abstract
  is ingested as a Markdown file (`# title` + text) through the normal pipeline, so long abstracts
  are chunked; an abstract's rank is that of its best chunk.
- handbook (questions.dev.jsonl with gold files): recall@5 of the gold files and MRR@5 of the first
  gold file; `context` + question is the query where a question has context.

- broad questions (bench/data/broad_questions.jsonl, written for Thoth over the handbook pages:
  each needs 2-5 pages): with 10 results, the share of gold pages named, the share of questions
  with every gold page named, and the distinct pages named per answer, for flat hybrid search
  (`search_handbook`), the same chunks at most two per page without the tree (`flat, per page`),
  `rag_retrieve` collapsed (its default) and traversal (`expand_k` given), and the pages
  `answer_question` cites; `<flat` counts the questions where a mode finds fewer gold pages than
  flat hybrid. A chunk names its page; a summary node names the pages it covers (its `pages`).

Collapsed tree: chunks and RAPTOR summary nodes ranked together (thoth.retrieval.tree.collapsed:
the flat hybrid ranking of the chunks, summaries merged in where they beat a chunk by cosine and by
keyword evidence, never naming a new page before the flat ranking's first five); tree-vector: the
same by cosine alone (compare it with `vector`). A summary node in a list stands for the pages it
names (its `pages` as `rag_retrieve` serves it: up to 3, most of its chunks first).

SciFact and the handbook each have an index of their own (`own_index`: BM25 statistics are per
table); the broad questions use the shared one, with its tree.
The index is built once under --db and reused (ingest is idempotent); the first SciFact run embeds
5,183 abstracts (a few minutes with the default ONNX backend). `--scifact-limit N` keeps every
abstract some dev query needs plus the first N others, for a short run (an easier corpus: say so
when quoting figures). A data set that is absent is skipped, not failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.records import Hit
from thoth.retrieval import rerank, search, tree
from thoth.retrieval.answer import Answer
from thoth.retrieval.search import DEFAULT_RANKING, Ranking, hybrid_search
from thoth.store import Store
from thoth.writes.calibrate import SAMPLE_CHUNKS, measure
from thoth.writes.clustering import TreeParams
from thoth.writes.writer import Writer

DEPTH = 100  # chunks fetched per query before ranking documents
MODES = ("keyword", "vector", "hybrid", "collapsed", "tree-vector")


def _doc_ranking(keys: list[str]) -> list[str]:
    return list(dict.fromkeys(keys))


class Runner:
    """Runs one query in each mode over one source and returns the ranked document keys."""

    cosine_floor = ""  # --cosine-floor: "" (the model's default), a number, "measured" or "minmax"

    def __init__(self, store: Store, settings: Settings, source_id: str):
        self.store = store
        self.embedder = get_embedder(settings)
        self.source_id = source_id
        self.match = {"source_id": source_id}
        self.seconds = dict.fromkeys(MODES, 0.0)
        self.summary_hits = 0
        self.ranking = self._ranking()

    def _ranking(self) -> Ranking | None:
        """The hybrid ranking --cosine-floor asks for (None: the one the index's model gets)."""
        if not self.cosine_floor:
            return None
        if self.cosine_floor == "minmax":
            return dataclasses.replace(DEFAULT_RANKING, normalise="minmax")
        if self.cosine_floor == "measured":
            floor = measure(*self.store.calibration.sample(SAMPLE_CHUNKS))
            print(f"  measured cosine floor: {floor}")
            return dataclasses.replace(DEFAULT_RANKING, vector_floor=floor.floor) if floor else None
        return dataclasses.replace(DEFAULT_RANKING, vector_floor=float(self.cosine_floor))

    def _chunk_keys(self, hits: list[Hit]) -> list[str]:
        return _doc_ranking([h.chunk.key for h in hits])

    def keyword(self, query: str) -> list[str]:
        return self._chunk_keys(hybrid_search(self.store, None, query, DEPTH, alpha=0.0, match=self.match).hits)

    def vector(self, query: str) -> list[str]:
        return self._chunk_keys(
            hybrid_search(self.store, self.embedder, query, DEPTH, alpha=1.0, match=self.match).hits
        )

    def hybrid(self, query: str) -> list[str]:
        hits = hybrid_search(self.store, self.embedder, query, DEPTH, match=self.match, ranking=self.ranking).hits
        return self._chunk_keys(hits)

    def collapsed(self, query: str, alpha: float | None = None) -> list[str]:
        hits = tree.collapsed(self.store, self.embedder, self.source_id, query, DEPTH, alpha=alpha)
        index = tree.tree_index_of(self.store, self.source_id)
        keys: list[str] = []
        for hit in hits:
            if hit.level == 0:
                keys.append(hit.key or "")
                continue
            self.summary_hits += 1
            keys += index.named_pages(hit.node_id) if index else []  # the pages a served summary lists
        return _doc_ranking(keys)

    def tree_vector(self, query: str) -> list[str]:
        """The paper's collapsed tree: chunks and summaries by cosine similarity alone (no BM25)."""
        return self.collapsed(query, alpha=1.0)

    def rank(self, mode: str, query: str) -> list[str]:
        started = time.perf_counter()
        try:
            return getattr(self, mode.replace("-", "_"))(query)
        finally:
            self.seconds[mode] += time.perf_counter() - started


def ndcg_at(ranked: list[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], relevant: set[str], k: int) -> float:
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked[:k]) if doc in relevant), 0.0)


def _ingest(settings: Settings, folder: Path, name: str) -> Store:
    started = time.perf_counter()
    summary = Writer(settings).run(str(folder), name=name)
    print(f"  index: {summary.render()} ({time.perf_counter() - started:.0f}s)", flush=True)
    return Store(settings)


def _evaluate(
    runner: Runner,
    queries: list[tuple[str, set[str]]],
    metrics: list[tuple[str, Callable[[list[str], set[str]], float]]],
    modes: list[str],
) -> None:
    print(f"  {'mode':<10} " + " ".join(f"{name:>10}" for name, _ in metrics) + "   ms/query")
    for mode in modes:
        totals = [0.0] * len(metrics)
        for query, relevant in queries:
            ranked = runner.rank(mode, query)
            for i, (_, fn) in enumerate(metrics):
                totals[i] += fn(ranked, relevant)
        ms = 1000 * runner.seconds[mode] / max(1, len(queries))
        cells = " ".join(f"{t / len(queries):>10.3f}" for t in totals)
        print(f"  {mode:<10} {cells}   {ms:8.0f}", flush=True)
    if runner.summary_hits:
        print(
            f"  tree modes: {runner.summary_hits} summary nodes in their top {DEPTH} lists over {len(queries)} queries"
        )


def own_index(settings: Settings, name: str) -> Settings:
    """Each single-fact data set in an index of its own: BM25's statistics (document frequencies, mean
    length) are the whole table's, so another set in the same table would shift every keyword score."""
    return dataclasses.replace(settings, db_uri=f"{settings.db_uri}-{name}")


def scifact_set(
    data: Path, settings: Settings, cache: Path, limit: int | None, max_queries: int | None
) -> tuple[Store, str, list[tuple[str, set[str]]]] | None:
    """The SciFact index (built or brought up to date) with its source id and (query, relevant files)."""
    root = data / "scifact"
    if not (root / "corpus.jsonl").is_file():
        print(f"SciFact: skipped (no {root / 'corpus.jsonl'})")
        return None
    qrels: dict[str, set[str]] = {}
    for line in (root / "qrels.dev.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(doc)
    queries = [json.loads(line) for line in (root / "queries.dev.jsonl").read_text().splitlines() if line.strip()]
    queries = [q for q in queries if q["_id"] in qrels][:max_queries]
    needed = set().union(*(qrels[q["_id"]] for q in queries))
    folder = cache / ("scifact-docs" if limit is None else f"scifact-docs-{limit}")
    folder.mkdir(parents=True, exist_ok=True)
    kept = 0
    others = 0
    with (root / "corpus.jsonl").open() as corpus:
        for line in corpus:
            doc = json.loads(line)
            if limit is not None and doc["_id"] not in needed:
                if others >= limit:
                    continue
                others += 1
            path = folder / f"{doc['_id']}.md"
            text = f"# {doc['title'].strip()}\n\n{doc['text'].strip()}\n"
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
            kept += 1
    scope = "full corpus" if limit is None else f"{limit} abstracts + the relevant ones"
    print(f"SciFact: {len(queries)} dev queries, {kept} abstracts ({scope})", flush=True)
    source = "scifact" if limit is None else f"scifact-{limit}"
    store = _ingest(own_index(settings, "scifact"), folder, source)
    return store, source, [(q["text"], {f"{d}.md" for d in qrels[q["_id"]]}) for q in queries]


SCIFACT_METRICS = {"nDCG@10": lambda r, g: ndcg_at(r, g, 10), "recall@10": lambda r, g: recall_at(r, g, 10)}
HANDBOOK_METRICS = {"recall@5": lambda r, g: recall_at(r, g, 5), "MRR@5": lambda r, g: mrr_at(r, g, 5)}


def scifact(data: Path, settings: Settings, cache: Path, limit: int | None, max_queries: int | None, modes) -> None:
    found = scifact_set(data, settings, cache, limit, max_queries)
    if found is not None:
        store, source, pairs = found
        _evaluate(Runner(store, store.settings, source), pairs, list(SCIFACT_METRICS.items()), modes)


def handbook_set(
    data: Path, settings: Settings, max_queries: int | None
) -> tuple[Store, str, list[tuple[str, set[str]]]] | None:
    """The handbook index with its source id and (context + question, gold files)."""
    root = data / "handbook"
    if not (root / "questions.dev.jsonl").is_file():
        print(f"handbook: skipped (no {root / 'questions.dev.jsonl'})")
        return None
    questions = [json.loads(line) for line in (root / "questions.dev.jsonl").read_text().splitlines() if line.strip()]
    questions = questions[:max_queries]
    print(f"handbook: {len(questions)} dev questions over {root / 'docs'}", flush=True)
    store = _ingest(own_index(settings, "handbook"), root / "docs", "handbook-bench")
    pairs = [(" ".join(filter(None, [q.get("context"), q["question"]])), set(q["gold_paths"])) for q in questions]
    return store, "handbook-bench", pairs


def handbook(data: Path, settings: Settings, max_queries: int | None, modes) -> None:
    found = handbook_set(data, settings, max_queries)
    if found is not None:
        store, source, pairs = found
        _evaluate(Runner(store, store.settings, source), pairs, list(HANDBOOK_METRICS.items()), modes)


BROAD_QUESTIONS = Path(__file__).parent / "data" / "broad_questions.jsonl"
BROAD_K = 10


def _pages(hits: list[tree.NodeHit]) -> list[str]:
    """The pages a result list names, in order: a chunk its page, a summary node the pages it covers."""
    out: list[str] = []
    for hit in hits:
        out += [hit.key or ""] if hit.level == 0 else list(hit.pages)
    return list(dict.fromkeys(p for p in out if p))


def _cited_pages(answer: Answer) -> list[str]:
    """The pages of the citations the answer's text refers to ([n])."""
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    return list(dict.fromkeys(p for c in answer.citations if c.number in cited for p in c.pages))


def broad(data: Path, settings: Settings, max_queries: int | None) -> None:
    from thoth.retrieval.answer import answer_question

    root = data / "handbook"
    if not (root / "docs").is_dir():
        print(f"broad questions: skipped (no {root / 'docs'})")
        return
    questions = [json.loads(line) for line in BROAD_QUESTIONS.read_text().splitlines() if line.strip()]
    questions = questions[:max_queries]
    print(f"broad questions: {len(questions)} over {root / 'docs'}, {BROAD_K} results each", flush=True)
    store = _ingest(settings, root / "docs", "handbook-bench")
    embedder = get_embedder(settings)
    source = "handbook-bench"
    runs: dict[str, Callable[[str], list[str]]] = {
        "flat hybrid": lambda q: list(
            dict.fromkeys(
                h.chunk.key for h in hybrid_search(store, embedder, q, BROAD_K, match={"source_id": source}).hits
            )
        ),
        # the default without its tree: chunks only, at most PER_PAGE of one page (what the tree adds is the rest)
        "flat, per page": lambda q: _pages(tree.collapsed(store, embedder, source, q, BROAD_K, levels_cap=0)),
        "collapsed": lambda q: _pages(tree.retrieve(store, embedder, source, q, top_k=BROAD_K)),
        "traversal": lambda q: _pages(
            tree.retrieve(store, embedder, source, q, mode="traversal", top_k=BROAD_K, expand_k=3)
        ),
        "answer_question": lambda q: _cited_pages(answer_question(store, embedder, settings, source, q, top_k=BROAD_K)),
    }
    print(f"  {'mode':<16} {'recall':>7} {'all gold':>9} {'pages':>6} {'max':>4} {'<flat':>6}   ms/query")
    baseline: list[float] = []
    for mode, run in runs.items():
        recalls, complete, named, worst, seconds = [], 0, [], 0, 0.0
        for q in questions:
            started = time.perf_counter()
            pages = run(q["question"])
            seconds += time.perf_counter() - started
            gold = set(q["gold_paths"])
            found = len(gold & set(pages))
            recalls.append(found / len(gold))
            complete += found == len(gold)
            named.append(len(pages))
            worst = max(worst, len(pages))
        baseline = baseline or recalls  # the first row, flat hybrid: "<flat" counts questions a mode does worse on
        below = sum(r < b for r, b in zip(recalls, baseline, strict=True))
        print(
            f"  {mode:<16} {np.mean(recalls):>7.3f} {complete / len(questions):>9.0%} {np.mean(named):>6.1f} "
            f"{worst:>4} {below:>6}   {1000 * seconds / len(questions):8.0f}",
            flush=True,
        )


# Options naming a setting (the THOTH_ variable they override is the option's name in capitals)
_OPTIONS = {
    "--embed-provider": "local, sentence-transformers or openai",
    "--embed-model": "the model: a folder, a name, or what the endpoint serves",
    "--embed-url": "the openai provider's base URL",
    "--embed-query-prompt": "put before each query (e.g. 'query: ')",
    "--embed-document-prompt": "put before each passage (e.g. 'passage: ')",
    "--rerank-provider": "none, cohere, tei or cross-encoder",
    "--rerank-url": "the /rerank endpoint's full URL",
    "--rerank-model": "the endpoint's model, or the cross-encoder's folder",
}
# Options setting a module constant (a tuning value no variable sets): (module, constant, type, help)
_TUNING = {
    "--rerank-top-n": ("thoth.retrieval.search", "RERANK_TOP_N", int, "how many fused hits the reranker reorders"),
    "--rerank-timeout": ("thoth.retrieval.rerank", "BUDGET_SECONDS", float, "the reranker's budget per search, in s"),
}


def _environment(args: argparse.Namespace) -> dict[str, str]:
    """The environment with the options' settings over it, so they are read and checked as the server would."""
    env = dict(os.environ)
    for option in _OPTIONS:
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None:
            env["THOTH_" + option[2:].replace("-", "_").upper()] = value
    return env


def _prompted(settings: Settings) -> bool:
    return bool(settings.embed_query_prompt or settings.embed_document_prompt)


def index_name(settings: Settings) -> str:
    """The benchmark index's folder: one per model, int8 weights, prompts and tree reducer."""
    int8 = settings.embed_backend == "onnx" and settings.embed_int8
    provider = "" if settings.embed_provider == "local" else f"{settings.embed_provider}-"
    prompts = settings.embed_query_prompt + "\0" + settings.embed_document_prompt
    tag = "-p" + hashlib.sha256(prompts.encode()).hexdigest()[:8] if _prompted(settings) else ""
    model = settings.embed_model.replace("/", "--")
    return f"db-{provider}{model}{'-int8' if int8 else ''}{tag}-{TreeParams.reducer}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/data", help="folder holding scifact/ and handbook/")
    parser.add_argument("--db", default=".thoth/bench", help="where the benchmark indexes are kept")
    parser.add_argument("--only", choices=("scifact", "handbook", "broad"), help="run one data set")
    parser.add_argument("--scifact-limit", type=int, help="abstracts besides the relevant ones (default: all)")
    parser.add_argument("--limit-queries", type=int, help="first N queries of each data set")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    for option, help_ in _OPTIONS.items():
        parser.add_argument(option, help=help_)
    for option, (_, name, kind, help_) in _TUNING.items():
        parser.add_argument(option, dest=name, type=kind, help=help_)
    parser.add_argument(
        "--cosine-floor",
        default="",
        help="hybrid's cosine scaling: a floor (e.g. 0.2), 'measured' (on the index, as ingest does) or 'minmax'",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(sorted(unknown))}; allowed: {', '.join(MODES)}")

    data = Path(args.data)
    cache = Path(args.db)
    Runner.cosine_floor = args.cosine_floor
    for module, name, _, _ in _TUNING.values():
        if getattr(args, name) is not None:
            setattr(importlib.import_module(module), name, getattr(args, name))
    base = Settings.from_env(_environment(args))
    settings = dataclasses.replace(base, db_uri=str(cache / index_name(base)))  # each model in an index of its own
    int8 = base.embed_backend == "onnx" and base.embed_int8
    where = f" at {base.embed_url}" if base.embed_url else ""
    prompts = f", prompts {base.embed_query_prompt!r} / {base.embed_document_prompt!r}" if _prompted(base) else ""
    print(
        f"model {base.embed_provider}:{base.embed_model}{where} ({base.embed_backend}{' int8' if int8 else ''}"
        f"{prompts}); trees: {TreeParams.reducer}, "
        f"{base.tree_summariser} summaries of {base.tree_summary_tokens} word pieces, "
        f"clusters up to {base.tree_cluster_tokens}"
    )
    if base.rerank_provider != "none":
        print(
            f"reranker {base.rerank_provider} {base.rerank_model or ''} {base.rerank_url} on hybrid's first "
            f"{search.RERANK_TOP_N}, budget {rerank.BUDGET_SECONDS:g} s"
        )
    if args.only in (None, "scifact"):
        scifact(data, settings, cache, args.scifact_limit, args.limit_queries, modes)
    if args.only in (None, "handbook"):
        handbook(data, settings, args.limit_queries, modes)
    if args.only in (None, "broad"):
        broad(data, settings, args.limit_queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
