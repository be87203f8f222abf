"""A PDF's marked lines as partitions: one per page and section, a table one of its own, the reference list
marked, a sentence over a page break joined, a scanned page (read by OCR) in its place.

`Partitioner` takes the pages a window at a time (thoth/writes/parsers/pdf/__init__.py reads a long PDF so):
the heading path, whether the reference list has begun, and the last partition (a sentence on the next page
may still join it) go on from one window to the next, so the partitions are those of the whole document.
"""

from __future__ import annotations

import re

from thoth.writes.parsers import Block, Section
from thoth.writes.parsers.pdf.floats import split_floats
from thoth.writes.parsers.pdf.headings import person_case
from thoth.writes.parsers.pdf.layout import REFERENCES, Line
from thoth.writes.parsers.pdf.ocr import OcrPage
from thoth.writes.parsers.pdf.tables import Table, markdown
from thoth.writes.parsers.pdf.text import clean_text, join_hyphens


def _line_boxes(lines: list[Line]) -> tuple:
    """Where `lines` are printed, each with the share of their text up to its end (Block.boxes)."""
    total = sum(len(x.plain) + 1 for x in lines) or 1
    out, at = [], 0
    for x in lines:
        at += len(x.plain) + 1
        out.append((x.page, round(x.x0, 1), round(x.y0, 1), round(x.x1, 1), round(x.y1, 1), min(1.0, at / total)))
    return tuple(out)


def _shares(boxes: tuple, lo: float, hi: float, start: float, end: float) -> tuple:
    """The lines of `boxes` over the share lo..hi of their text, that share mapped onto start..end of a new one."""
    out, before = [], 0.0
    for *box, share in boxes:
        if share > lo and before < hi:
            out.append((*box, start + (min(share, hi) - lo) / max(1e-9, hi - lo) * (end - start)))
        before = share
    return tuple(out)


def _prose(lines: list[Line], vocab) -> str:
    text = clean_text("\n".join(x.plain for x in lines), vocab)
    return re.sub(r"\s*\n\s*", " ", text).strip()


_STEP = re.compile(r"(?<!Algorithm)(?<!\d:)\s+(?=(?:\d{1,2}:|Input:|Output:|Require:|Ensure:|return\b)\s)")


def _steps(lines: list[Line], vocab) -> str:
    """An algorithm box, one step a line ('1: ...', 'Input: ...'); PDFium splits a step's formulas
    into many short lines, so the box is read as prose first and broken at its step marks."""
    return _STEP.sub("\n", _prose(lines, vocab))


def _reference_entries(lines: list[Line], vocab) -> str:
    """One reference per line: a new entry starts at '[n]'/'n.' or back at the entry's left edge."""
    entries: list[list[Line]] = []
    left = None
    for line in lines:
        text = line.plain.strip()
        starts = re.match(r"^(\[\d+\]|\d{1,3}\.\s)", text) or (
            left is not None and line.x0 <= left + 3 and line.x0 > left - 40 and not text[:1].islower()
        )
        if not entries or starts or (left is not None and abs(line.x0 - left) > 120 and not text[:1].islower()):
            entries.append([])
            left = line.x0
        entries[-1].append(line)
    return "\n".join(_prose(entry, vocab) for entry in entries)


def _section_partition(lines: list[Line], path: list[str], references: bool, vocab) -> Section | None:
    body, floats = split_floats(lines)
    blocks = []
    if body:
        blocks.append(
            Block(_reference_entries(body, vocab), kind="references", boxes=_line_boxes(body))
            if references
            else Block(_prose(body, vocab), boxes=_line_boxes(body))
        )
    blocks += [_float_block(role, float_lines, vocab) for role, float_lines in floats]
    blocks = [b for b in blocks if b.text.strip()]
    if not blocks:
        return None
    return Section("page", blocks, list(path), page_start=lines[0].page, page_end=lines[0].page)


def _float_block(role: str, lines: list[Line], vocab) -> Block:
    """A caption, algorithm box or footnote; a caption whose figure was cut as a picture is a `figure`
    block naming it, its caption first and the labels inside the drawing after."""
    if role == "algorithm":
        return Block(_steps(lines, vocab), kind=role, boxes=_line_boxes(lines))
    at = next((i for i, x in enumerate(lines) if x.figure), None)
    if role == "caption" and at is not None:
        ordered = [*lines[at:], *lines[:at]]
        return Block(_prose(ordered, vocab), kind="figure", figure=lines[at].figure, boxes=_line_boxes(ordered))
    return Block(_prose(lines, vocab), kind=role, boxes=_line_boxes(lines))


def is_references(heading: str) -> bool:
    return bool(REFERENCES.match(re.sub(r"^[\dA-H.]+\s+", "", heading).strip()))


def _table_partition(table: Table, path: list[str], vocab) -> Section:
    text = markdown(table, lambda s: " ".join(clean_text(s, vocab).split()))
    block = Block(text, kind="table", boxes=_line_boxes(table.lines))
    return Section("page", [block], list(path), page_start=table.pages[0], page_end=table.pages[-1])


def _flush(partitions: list, body: list[Line], held: list[Section], path: list[str], references: bool, vocab) -> None:
    """The running text gathered so far as a partition, then the tables met in it (both emptied)."""
    if body:
        partitions.append(_section_partition(body, path, references, vocab))
        body.clear()
    partitions.extend(held)
    held.clear()


_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"“(\[]?[A-Z0-9])")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"'”’)\]]*$")


def join_page_breaks(partitions: list[Section], vocab) -> list[Section]:
    """A sentence that runs over a page break reads whole: the next page's opening words, up to the end
    of that sentence, join the page before (its partition then ends on the next page). Only running text
    under the same heading, where the page ends mid-sentence and the next starts in lower case (or the
    page ends on a hyphen or a comma)."""
    out: list[Section] = []
    for section in partitions:
        # a table between two pages' text is passed over: the sentence it interrupts still joins
        prev = next((s for s in reversed(out) if s.blocks[0].kind != "table"), None)
        if (
            prev is not None
            and section.page_start == (prev.page_end or 0) + 1
            and prev.heading_path == section.heading_path
            and prev.blocks[0].kind == "text"
            and section.blocks[0].kind == "text"
        ):
            tail, head = prev.blocks[0].text.rstrip(), section.blocks[0].text.lstrip()
            if head and not _ENDS_SENTENCE.search(tail) and (head[0].islower() or tail.endswith(("-", ","))):
                end = _SENTENCE_END.search(head)
                cut = end.end() if end else len(head)
                joined = join_hyphens(f"{tail}\n{head[:cut].rstrip()}", vocab)
                text = re.sub(r"\s*\n\s*", " ", joined)
                moved = cut / max(1, len(head))  # the share of the next page's text that joins this one
                kept = len(tail) / max(1, len(text))
                boxes = _shares(prev.blocks[0].boxes, 0.0, 1.0, 0.0, kept)
                boxes += _shares(section.blocks[0].boxes, 0.0, moved, kept, 1.0)
                prev.blocks[0] = Block(text, boxes=boxes)
                prev.page_end = section.page_start
                rest = head[cut:].strip()
                rest_boxes = _shares(section.blocks[0].boxes, moved, 1.0, 0.0, 1.0)
                section.blocks = ([Block(rest, boxes=rest_boxes)] if rest else []) + section.blocks[1:]
                if not section.blocks:
                    continue
        out.append(section)
    return out


class Partitioner:
    """The document's partitions, from its marked pages given a window at a time, in order (`add`, then
    `close`). `vocab` and `words` are the whole document's (thoth/writes/parsers/pdf/text.py's
    `vocabulary`; the body's words as written, for headings in capitals); `unheaded`: where a reference
    list without a heading starts, (page, line index)."""

    def __init__(self, vocab, words, unheaded: tuple[int, int] | None):
        self.vocab, self.words, self.unheaded = vocab, words, unheaded
        self.path: list[str] = []
        self.references = False
        self.held: list[Section] = []  # the last text partition and the tables after it: a next page may join it
        self.scanned: dict[int, OcrPage] = {}  # scanned pages not placed yet
        self.scan_path: list[str] = []  # the heading a scanned page comes under

    def add(self, pages: list[list[Line]], tables: list[Table], scanned: dict[int, OcrPage]) -> list[Section]:
        """The partitions of `pages` (with their `tables`; `scanned`: their pages read by OCR) that are final."""
        joined = join_page_breaks(self.held + self._partitions(pages, tables), self.vocab)
        cut = max((i for i, s in enumerate(joined) if s.blocks[0].kind != "table"), default=len(joined))
        ready, self.held = joined[:cut], joined[cut:]
        self.scanned.update(scanned)
        return self._with_scans(ready, self.held[0].page_start or 0 if self.held else None)

    def close(self) -> list[Section]:
        """The partitions held back for the next window, at the document's end."""
        ready, self.held = self.held, []
        return self._with_scans(ready, None)

    def _partitions(self, pages: list[list[Line]], tables: list[Table]) -> list[Section]:
        """One partition per page and section: chunks never straddle a section break or a page. A table is a
        partition of its own, after the running text it interrupts (which reads on across it)."""
        partitions: list[Section | None] = []
        vocab = self.vocab
        written: set[int] = set()
        for lines in pages:
            body: list[Line] = []
            held: list[Section] = []  # the tables met in `body`, written after it
            for line in lines:
                if line.furniture or line.heading_level < 0:
                    continue
                if line.table >= 0:
                    if line.table not in written:
                        written.add(line.table)
                        held.append(_table_partition(tables[line.table], self.path, vocab))
                    continue
                if (line.page, line.index) == self.unheaded:
                    _flush(partitions, body, held, self.path, self.references, vocab)
                    self.references = True
                if line.heading_level == 0:
                    body.append(line)
                    continue
                _flush(partitions, body, held, self.path, self.references, vocab)
                heading = person_case(" ".join(clean_text(line.plain).split()), self.words)
                self.path = [*self.path[: line.heading_level - 1], heading]
                self.references = is_references(heading)
            _flush(partitions, body, held, self.path, self.references, vocab)
        return [p for p in partitions if p is not None]

    def _with_scans(self, partitions: list[Section], before: int | None) -> list[Section]:
        """`partitions` with the scanned pages before page `before` (all, if None) in page order among them,
        under the section they follow; their blocks are marked `ocr` and the recogniser's confidence is the
        partition's own field."""
        placed = {n: page for n, page in self.scanned.items() if before is None or n < before}
        for n in placed:
            del self.scanned[n]
        merged = sorted(
            [*partitions, *(Section("page", [], [], page_start=n, page_end=n) for n in placed)],
            key=lambda s: s.page_start or 0,
        )
        for section in merged:
            page = placed.get(section.page_start or 0) if not section.blocks else None
            if page is None:
                self.scan_path = section.heading_path
                continue
            section.blocks = [Block(clean_text(page.text, self.vocab), kind="ocr")]
            section.heading_path = list(self.scan_path)
            section.ocr_confidence = page.confidence
        return merged
