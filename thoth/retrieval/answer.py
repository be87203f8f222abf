"""Answers with numbered citations: extractive by default, generated when an LLM is configured.

Both keep only the retrieved passages whose cosine similarity to the question reaches `MIN_SIMILARITY`;
with none left the answer says nothing relevant was found instead of guessing. The extractive answer
takes, for each page among the passages in order of relevance, the sentence closest to the question (up
to MAX_PAGES pages); the generated one asks the LLM to answer from the numbered passages only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from thoth.config import Settings
from thoth.embed import Embedder
from thoth.llm import get_llm
from thoth.records import TreeNode
from thoth.retrieval.tree import NodeHit, retrieve
from thoth.store import Store
from thoth.summarise import content_words, split_sentences

# Below this cosine similarity to the question a passage is off topic for the bundled model: an answer
# composed from such passages would be a guess, so the answer says nothing relevant was found instead.
MIN_SIMILARITY = 0.3
MAX_PAGES = 8  # pages an extractive answer quotes, one sentence each (bench.quality broad: 6 dropped cited pages)
PER_PASSAGE = 4  # sentences of a passage embedded to choose from: those sharing most words with the question
MAX_CANDIDATES = 48  # sentences embedded in all (embedding them is most of an extractive answer's time)

ANSWER_SYSTEM = (
    "You answer questions using only the numbered passages given. Cite the passages you use with their "
    "numbers in square brackets, like [1] or [2][3]. When the passages come from several pages, use what "
    "each page says and cite each. If the passages do not contain the answer, say that they do not; never "
    "invent facts."
)


@dataclass(frozen=True)
class Citation:
    """A passage an answer cites as [number]: a chunk, or a summary node naming the pages it covers."""

    number: int
    node: TreeNode
    pages: tuple[str, ...]  # a chunk's page, or the pages a summary covers
    similarity: float  # cosine of the question and the passage, rounded

    @property
    def text(self) -> str:
        return self.node.text


@dataclass(frozen=True)
class Answer:
    """An answer with its citations; `answer_type` is extractive, generated or no_context."""

    query: str
    source_id: str
    mode: str
    answer: str
    answer_type: str
    model: str | None  # the LLM that wrote a generated answer
    citations: tuple[Citation, ...]


def _citation(number: int, hit: NodeHit) -> Citation:
    pages = (hit.key,) if hit.key else hit.pages
    return Citation(number=number, node=hit.node, pages=pages, similarity=round(float(hit.similarity or 0.0), 4))


def _candidates(query: str, citations: list[Citation]) -> list[tuple[int, str, str]]:
    """(citation number, page, sentence): each passage's PER_PASSAGE sentences sharing most content words
    with the question (in passage order on ties), passages in citation order, at most MAX_CANDIDATES."""
    words = content_words(query)
    out: list[tuple[int, str, str]] = []
    for c in citations:
        sentences = [s for s in split_sentences(c.text) if len(s.split()) >= 3]
        order = sorted(range(len(sentences)), key=lambda i: (-len(words & content_words(sentences[i])), i))
        out += [(c.number, (c.pages or ("",))[0], sentences[i]) for i in sorted(order[:PER_PASSAGE])]
    return out[:MAX_CANDIDATES]


def _extractive(embedder: Embedder, query: str, citations: list[Citation]) -> str:
    """One sentence per page, the one closest to the question, for the pages most relevant first."""
    candidates = _candidates(query, citations)
    if not candidates:
        return " ".join(f"{c.text} [{c.number}]" for c in citations[:1])
    # the question is a query, its candidate sentences are what it searches
    scores = embedder.embed_documents([s for _, _, s in candidates]) @ embedder.embed_queries([query])[0]
    chosen: list[int] = []
    pages: set[str] = set()
    for i in (int(i) for i in np.argsort(-scores, kind="stable")):
        if candidates[i][1] in pages or (chosen and scores[i] < MIN_SIMILARITY):
            continue
        pages.add(candidates[i][1])
        chosen.append(i)
        if len(chosen) == MAX_PAGES:
            break
    return " ".join(f"{candidates[i][2]} [{candidates[i][0]}]" for i in chosen)


def answer_question(
    store: Store,
    embedder: Embedder,
    settings: Settings,
    source_id: str,
    query: str,
    *,
    mode: str = "collapsed",
    top_k: int = 5,
    temperature: float = 0.7,
) -> Answer:
    """The answer to `query` from a source's passages (extractive, generated, or no_context), with citations."""
    hits = retrieve(store, embedder, source_id, query, mode=mode, top_k=top_k)
    relevant = [h for h in hits if (h.similarity or 0.0) >= MIN_SIMILARITY]
    citations = tuple(_citation(n, hit) for n, hit in enumerate(relevant, start=1))

    def answer(text: str, answer_type: str, model: str | None = None) -> Answer:
        return Answer(query, source_id, mode, text, answer_type, model, citations)

    if not citations:
        best = max((h.similarity or 0.0 for h in hits), default=0.0)
        return answer(
            f"No passage in dataset {source_id!r} is relevant enough to answer this question "
            f"(best similarity {best:.2f}, threshold {MIN_SIMILARITY:.2f}), so there is no answer.",
            "no_context",
        )
    llm = get_llm(settings)
    if llm is None:
        return answer(_extractive(embedder, query, list(citations)), "extractive")
    context = "\n\n".join(f"[{c.number}] {c.text}" for c in citations)
    prompt = f"Passages:\n\n{context}\n\nQuestion: {query}\n\nAnswer, citing the passages by number:"
    text = llm.complete(prompt, system=ANSWER_SYSTEM, temperature=temperature, max_tokens=512)
    return answer(text, "generated", llm.name)
