"""Generated handbook-like text and queries for the benchmarks.

Two kinds (`--text` in bench.search):

- `natural` (the default): real English words drawn by Zipf's law (frequency ~ 1/rank). The words
  and their ranks are the bundled model's whole-word vocabulary (21,719 words, which its word-piece
  training ordered by frequency: "the", "of", "and", ...), with the handbook's domain words placed
  among the common ones. The BM25 analyzer drops the function words as stop words, as in real text,
  and each word is one word piece for the model, as real words mostly are. One word in five comes
  from the passage's topic's own 80 words, so a term's chunks cluster by topic as in real documents.
  A query's words are then in a few percent of the chunks (median 5%, at most ~20%).
- `narrow`: the text of the earlier runs (docs/benchmarks.md before 2026-11-25): every sentence
  holds 9 of the same 40 domain words, so each query word is in ~75% of the chunks: at 1M chunks a
  BM25 search walks posting lists of most rows for every word. A worst case for BM25, kept to compare.

Both are deterministic for a given `random.Random`.
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
from functools import cache

TOPICS = [
    "deployment",
    "time off",
    "on-call",
    "security review",
    "expense reports",
    "hiring",
    "onboarding",
    "incident response",
    "database migration",
    "code review",
    "release notes",
    "performance review",
    "travel policy",
    "laptop setup",
    "access requests",
    "backups",
    "monitoring alerts",
    "customer escalation",
]
WORDS = (
    "team process request approve manager schedule document policy service index search model release "
    "owner ticket budget review access system handbook weekly quarterly incident runbook metric deploy "
    "rollback storage latency queue region contract vendor training mentor goal feedback calendar"
).split()
KINDS = ("natural", "narrow")

DOMAIN_RANK = 200  # where the domain words go among the vocabulary's ranks: common in a handbook
TOPIC_WORDS = 80
TOPIC_SHARE = 0.2


@cache
def _vocabulary() -> tuple[tuple[str, ...], list[float]]:
    """The words by rank and their cumulative Zipf weights (for `random.choices(cum_weights=...)`)."""
    from thoth.embed import BUNDLED_MODEL, resolve_model

    model = resolve_model(BUNDLED_MODEL)
    vocab = json.loads((model.path / "tokenizer.json").read_text())["model"]["vocab"]
    first = vocab["the"]  # before it: padding, [unused] slots, single characters
    by_rank = sorted((w for w, i in vocab.items() if i >= first), key=vocab.__getitem__)
    known = [w for w in by_rank if w.isascii() and w.isalpha() and w not in WORDS]
    words = (*known[:DOMAIN_RANK], *WORDS, *known[DOMAIN_RANK:])
    return words, list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1)))


@cache
def _topic_words(topic: str) -> tuple[tuple[str, ...], list[float]]:
    """The topic's own words (from ranks 300 to 8,000: neither stop words nor rarities), Zipf-weighted."""
    words, _ = _vocabulary()
    rng = random.Random(f"topic:{topic}")
    own = tuple(rng.sample(words[300:8000], TOPIC_WORDS))
    return own, list(itertools.accumulate(1.0 / rank for rank in range(1, TOPIC_WORDS + 1)))


@cache
def _topic_mixture(topic: str) -> tuple[tuple[str, ...], list[float]]:
    """The vocabulary and the topic's own words in one list, weighted so that TOPIC_SHARE of the
    words drawn are the topic's: one `random.choices` call per sentence."""
    words, weights = _vocabulary()
    own, own_weights = _topic_words(topic)
    scale = TOPIC_SHARE / (1 - TOPIC_SHARE) * weights[-1] / own_weights[-1]
    return (*words, *own), [*weights, *(weights[-1] + w * scale for w in own_weights)]


def _natural_words(rng: random.Random, topic: str, count: int) -> list[str]:
    words, weights = _topic_mixture(topic)
    return rng.choices(words, cum_weights=weights, k=count)


def sentence(rng: random.Random, topic: str, kind: str = "natural") -> str:
    if kind == "narrow":
        w = rng.sample(WORDS, 9)
        return f"For {topic}, the {w[0]} {w[1]} must {w[2]} the {w[3]} {w[4]} before {w[5]}."
    words = _natural_words(rng, topic, rng.randint(8, 16))
    if rng.random() < 0.3:  # the topic's own name, as a handbook page repeats it
        words.insert(rng.randrange(len(words)), topic)
    return " ".join(words).capitalize() + rng.choice("....?")


def passage(rng: random.Random, topic: str, sentences: int, kind: str = "natural") -> str:
    return " ".join(sentence(rng, topic, kind) for _ in range(sentences))


def queries(count: int, seed: int = 3, kind: str = "natural") -> list[str]:
    """Questions as an assistant asks them: a topic and two more words. `natural`: one of the topic's
    own words and one content word of the vocabulary's common part (ranks 100 to 5,000), Zipf-weighted."""
    rng = random.Random(seed)
    if kind == "narrow":
        return [f"how do I handle {rng.choice(TOPICS)} {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(count)]
    words, weights = _vocabulary()
    out = []
    for _ in range(count):
        topic = rng.choice(TOPICS)
        own, own_weights = _topic_words(topic)
        topical = own[bisect.bisect(own_weights, rng.random() * own_weights[-1])]
        common = words[bisect.bisect(weights, weights[99] + rng.random() * (weights[4999] - weights[99]))]
        out.append(f"how do I handle {topic} {topical} {common}")
    return out
