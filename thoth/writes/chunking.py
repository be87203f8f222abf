"""Sections (thoth.writes.parsers) -> chunks bounded in the embedder's own word pieces.

The model silently drops what is past its limit, so every chunk's embedded text (heading context and body)
is kept within `max_tokens`: whole paragraphs and sentences, a long sentence cut between words. Code blocks
and tables are chunks of their own; a long table is cut between rows, each piece under its caption and header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thoth.embed import Tokenizer
from thoth.writes.parsers import Block, Section

# Trailing sentences a text chunk repeats from the one before, so a passage cut at a chunk boundary
# is still found whole in one of the two; a chunk keeps at least half its budget for new text.
OVERLAP_TOKENS = 32

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_DELIMITER_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")  # a Markdown table's | --- | row


@dataclass
class Chunk:
    text: str
    context: str  # "Title > Heading > Subheading": embedded with the text, shown as the section
    partition_index: int
    content_type: str = "text"
    language: str = ""
    page_start: int | None = None
    page_end: int | None = None
    figure: str = ""  # a figure's caption: the name of its picture (ParsedDocument.figures)
    boxes: tuple[float, ...] = ()  # PDFs: where its text is printed: (page, left, bottom, right, top) after each other

    @property
    def embed_text(self) -> str:
        return embed_text(self.context, self.text)


def embed_text(context: str | None, text: str) -> str:
    """What a chunk's vector is made from: its heading path, then its text (`--reembed` rebuilds it from
    the stored `section` and `text`)."""
    return f"{context}\n{text}" if context else text


@dataclass
class _Unit:
    text: str
    tokens: int
    block: Block | None = None  # where it was cut from (a PDF block with boxes), and which share of its text
    share: tuple[float, float] = (0.0, 1.0)


def _boxes(units: list[_Unit]) -> tuple[float, ...]:
    """The printed lines of the blocks `units` were cut from, those their share of the text covers, as
    rectangles: a line joins the one before on its page when it sits right under it (one paragraph)."""
    rects: list[list[float]] = []
    for unit in units:
        block = unit.block
        if block is None or not block.boxes:
            continue
        start = 0.0
        for page, left, bottom, right, top, end in block.boxes:
            if end > unit.share[0] + 1e-9 and start < unit.share[1] - 1e-9:
                last = rects[-1] if rects else None
                if any(
                    r[0] == page and r[1] <= left and r[2] <= bottom and r[3] >= right and r[4] >= top for r in rects
                ):
                    pass  # a line an overlap repeats: its rectangle is there
                elif (
                    last is not None
                    and last[0] == page
                    and -0.5 * (top - bottom) <= last[2] - top <= top - bottom
                    and min(last[3], right) > max(last[1], left)
                ):
                    last[1], last[2], last[3] = min(last[1], left), min(last[2], bottom), max(last[3], right)
                else:
                    rects.append([page, left, bottom, right, top])
            start = end
    return tuple(round(v, 1) for rect in rects for v in rect)


class Chunker:
    def __init__(self, tokenizer: Tokenizer, max_tokens: int = 200, overlap_tokens: int = OVERLAP_TOKENS):
        if max_tokens > tokenizer.max_tokens:
            raise ValueError(f"max_tokens {max_tokens} exceeds what the model reads ({tokenizer.max_tokens})")
        self.tok = tokenizer
        self.max_tokens = max_tokens
        self.overlap_tokens = min(overlap_tokens, max_tokens // 2)

    # -- splitting into units that each fit ------------------------------------

    def _word_windows(self, text: str, budget: int) -> list[_Unit]:
        """Cut `text` between words into windows of at most `budget` tokens, overlapping."""
        spans = self.tok.word_spans(text)
        windows: list[_Unit] = []
        start = 0
        while start < len(spans):
            end, used = start, 0
            while end < len(spans) and used + spans[end][2] <= budget:
                used += spans[end][2]
                end += 1
            if end == start:  # a single "word" longer than the budget: cut its word pieces
                windows.extend(self._piece_windows(text[spans[start][0] : spans[start][1]], budget))
                start += 1
                continue
            windows.append(_Unit(text[spans[start][0] : spans[end - 1][1]], used))
            if end >= len(spans):
                break
            back, carried = end, 0  # step back over up to overlap_tokens of words
            while back - 1 > start and carried + spans[back - 1][2] <= self.overlap_tokens:
                back -= 1
                carried += spans[back][2]
            start = back
        return windows

    def _piece_windows(self, word: str, budget: int) -> list[_Unit]:
        # A run with no spaces (a long URL, base64) longer than a chunk: split by characters.
        pieces, size = [], max(1, len(word) * budget // max(1, self.tok.count([word])[0]))
        for i in range(0, len(word), size):
            piece = word[i : i + size]
            pieces.append(_Unit(piece, self.tok.count([piece])[0]))
        return pieces

    def _units(self, block: Block, budget: int) -> list[_Unit]:
        if block.kind == "text":
            parts = [s for s in _SENTENCE_END.split(block.text) if s.strip()]
        else:
            parts = [block.text]
        counts = self.tok.count(parts)
        units: list[_Unit] = []
        for part, count in zip(parts, counts, strict=True):
            if count <= budget:
                units.append(_Unit(part, count))
            elif block.kind == "text":
                units.extend(self._word_windows(part, budget))
            else:  # code or table: split on lines, then pack lines
                units.extend(self._pack_lines(part.split("\n"), budget))
        if block.boxes:  # each unit's share of the block's text: where its lines are printed
            size, at = max(1, len(block.text)), 0
            for unit in units:
                found = block.text.find(unit.text, at) if block.kind == "text" else -1
                start = found if found >= 0 else 0
                end = start + len(unit.text) if found >= 0 else size
                unit.block, unit.share = block, (start / size, end / size)
                at = max(at, start + 1) if found >= 0 else at
        return units

    def _table_units(self, text: str, budget: int) -> list[_Unit]:
        """A table in pieces of whole rows, each under the table's head (caption and header rows, up to
        and including the delimiter row) when the whole does not fit."""
        whole = self.tok.count([text])[0]
        if whole <= budget:
            return [_Unit(text, whole)]
        lines = text.split("\n")
        cut = next((i + 1 for i, line in enumerate(lines) if _DELIMITER_ROW.match(line.strip())), 0)
        head, rows = "\n".join(lines[:cut]), lines[cut:]
        if not head or not rows:
            return self._pack_lines(lines, budget)
        head_tokens = self.tok.count([head])[0] + 1
        if head_tokens <= budget // 2:
            pieces = self._pack_lines(rows, budget - head_tokens)
            return [_Unit(f"{head}\n{p.text}", p.tokens + head_tokens) for p in pieces]
        # a long caption: the first piece has it whole, the others its first words (and the header rows)
        caption, header = "\n".join(lines[: cut - 2]).strip(), "\n".join(lines[cut - 2 : cut])
        header_tokens = self.tok.count([header])[0] + 1
        if header_tokens > budget // 2:  # a header wider than half a chunk: the table is cut like code
            return self._pack_lines(lines, budget)
        short = self._word_windows(caption, budget // 4)[0].text if caption else ""
        short_head = f"{short} …\n\n{header}" if short else header
        short_tokens = self.tok.count([short_head])[0] + 1
        first = [_Unit(head, head_tokens)] if head_tokens <= budget else self._pack_lines(lines[:cut], budget)
        pieces = self._pack_lines(rows, budget - short_tokens)
        return first + [_Unit(f"{short_head}\n{p.text}", p.tokens + short_tokens) for p in pieces]

    def _pack_lines(self, lines: list[str], budget: int) -> list[_Unit]:
        out: list[_Unit] = []
        current: list[str] = []
        used = 0
        for line, count in zip(lines, self.tok.count(lines), strict=True):
            if count > budget:
                if current:
                    out.append(_Unit("\n".join(current), used))
                    current, used = [], 0
                out.extend(self._word_windows(line, budget))
                continue
            if used + count > budget and current:
                out.append(_Unit("\n".join(current), used))
                current, used = [], 0
            current.append(line)
            used += count
        if current:
            out.append(_Unit("\n".join(current), used))
        return out

    # -- packing --------------------------------------------------------------

    def _pack(self, units: list[_Unit], budget: int, sep: str) -> list[tuple[str, tuple[float, ...]]]:
        """Units packed into chunks, each overlapping the one before: each chunk's text and where it is
        printed (`_boxes`)."""
        chunks: list[list[_Unit]] = []
        current: list[_Unit] = []
        used = 0
        for unit in units:
            if current and used + unit.tokens > budget:
                chunks.append(current)
                carry: list[_Unit] = []  # trailing units of the chunk just closed, as overlap
                carried = 0
                for prev in reversed(current):
                    if carried + prev.tokens > self.overlap_tokens or carried + prev.tokens + unit.tokens > budget:
                        break
                    carry.insert(0, prev)
                    carried += prev.tokens
                current, used = carry, carried
            current.append(unit)
            used += unit.tokens
        if current:
            chunks.append(current)
        return [(sep.join(u.text for u in group), _boxes(group)) for group in chunks]

    def _context(self, title: str, heading_path: list[str]) -> tuple[str, int]:
        path = list(heading_path)
        if path and path[0].strip().lower() == title.strip().lower():
            path = path[1:]
        context = " > ".join([title, *path]) if title else " > ".join(path)
        limit = self.max_tokens // 4  # the heading context never takes more than a quarter
        count = self.tok.count([context])[0] if context else 0
        if count > limit:
            context = self._word_windows(context, limit)[0].text
            count = self.tok.count([context])[0]
        return context, count

    def chunk(self, title: str, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for index, section in enumerate(sections):
            context, context_tokens = self._context(title, section.heading_path)
            budget = self.max_tokens - context_tokens - 1
            # (text, content type, language, figure, boxes)
            pieces: list[tuple[str, str, str, str, tuple[float, ...]]] = []
            pending: list[_Unit] = []  # consecutive text blocks are packed together
            for block in section.blocks:
                if block.kind == "text":
                    pending.extend(self._units(block, budget))
                    continue
                pieces += [(text, "text", "", "", boxes) for text, boxes in self._pack(pending, budget, " ")]
                pending = []
                if block.kind == "table":  # each piece under the table's head: never packed with another
                    boxes = _boxes([_Unit("", 0, block)])
                    pieces += [(u.text, "table", "", "", boxes) for u in self._table_units(block.text, budget)]
                    continue
                packed = self._pack(self._units(block, budget), budget, "\n")
                pieces += [(text, block.kind, block.language, block.figure, boxes) for text, boxes in packed]
            pieces += [(text, "text", "", "", boxes) for text, boxes in self._pack(pending, budget, " ")]
            chunks += [
                Chunk(text, context, index, kind, language, section.page_start, section.page_end, figure, boxes)
                for text, kind, language, figure, boxes in pieces
            ]
        return chunks
