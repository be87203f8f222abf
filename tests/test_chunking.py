"""Chunks stay inside what the model reads, split between words, keep code whole, overlap."""

from __future__ import annotations

import pytest

from thoth.config import Settings
from thoth.embed import get_tokenizer
from thoth.writes.chunking import Chunker
from thoth.writes.parsers import Block, Section


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(Settings.from_env({}))


def words_of(text: str) -> set[str]:
    return set(text.split())


def test_every_chunk_fits_the_model_and_breaks_between_words(tok) -> None:
    text = " ".join(f"Sentence {i} explains unbelievably-long-hyphenated concepts about item{i}." for i in range(200))
    giant = " ".join(["antidisestablishmentarianism"] * 400)  # one sentence far longer than a chunk
    parts = [Section("section", [Block(text), Block(giant)], ["Guide", "Details"])]
    chunks = Chunker(tok, max_tokens=120, overlap_tokens=20).chunk("Guide", parts)
    vocabulary = words_of(text) | words_of(giant)
    for chunk in chunks:
        assert tok.count([chunk.embed_text])[0] <= 120
        assert words_of(chunk.text) <= vocabulary  # no word was cut in two
    assert chunks[0].context == "Guide > Details"


def test_consecutive_chunks_overlap(tok) -> None:
    text = " ".join(f"Fact number {i} is here." for i in range(60))
    chunks = Chunker(tok, max_tokens=60, overlap_tokens=16).chunk("T", [Section("section", [Block(text)])])
    assert len(chunks) > 3
    for first, second in zip(chunks, chunks[1:], strict=False):
        last_sentence = first.text.rsplit(". ", 1)[-1]
        assert last_sentence.rstrip(".") in second.text  # the next chunk starts with the previous one's tail


def test_code_blocks_are_whole_chunks_with_their_language(tok) -> None:
    code = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))"
    parts = [Section("section", [Block("Intro text."), Block(code, "code", "python"), Block("Outro.")], ["H"])]
    chunks = Chunker(tok, max_tokens=200, overlap_tokens=32).chunk("Doc", parts)
    assert [(c.content_type, c.text) for c in chunks] == [
        ("text", "Intro text."),
        ("code", code),
        ("text", "Outro."),
    ]
    assert chunks[1].language == "python"


def test_long_code_is_split_on_lines(tok) -> None:
    code = "\n".join(f"value_{i} = compute({i})" for i in range(200))
    chunks = Chunker(tok, max_tokens=100, overlap_tokens=0).chunk("D", [Section("s", [Block(code, "code", "py")])])
    assert len(chunks) > 1
    assert all(tok.count([c.embed_text])[0] <= 100 for c in chunks)
    assert "\n".join(c.text for c in chunks) == code  # nothing lost, lines intact


def test_pages_are_carried(tok) -> None:
    parts = [
        Section("page", [Block("Page one text.")], page_start=1, page_end=1),
        Section("page", [Block("Page two text.")], page_start=2, page_end=2),
    ]
    chunks = Chunker(tok).chunk("Report", parts)
    assert [(c.page_start, c.text) for c in chunks] == [(1, "Page one text."), (2, "Page two text.")]


def test_chunk_size_cannot_exceed_the_model(tok) -> None:
    with pytest.raises(ValueError, match="exceeds"):
        Chunker(tok, max_tokens=400)
