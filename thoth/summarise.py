"""Summarise a group of passages: extractive by default (docs/raptor.md, "Summarisers"), an LLM when
configured, either within a budget of the embedder's own word pieces. Every summariser has a `name`,
recorded with what it wrote."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Protocol

from thoth.config import Settings
from thoth.embed import Tokenizer
from thoth.llm import LLM, get_llm

EXTRACTIVE = "extractive-v1"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*[a-z0-9]|[a-z0-9]")
_STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only
    or other our ours out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while who whom why will
    with would you your yours""".split()
)


class Summariser(Protocol):
    name: str

    def summarise(self, texts: list[str]) -> str:
        """One summary of `texts`, within the summariser's length budget."""
        ...


_LINE_START = re.compile(r"^\s*([-*+>|#]|\d+[.)]\s|```)")


def _units(text: str) -> list[str]:
    """Paragraphs with hard-wrapped lines rejoined; list items, table rows and headings on their own."""
    units: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or _LINE_START.match(line):
            if current:
                units.append(" ".join(current))
            current = [line.strip()] if line.strip() else []
            continue
        current.append(line.strip())
    if current:
        units.append(" ".join(current))
    return units


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: paragraphs, list items and rows first, then sentence ends within them."""
    out: list[str] = []
    for unit in _units(text):
        unit = " ".join(unit.split())
        out.extend(s.strip() for s in _SENTENCE_END.split(unit) if s.strip())
    return out


def content_words(text: str) -> set[str]:
    words = _WORD.findall(text.lower())
    return {w[:-1] if len(w) > 4 and w.endswith("s") else w for w in words if len(w) > 2 and w not in _STOP}


def _is_prose(sentence: str) -> bool:
    """A sentence worth quoting: a few words, mostly letters, not a table row or a code fence."""
    if sentence.startswith(("|", "```", "---")) or len(sentence.split()) < 5:
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in sentence)
    return letters >= 0.75 * len(sentence) and len(content_words(sentence)) >= 3


def fit_to_budget(tokenizer: Tokenizer, text: str, budget: int) -> str:
    """`text` cut between words so it has at most `budget` word pieces."""
    spans = tokenizer.word_spans(text)
    used, end = 0, 0
    for _, stop, count in spans:
        if used + count > budget:
            break
        used += count
        end = stop
    return text[:end].rstrip()


class ExtractiveSummariser:
    """Greedy coverage of the group's content words by whole sentences, within `budget` word pieces."""

    name = EXTRACTIVE

    def __init__(self, tokenizer: Tokenizer, budget: int = 200):
        self.tok = tokenizer
        self.budget = budget

    def select(self, texts: list[str]) -> list[tuple[int, int, str]]:
        """The chosen sentences as (passage index, sentence index, sentence), in reading order."""
        seen: set[str] = set()
        sentences: list[tuple[int, int, str]] = []
        for ti, text in enumerate(texts):
            for si, sentence in enumerate(split_sentences(text)):
                key = sentence.lower()
                if key not in seen:  # overlapping chunks repeat sentences
                    seen.add(key)
                    sentences.append((ti, si, sentence))
        if not sentences:
            return []
        prose = [item for item in sentences if _is_prose(item[2])]
        sentences = prose or sentences  # table rows, code lines and fragments only when there is nothing else
        weight = Counter(word for text in texts for word in content_words(text))  # passages each word is in
        words = [content_words(s) for _, _, s in sentences]
        costs = self.tok.count([s for _, _, s in sentences])
        covered: set[str] = set()
        chosen: list[int] = []
        used = 0
        remaining = set(range(len(sentences)))
        while remaining:
            best, best_gain = -1, 0.0
            for i in sorted(remaining):
                if used + costs[i] > self.budget:
                    continue
                gain = sum(weight[w] for w in words[i] - covered) / math.sqrt(costs[i] + 1)
                if gain > best_gain:
                    best, best_gain = i, gain
            if best < 0:
                break
            chosen.append(best)
            covered |= words[best]
            used += costs[best]
            remaining.discard(best)
        if not chosen:  # every sentence is longer than the budget: the first one, cut between words
            ti, si, sentence = sentences[0]
            return [(ti, si, fit_to_budget(self.tok, sentence, self.budget))]
        return [sentences[i] for i in sorted(chosen)]

    def summarise(self, texts: list[str]) -> str:
        summary = " ".join(s for _, _, s in self.select(texts))
        # word pieces of the joined text equal the sum of its sentences', but check: never over budget
        if self.tok.count([summary])[0] > self.budget:
            summary = fit_to_budget(self.tok, summary, self.budget)
        return summary


SUMMARY_PROMPT = "Write a summary of the following, including as many key details as possible:\n\n{context}"


class LLMSummariser:
    """An LLM writes the summary (RAPTOR's prompt); the result is trimmed to the same word-piece budget."""

    def __init__(self, llm: LLM, tokenizer: Tokenizer, budget: int = 200):
        self.llm = llm
        self.tok = tokenizer
        self.budget = budget
        self.name = f"llm:{llm.name}"

    def summarise(self, texts: list[str]) -> str:
        prompt = SUMMARY_PROMPT.format(context="\n\n".join(texts))
        summary = " ".join(self.llm.complete(prompt, temperature=0.0, max_tokens=self.budget * 2).split())
        if self.tok.count([summary])[0] <= self.budget:
            return summary
        kept: list[str] = []  # whole sentences while they fit, else a cut between words
        for sentence in split_sentences(summary):
            if self.tok.count([" ".join([*kept, sentence])])[0] > self.budget:
                break
            kept.append(sentence)
        return " ".join(kept) if kept else fit_to_budget(self.tok, summary, self.budget)


def tree_summariser(settings: Settings, tokenizer: Tokenizer) -> Summariser:
    """The summariser that writes tree nodes (THOTH_TREES)."""
    budget = min(settings.tree_summary_tokens, tokenizer.max_tokens)
    llm = get_llm(settings) if settings.tree_summariser == "llm" else None
    return LLMSummariser(llm, tokenizer, budget) if llm else ExtractiveSummariser(tokenizer, budget)


def on_demand_summariser(settings: Settings, tokenizer: Tokenizer) -> Summariser:
    """The summariser for rag_summarize: the LLM when one is configured, else extractive."""
    budget = min(settings.tree_summary_tokens, tokenizer.max_tokens)
    llm = get_llm(settings)
    return LLMSummariser(llm, tokenizer, budget) if llm else ExtractiveSummariser(tokenizer, budget)
