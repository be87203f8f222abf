"""PDF text as the author wrote it, with pypdfium2 (PDFium: fast, keeps reading order; Apache-2.0/BSD).

Measured when the parser was chosen: pypdfium2 about 1,100 pages/s, pypdf about
290, pdfplumber about 11; PyMuPDF is as fast but AGPL.

Each page is read line by line with its geometry (chars.py, lines.py, layout.py):
running headers, page numbers and the arXiv stamp are left out of the text; the
first page's layout gives the title, authors and arXiv identifier; section headings
(headings.py, from the document's own typography; labels inside figures, drawings.py,
never count) split the pages into partitions that carry their heading path, and the reference
list is its own partition, marked `references`. The text is cleaned in one place
(text.py): words joined at line-break hyphens, ligatures unfolded,
no control characters.
"""

from __future__ import annotations

import gc
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pypdfium2 as pdfium

from thoth.writes.parsers import Block, ParsedDocument, ParseError, RawFile, Section
from thoth.writes.parsers.pdf.chars import read_page as read_chars
from thoth.writes.parsers.pdf.drawings import graphic_regions, mark_figure_text
from thoth.writes.parsers.pdf.figures import MAX_FIGURES, FigureImage, figure_boxes, label_of, render_figure
from thoth.writes.parsers.pdf.floats import mark_floats, split_floats
from thoth.writes.parsers.pdf.headings import body_size, mark_headings, person_case
from thoth.writes.parsers.pdf.layout import DOI, REFERENCES, Line, mark_furniture, read_title_page
from thoth.writes.parsers.pdf.lines import read_lines
from thoth.writes.parsers.pdf.ocr import OcrPage, read_page
from thoth.writes.parsers.pdf.tables import Table, continue_table, find_tables, markdown, needs_look
from thoth.writes.parsers.pdf.text import UNMAPPED, clean_text, join_hyphens, vocabulary


def _year(date: str) -> int | None:
    match = re.match(r"^D?:?(\d{4})", date or "")
    return int(match.group(1)) if match else None


_PLACEHOLDER_TITLE = re.compile(r"^(untitled|title|document\d*|microsoft word - .*|.*\.(dvi|docx?|tex|pdf|ps))$", re.I)
_PLACEHOLDER_AUTHOR = re.compile(r"^(anonymous|unknown|author|user|admin)$", re.I)


def _real_title(title: str) -> str:
    """The metadata title, or '' when it is a tool's placeholder ('untitled', 'paper.dvi')."""
    title = title.strip()
    return "" if _PLACEHOLDER_TITLE.match(title) else title


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


def _is_references(heading: str) -> bool:
    return bool(REFERENCES.match(re.sub(r"^[\dA-H.]+\s+", "", heading).strip()))


def _unheaded_references(pages: list[list[Line]]) -> tuple[int, int] | None:
    """Where a reference list without a heading starts, by the shape of its entries: '[1]' in the
    document's second half, '[2]' and '[3]' starting lines soon after. None when there is a heading."""
    lines = [x for page in pages for x in page if not x.furniture and not x.rotated]
    if any(x.heading_level > 0 and _is_references(x.plain) for x in lines):
        return None
    for i in range(len(lines) // 2, len(lines)):
        if lines[i].plain.startswith("[1]"):
            following = [x.plain[:3] for x in lines[i + 1 : i + 30]]
            if "[2]" in following and "[3]" in following:
                return (lines[i].page, lines[i].index)
    return None


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


def _partitions(pages: list[list[Line]], vocab, words: Counter[str], tables: list[Table]) -> list[Section]:
    """One partition per page and section: chunks never straddle a section break or a page. A table is a
    partition of its own, after the running text it interrupts (which reads on across it)."""
    partitions: list[Section | None] = []
    path: list[str] = []
    references = False
    unheaded = _unheaded_references(pages)
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
                    held.append(_table_partition(tables[line.table], path, vocab))
                continue
            if (line.page, line.index) == unheaded:
                _flush(partitions, body, held, path, references, vocab)
                references = True
            if line.heading_level == 0:
                body.append(line)
                continue
            _flush(partitions, body, held, path, references, vocab)
            heading = person_case(" ".join(clean_text(line.plain).split()), words)
            path = [*path[: line.heading_level - 1], heading]
            references = _is_references(heading)
        _flush(partitions, body, held, path, references, vocab)
    return [p for p in partitions if p is not None]


_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"“(\[]?[A-Z0-9])")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"'”’)\]]*$")


def _join_page_breaks(partitions: list[Section], vocab) -> list[Section]:
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


def _written_words(pages: list[list[Line]], start: tuple[int, int]) -> Counter[str]:
    """The body's words as written, headings, title and furniture left out: which words the text
    itself sets in capitals (acronyms), for headings typeset in capitals."""
    body = (
        x.plain for lines in pages for x in lines if not (x.heading_level or x.furniture) and (x.page, x.index) >= start
    )
    return Counter(re.findall(r"[^\W\d_]+", " ".join(body)))


def _ocr_sections(ocr: dict[int, OcrPage], partitions: list[Section], vocab) -> list[Section]:
    """Scanned pages (read by OCR) in page order among the others, under the section they follow;
    their blocks are marked `ocr` and the recogniser's confidence is the partition's own field."""
    merged = sorted(
        [*partitions, *(Section("page", [], [], page_start=n, page_end=n) for n in ocr)],
        key=lambda s: s.page_start or 0,
    )
    path: list[str] = []
    for section in merged:
        page = ocr.get(section.page_start or 0) if not section.blocks else None
        if page is None:
            path = section.heading_path
            continue
        section.blocks = [Block(clean_text(page.text, vocab), kind="ocr")]
        section.heading_path = list(path)
        section.ocr_confidence = page.confidence
    return merged


def _no_text(page_count: int, ocr: bool) -> ParseError:
    if ocr:
        return ParseError(f"no text layer (image-only PDF, {page_count} pages), and OCR found no legible text")
    return ParseError(f"no text layer (image-only PDF, {page_count} pages): it would need OCR (set THOTH_PDF_OCR=true)")


class _Collector:
    """The cyclic collector's state across the parses under way in this process (thread-safe)."""

    lock = threading.Lock()
    parses = 0  # parses under way
    was_enabled = False  # whether the collector ran before the first of them began


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while PDFs are parsed: a parse makes a hundred thousand
    small objects and no cycles, and the collector's passes over them cost a tenth of its time. Memory is
    still freed as objects go (reference counts); the collector runs again when the last parse under way
    ends, in whatever state it was before the first began (re-entrant, thread-safe)."""
    with _Collector.lock:
        if not _Collector.parses:
            _Collector.was_enabled = gc.isenabled()
            gc.disable()
        _Collector.parses += 1
    try:
        yield
    finally:
        with _Collector.lock:
            _Collector.parses -= 1
            if not _Collector.parses and _Collector.was_enabled:
                gc.enable()


@contextmanager
def _collector_running() -> Iterator[None]:
    """The cyclic collector as it was before parsing paused it, for a stretch that is slow and makes garbage
    of its own: OCR takes a minute or more a page, and a server's searches go on meanwhile."""
    with _Collector.lock:
        if _Collector.was_enabled:
            gc.enable()
    try:
        yield
    finally:
        with _Collector.lock:
            if _Collector.parses:
                gc.disable()


def _cut_figures(page, lines: list[Line], regions, number: int, pictures: dict[str, FigureImage]) -> None:
    """The page's captioned figures as pictures (figures.py), named on their caption's first line."""
    for caption, box in figure_boxes(lines, regions):
        if len(pictures) >= MAX_FIGURES:
            return
        picture = render_figure(page, box, label_of(caption), number)
        if picture is not None:
            pictures[picture.name] = picture
            caption.figure = picture.name


def _read_tables(page, chars, lines: list[Line], number: int, open_table: Table | None, tables: list[Table]):
    """The page's tables added to `tables` (a table going on from the page before joins it), their lines
    marked with the table's number; returns the table that reaches the page's foot, if one does."""
    last = None
    for table in find_tables(page, chars, lines, number, open_table):
        if not table.caption and open_table is not None:
            continue_table(open_table, table)
            table, at = open_table, next(i for i, t in enumerate(tables) if t is open_table)
        else:
            tables.append(table)
            at = len(tables) - 1
        for line in table.lines:
            line.table = at
        last = table
    return last if last is not None and last.open_end else None


def read(file: RawFile) -> ParsedDocument:
    with _collector_paused():
        return _parse(file.data, file.title, file.pdf_password, file.pdf_ocr, file.pdf_figures)


def _parse(data: bytes, fallback_title: str, password: str | None, ocr: bool, figures: bool) -> ParsedDocument:
    if not data:
        raise ParseError("empty file")
    try:
        pdf = pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            if password:
                raise ParseError("encrypted PDF: the configured password does not open it") from None
            raise ParseError("encrypted PDF: a password is required (set THOTH_PDF_PASSWORD)") from None
        raise ParseError(f"corrupt or unreadable PDF: {message}") from None
    try:
        meta = pdf.get_metadata_dict(skip_empty=True)
        pages: list[list[Line]] = []
        heights: list[float] = []
        scanned: dict[int, OcrPage] = {}  # page number -> its OCR'd text, for pages without a text layer
        hidden: Counter[str] = Counter()  # characters left out, by reason (hidden.py)
        tables: list[Table] = []
        pictures: dict[str, FigureImage] = {}  # the figures cut as pictures, by name
        open_table: Table | None = None  # the last table, while it reaches the foot of its page
        for number in range(1, len(pdf) + 1):
            page = pdf[number - 1]
            textpage = page.get_textpage()
            try:
                chars = read_chars(textpage, hidden)
                lines = read_lines(textpage, number, hidden, chars)
                if lines:  # a page without text has no label to mark: its drawing is not walked
                    regions = graphic_regions(page, page.get_width(), page.get_height())
                    mark_figure_text(lines, regions)
                if lines and needs_look(lines, open_table is not None):
                    open_table = _read_tables(page, chars, lines, number, open_table, tables)
                else:
                    open_table = None
                if figures and lines and len(pictures) < MAX_FIGURES:
                    _cut_figures(page, lines, regions, number, pictures)
                pages.append(lines)
                heights.append(page.get_height())
                if ocr and not lines:
                    with _collector_running():
                        found = read_page(page)
                    if found is not None:
                        scanned[number] = found
            finally:
                textpage.close()
                page.close()
        page_count = len(pdf)
    except pdfium.PdfiumError as exc:
        raise ParseError(f"corrupt PDF: {exc}") from None
    finally:
        pdf.close()
    if page_count == 0:
        raise ParseError("PDF has no pages")
    if not any(pages):
        if not scanned:
            raise _no_text(page_count, ocr)
        return ParsedDocument(
            title=_real_title(meta.get("Title") or "") or fallback_title,
            sections=_ocr_sections(scanned, [], None),
            page_count=page_count,
            year=_year(meta.get("CreationDate", "")),
            hidden_dropped=dict(hidden),
        )

    front = mark_furniture(pages)
    body = body_size(pages)
    first = pages[0]
    front.update(read_title_page(first, heights[0], body) if first else {})
    start = (1, 0)
    if front.get("title") and first:
        title_sizes = max(x.size for x in first if not x.rotated)
        start = (1, max((x.index for x in first if abs(x.size - title_sizes) < 0.4), default=-1) + 1)
    mark_headings(pages, body, start)
    mark_floats(pages, body, heights)
    text = "\n".join(x.text for lines in pages for x in lines if not x.furniture)
    vocab = vocabulary(text)
    words = _written_words(pages, start)
    partitions = _ocr_sections(scanned, _join_page_breaks(_partitions(pages, vocab, words, tables), vocab), vocab)
    if not partitions:
        raise _no_text(page_count, ocr)
    first_page = clean_text("\n".join(x.text for x in first), vocab)
    doi = DOI.search(first_page)
    if doi:
        front["doi"] = doi.group(1).rstrip(".,;)")
    if "title" in front:
        typeset = clean_text(front["title"], vocab)
        front["title"] = person_case(typeset, words)
        if front["title"] != typeset:
            front["title_typeset"] = typeset  # the capitals the paper prints, beside the title a person writes
    authors = [a.strip() for a in re.split(r"[;,]| and ", meta.get("Author", "")) if a.strip()]
    authors = [a for a in authors if not _PLACEHOLDER_AUTHOR.match(a)]
    title = _real_title(meta.get("Title") or "")
    return ParsedDocument(
        title=title or fallback_title,
        sections=partitions,
        authors=authors,
        year=_year(meta.get("CreationDate", "")),
        page_count=page_count,
        first_page=first_page,
        title_from_metadata=bool(title),
        front_matter=front,
        unmapped_glyphs=sum(x.text.count(UNMAPPED) for lines in pages for x in lines if not x.furniture),
        figures=pictures,
        hidden_dropped=dict(hidden),
    )
