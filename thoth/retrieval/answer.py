"""Answers with numbered citations: extractive by default, generated when an LLM is configured.

Both start from the same retrieval (collapsed or traversal, which bring several pages into the top
k) and keep only passages whose cosine similarity to the question reaches
`settings.answer_min_similarity`; with none left the answer says that nothing relevant was found
instead of guessing. The extractive answer is composed from several pages: for each page among the
passages, in order of relevance, the sentence closest to the question, each followed by its
citation number (up to MAX_PAGES pages). A summary node's citation names the pages it covers. The
generated answer asks the LLM to answer from the numbered passages only and to cite each it uses.
"""

from __future__ import annotations

import numpy as np

from thoth.config import Settings
from thoth.embed import Embedder
from thoth.llm import get_llm
from thoth.retrieval.summarise import content_words, split_sentences
from thoth.retrieval.tree import retrieve
from thoth.store import Store

MAX_PAGES = 8  # pages an extractive answer quotes, one sentence each (bench.quality broad: 6 dropped cited pages)
PER_PASSAGE = 4  # sentences of a passage embedded to choose from: those sharing most words with the question
MAX_CANDIDATES = 48  # sentences embedded in all (embedding them is most of an extractive answer's time)

ANSWER_SYSTEM = (
    "You answer questions using only the numbered passages given. Cite the passages you use with their "
    "numbers in square brackets, like [1] or [2][3]. When the passages come from several pages, use what "
    "each page says and cite each. If the passages do not contain the answer, say that they do not; never "
    "invent facts."
)


def _citation(number: int, hit: dict) -> dict:
    return {
        "number": number,
        "node_id": hit["node_id"],
        "level": hit["level"],
        "chunk_id": hit.get("chunk_id"),
        "doc_id": hit.get("doc_id"),
        "source": hit.get("key"),
        "pages": [hit["key"]] if hit.get("key") else list(hit.get("pages") or []),
        "section": hit.get("section"),
        "source_ref": hit.get("source_ref"),
        "similarity": round(float(hit.get("similarity") or 0.0), 4),
        "text": hit["text"],
    }


def _candidates(query: str, citations: list[dict]) -> list[tuple[int, str, str]]:
    """(citation number, page, sentence): each passage's PER_PASSAGE sentences sharing most content words
    with the question (in passage order on ties), passages in citation order, at most MAX_CANDIDATES."""
    words = content_words(query)
    out: list[tuple[int, str, str]] = []
    for c in citations:
        sentences = [s for s in split_sentences(c["text"]) if len(s.split()) >= 3]
        order = sorted(range(len(sentences)), key=lambda i: (-len(words & content_words(sentences[i])), i))
        out += [(c["number"], (c["pages"] or [""])[0], sentences[i]) for i in sorted(order[:PER_PASSAGE])]
    return out[:MAX_CANDIDATES]


def _extractive(embedder: Embedder, query: str, citations: list[dict], min_similarity: float) -> str:
    """One sentence per page, the one closest to the question, for the pages most relevant first."""
    candidates = _candidates(query, citations)
    if not candidates:
        return " ".join(f"{c['text']} [{c['number']}]" for c in citations[:1])
    vectors = embedder.embed([query] + [s for _, _, s in candidates])
    scores = vectors[1:] @ vectors[0]
    chosen: list[int] = []
    pages: set[str] = set()
    for i in (int(i) for i in np.argsort(-scores, kind="stable")):
        if candidates[i][1] in pages or (chosen and scores[i] < min_similarity):
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
    dataset_id: str,
    query: str,
    *,
    mode: str = "collapsed",
    top_k: int = 5,
    temperature: float = 0.7,
) -> dict:
    """{answer, answer_type: extractive|generated|no_context, model, mode, citations}."""
    hits = retrieve(store, embedder, dataset_id, query, mode=mode, top_k=top_k)
    relevant = [h for h in hits if (h.get("similarity") or 0.0) >= settings.answer_min_similarity]
    citations = [_citation(n, hit) for n, hit in enumerate(relevant, start=1)]
    result = {"query": query, "dataset_id": dataset_id, "mode": mode, "citations": citations, "model": None}
    if not citations:
        best = max((h.get("similarity") or 0.0 for h in hits), default=0.0)
        return {
            **result,
            "answer_type": "no_context",
            "answer": (
                f"No passage in dataset {dataset_id!r} is relevant enough to answer this question "
                f"(best similarity {best:.2f}, threshold {settings.answer_min_similarity:.2f}), so there is no answer."
            ),
        }
    llm = get_llm(settings)
    if llm is None:
        text = _extractive(embedder, query, citations, settings.answer_min_similarity)
        return {**result, "answer_type": "extractive", "answer": text}
    context = "\n\n".join(f"[{c['number']}] {c['text']}" for c in citations)
    prompt = f"Passages:\n\n{context}\n\nQuestion: {query}\n\nAnswer, citing the passages by number:"
    text = llm.complete(prompt, system=ANSWER_SYSTEM, temperature=temperature, max_tokens=512)
    return {**result, "answer_type": "generated", "model": llm.name, "answer": text}
