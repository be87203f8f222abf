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
import os
import re
import tempfile
import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium

from thoth.writes.parsers import ParsedDocument, ParseError, RawFile, Section, Stopped
from thoth.writes.parsers.pdf.chars import read_page as read_chars
from thoth.writes.parsers.pdf.drawings import drawn_objects, graphic_regions, mark_figure_text
from thoth.writes.parsers.pdf.figures import MAX_FIGURES, FigureImage, figure_boxes, label_of, render_figure
from thoth.writes.parsers.pdf.floats import mark_floats
from thoth.writes.parsers.pdf.headings import (
    Numbering,
    body_size,
    first_section,
    mark_headings,
    numbers_sections,
    person_case,
    size_counts,
)
from thoth.writes.parsers.pdf.layout import (
    DOI,
    Line,
    furniture_key,
    mark_repeated,
    other_text,
    page_furniture,
    read_title_page,
    repeated_keys,
)
from thoth.writes.parsers.pdf.lines import read_lines
from thoth.writes.parsers.pdf.ocr import OcrPage, read_page
from thoth.writes.parsers.pdf.partitions import Partitioner, is_references
from thoth.writes.parsers.pdf.tables import Table, continue_table, find_tables
from thoth.writes.parsers.pdf.text import UNMAPPED, clean_text, vocabulary


def _year(date: str) -> int | None:
    match = re.match(r"^D?:?(\d{4})", date or "")
    return int(match.group(1)) if match else None


_PLACEHOLDER_TITLE = re.compile(r"^(untitled|title|document\d*|microsoft word - .*|.*\.(dvi|docx?|tex|pdf|ps))$", re.I)
_PLACEHOLDER_AUTHOR = re.compile(r"^(anonymous|unknown|author|user|admin)$", re.I)


def _real_title(title: str) -> str:
    """The metadata title, or '' when it is a tool's placeholder ('untitled', 'paper.dvi')."""
    title = title.strip()
    return "" if _PLACEHOLDER_TITLE.match(title) else title


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


def _read_tables(drawn, chars, lines: list[Line], number: int, open_table: Table | None, tables: list[Table]):
    """The page's tables added to `tables` (a table going on from the page before joins it), their lines
    marked with the table's number; returns the table that reaches the page's foot, if one does."""
    last = None
    for table in find_tables(drawn, chars, lines, number, open_table):
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


# A PDF of up to WHOLE_PAGES pages is read once, whole: its pages' lines are held for every pass (PDFium holds
# about 0.4 MB a page parsed until the document closes). A longer one is read in windows of WINDOW_PAGES pages
# (more while a table runs on over a page break), chunked and written a window at a time, so its memory is a
# window's, not the document's: read twice first, for what the document-wide rules need (`_Survey`, `_Text`),
# then a window at a time for its partitions. Reading each page three times costs: over the 37 PDFs of the
# benchmark data, one of 117 pages, the parse took 5.0x PDFium's CPU time read in windows, 3.4x read whole.
WHOLE_PAGES = 200
WINDOW_PAGES = 50


@dataclass
class _Window:
    """A window's pages as read: each page's lines (its furniture, headings and floats not marked yet)."""

    first: int  # its first page's number
    pages: list[list[Line]] = field(default_factory=list)
    heights: list[float] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    scanned: dict[int, OcrPage] = field(default_factory=dict)  # page number -> its OCR'd text (no text layer)


def _open(data: bytes | Path, password: str | None) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            if password:
                raise ParseError("encrypted PDF: the configured password does not open it") from None
            raise ParseError("encrypted PDF: a password is required (set THOTH_PDF_PASSWORD)") from None
        raise ParseError(f"corrupt or unreadable PDF: {message}") from None


def _read_window(
    pdf: pdfium.PdfDocument,
    first: int,
    length: int,
    hidden: Counter[str],
    ocr: bool,
    pictures: dict[str, FigureImage] | None,
    survey: bool = False,
) -> _Window:
    """The pages from `first` on: `length` of them, and more while a table runs on over the page break.
    `hidden` counts the characters left out (hidden.py); `pictures` (None: no figures) takes the figures cut.
    `survey`: read for `_Survey` only, which asks a page's drawings and tables only whether a line that may
    head section 1 is a figure's label or a table's cell, so they are looked at only on a page with one."""
    window = _Window(first)
    open_table: Table | None = None  # the last table, while it reaches the foot of its page
    number = first
    try:
        while number <= len(pdf) and (number < first + length or open_table is not None):
            page = pdf[number - 1]
            textpage = page.get_textpage()
            try:
                chars = read_chars(textpage, hidden)
                lines = read_lines(textpage, number, hidden, chars)
                # a page without text has no label to mark: its drawing is not walked
                looked = bool(lines) and (not survey or any(map(first_section, lines)))
                if looked:
                    drawn = drawn_objects(page)
                    regions = graphic_regions(drawn, page.get_width(), page.get_height())
                    mark_figure_text(lines, regions)
                open_table = _read_tables(drawn, chars, lines, number, open_table, window.tables) if looked else None
                if pictures is not None and lines and len(pictures) < MAX_FIGURES:
                    _cut_figures(page, lines, regions, number, pictures)
                window.pages.append(lines)
                window.heights.append(page.get_height())
                if ocr and not lines:
                    with _collector_running():
                        found = read_page(page)
                    if found is not None:
                        window.scanned[number] = found
            finally:
                textpage.close()
                page.close()
            number += 1
    except pdfium.PdfiumError as exc:
        raise ParseError(f"corrupt PDF: {exc}") from None
    return window


class _Survey:
    """What the rules over the whole document need from each page, before any page's text is final: the
    lines at the pages' edges (running headers and footers are those repeated on many pages), the
    characters' sizes (the body's is the commonest), the lines that may head section 1 (whether the paper
    numbers its sections), and the arXiv stamp."""

    def __init__(self) -> None:
        self.stamp: dict = {}
        self.pages_with: dict[str, set[int]] = {}  # an edge line's key -> the pages it is on
        self.edges: list[tuple[list[Line], bool]] = []  # each page's edge lines, and whether it has other text
        self.sizes: Counter[float] = Counter()  # the characters off the pages' edges, by size
        self.first_sections: list[Line] = []
        self.pages = 0
        self.text = False  # whether any page has a text layer

    def add(self, window: _Window) -> None:
        for lines in window.pages:
            edge = page_furniture(lines, self.stamp)
            for line in edge:
                self.pages_with.setdefault(furniture_key(line), set()).add(line.page)
            on_edge = {id(x) for x in edge}
            self.sizes.update(size_counts([x for x in lines if id(x) not in on_edge]))
            self.edges.append((edge, other_text(lines, edge)))
            self.first_sections += [x for x in lines if first_section(x)]
            self.pages += 1
            self.text = self.text or bool(lines)

    def rules(self) -> _Rules:
        repeated = repeated_keys(self.pages_with, self.pages)
        sizes = Counter(self.sizes)
        for edge, other in self.edges:
            mark_repeated(edge, repeated, other)
            sizes.update(size_counts(edge))
        body = body_size(sizes)
        return _Rules(repeated, body, numbers_sections(self.first_sections, body), dict(self.stamp))


@dataclass
class _Rules:
    """How the document's pages are marked: its furniture, body size, section numbering, title and where
    headings may start (after the title: `start`, page and line index)."""

    repeated: set[str]
    body: float
    numbered: bool
    front: dict
    start: tuple[int, int] = (1, 0)
    numbering: Numbering | None = None  # the section numbers seen so far, in the pass under way

    def mark(self, window: _Window) -> None:
        """Mark the window's furniture and headings (from the first page on: one window after another)."""
        for lines in window.pages:
            edge = page_furniture(lines, {})
            mark_repeated(edge, self.repeated, other_text(lines, edge))
        if window.first == 1 and window.pages and window.pages[0]:
            first = window.pages[0]
            self.front.update(read_title_page(first, window.heights[0], self.body))
            if self.front.get("title"):
                title_sizes = max(x.size for x in first if not x.rotated)
                self.start = (1, max((x.index for x in first if abs(x.size - title_sizes) < 0.4), default=-1) + 1)
        if window.first == 1:
            self.numbering = Numbering() if self.numbered else None
        mark_headings(window.pages, self.body, self.numbering, self.start)


class _Text:
    """The document's text as the rules over it need it, from its marked pages a window at a time: its
    vocabulary (text.py's `vocabulary`, counted a stretch at a time: a stretch ends where no line-break
    hyphen joins two lines), its body's words as written, where a reference list without a heading starts,
    and its glyphs without Unicode."""

    def __init__(self) -> None:
        self.vocab: Counter[str] = Counter()
        self.words: Counter[str] = Counter()
        self.stretch: list[str] = []
        self.lines = 0  # text lines (not furniture, not rotated) so far
        self.entries: dict[str, list[tuple[int, int, int]]] = {}  # '[1]', '[2]', '[3]' -> (line, page, index)
        self.headed = False  # a heading names the reference list
        self.unmapped = 0
        self.first_page = ""

    def add(self, window: _Window, start: tuple[int, int]) -> None:
        if window.first == 1 and window.pages:
            self.first_page = "\n".join(x.text for x in window.pages[0])
        body: list[str] = []  # the body's lines, their words counted at once
        for lines in window.pages:
            for x in lines:
                if x.furniture:
                    continue
                self.unmapped += x.text.count(UNMAPPED)
                self.stretch.append(x.text)
                if not x.heading_level and (x.page, x.index) >= start:
                    body.append(x.plain)
                if x.rotated:
                    continue
                self.headed = self.headed or (x.heading_level > 0 and is_references(x.plain))
                if x.plain[:3] in ("[1]", "[2]", "[3]"):
                    self.entries.setdefault(x.plain[:3], []).append((self.lines, x.page, x.index))
                self.lines += 1
        self.words.update(_LETTERS.findall("\n".join(body)))
        if self.stretch and not self.stretch[-1].endswith(("-", "\x02", "\ufffe")):
            self.vocab.update(vocabulary("\n".join(self.stretch)))
            self.stretch = []

    def close(self) -> None:
        self.vocab.update(vocabulary("\n".join(self.stretch)))
        self.stretch = []

    def unheaded(self) -> tuple[int, int] | None:
        """Where a reference list without a heading starts, by the shape of its entries: '[1]' in the
        document's second half, '[2]' and '[3]' starting lines soon after. None when there is a heading."""
        if self.headed:
            return None
        for at, page, index in self.entries.get("[1]", []):
            if at < self.lines // 2:
                continue
            following = [{n for n, _, _ in self.entries.get(mark, []) if at < n < at + 30} for mark in ("[2]", "[3]")]
            if all(following):
                return (page, index)
        return None


_LETTERS = re.compile(r"[^\W\d_]+")


def read(file: RawFile) -> ParsedDocument:
    """The PDF parsed. One longer than WHOLE_PAGES comes as its first window's sections, the others in
    `rest`, read as it is iterated; `file.stop` set ends the reading between windows (Stopped)."""
    if not file.data:
        raise ParseError("empty file")
    ocr = file.pdf_ocr
    pdf = _open(file.data, file.pdf_password)
    try:
        meta = pdf.get_metadata_dict(skip_empty=True)
        page_count = len(pdf)
        if page_count == 0:
            raise ParseError("PDF has no pages")
        hidden: Counter[str] = Counter()  # characters left out, by reason (hidden.py)
        pictures: dict[str, FigureImage] | None = {} if file.pdf_figures else None
        whole = page_count <= WHOLE_PAGES
        with _collector_paused():  # a PDF read whole is read once: every pass goes over the same pages
            window = _read_window(pdf, 1, page_count, hidden, ocr, pictures) if whole else None
    finally:
        pdf.close()

    spool = _Spool(file.data) if window is None else None  # the windows do not hold `file.data`
    password, stop = file.pdf_password, file.stop

    def pages(hidden: Counter[str], ocr: bool, pictures: dict | None, survey: bool = False) -> Iterator[_Window]:
        if spool is None:
            return iter([window])
        return _windows(spool, password, stop, page_count, hidden, ocr, pictures, survey)

    with _collector_paused():
        survey = _Survey()
        for each in pages(hidden, False, None, survey=True):
            survey.add(each)
        if not survey.text and not (ocr and window is None):
            if window is None or not window.scanned:
                raise _no_text(page_count, ocr)
            return ParsedDocument(
                title=_real_title(meta.get("Title") or "") or file.title,
                sections=Partitioner(None, Counter(), None).add([], [], window.scanned),
                page_count=page_count,
                year=_year(meta.get("CreationDate", "")),
                hidden_dropped=dict(hidden),
            )
        rules, text = survey.rules(), _Text()
        for each in pages(Counter(), False, None):
            rules.mark(each)
            text.add(each, rules.start)
        text.close()
        partitioner = Partitioner(text.vocab if survey.text else None, text.words, text.unheaded())
        windows = _partitions(pages(Counter(), ocr, pictures), rules, partitioner, pictures, window is not None)
        sections, _ = next(windows)
        if window is not None:
            sections += next(windows)[0]
            if not sections:
                raise _no_text(page_count, ocr)
        parsed = _document(meta, file.title, page_count, rules.front, text, sections, pictures, hidden)
    parsed.rest = None if window is not None else windows
    return parsed


def _document(
    meta: dict,
    fallback_title: str,
    page_count: int,
    front: dict,
    text: _Text,
    sections: list[Section],
    pictures: dict[str, FigureImage] | None,
    hidden: Counter[str],
) -> ParsedDocument:
    vocab = text.vocab
    first_page = clean_text(text.first_page, vocab)
    doi = DOI.search(first_page)
    if doi:
        front["doi"] = doi.group(1).rstrip(".,;)")
    if "title" in front:
        typeset = clean_text(front["title"], vocab)
        front["title"] = person_case(typeset, text.words)
        if front["title"] != typeset:
            front["title_typeset"] = typeset  # the capitals the paper prints, beside the title a person writes
    authors = [a.strip() for a in re.split(r"[;,]| and ", meta.get("Author", "")) if a.strip()]
    authors = [a for a in authors if not _PLACEHOLDER_AUTHOR.match(a)]
    title = _real_title(meta.get("Title") or "")
    return ParsedDocument(
        title=title or fallback_title,
        sections=sections,
        authors=authors,
        year=_year(meta.get("CreationDate", "")),
        page_count=page_count,
        first_page=first_page,
        title_from_metadata=bool(title),
        front_matter=front,
        unmapped_glyphs=text.unmapped,
        figures=dict(pictures or {}),
        hidden_dropped=dict(hidden),
    )


class _Spool:
    """A long PDF's bytes in a temporary file, which PDFium opens for each window and reads as it needs: the
    windows are read while the ones before are embedded and written, and the bytes (161 MB for 3,000 pages)
    are not held in memory all that time. The file goes when the last reader of the windows lets it go."""

    PREFIX = "thoth-pdf-"  # then the process id: a file whose process is gone was left by a SIGKILL

    def __init__(self, data: bytes) -> None:
        for left in Path(tempfile.gettempdir()).glob(f"{self.PREFIX}*-*.pdf"):
            pid = left.name.removeprefix(self.PREFIX).split("-", 1)[0]
            if pid.isdigit() and not _running(int(pid)):
                left.unlink(missing_ok=True)
        handle, name = tempfile.mkstemp(prefix=f"{self.PREFIX}{os.getpid()}-", suffix=".pdf")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        self.path = Path(name)
        weakref.finalize(self, os.remove, name)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # no signal sent: only whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _windows(
    spool: _Spool,
    password: str | None,
    stop: threading.Event | None,
    page_count: int,
    hidden: Counter[str],
    ocr: bool,
    pictures: dict[str, FigureImage] | None,
    survey: bool,
) -> Iterator[_Window]:
    """The pages of the PDF in `spool` a window at a time (`_read_window`); the PDF is opened for each window
    (PDFium keeps what it parsed of a document until it closes). `stop` set ends them (Stopped)."""
    first = 1
    while True:
        if stop is not None and stop.is_set():
            raise Stopped
        if first > page_count:
            return
        pdf = _open(spool.path, password)
        try:
            with _collector_paused():
                window = _read_window(pdf, first, WINDOW_PAGES, hidden, ocr, pictures, survey)
        finally:
            pdf.close()
        yield window
        first += len(window.pages)


def _partitions(
    windows: Iterator[_Window],
    rules: _Rules,
    partitioner: Partitioner,
    pictures: dict[str, FigureImage] | None,
    marked: bool,
) -> Iterator[tuple[list[Section], dict[str, FigureImage]]]:
    """Each window's sections and the figures cut from its pages (`marked`: its furniture and headings are,
    the window read once); the partitions held back, at the end."""
    cut = 0  # the figures cut from the windows before
    for window in windows:
        if not marked:
            rules.mark(window)
        mark_floats(window.pages, rules.body, window.heights)
        figures = dict(list((pictures or {}).items())[cut:])
        cut += len(figures)
        yield partitioner.add(window.pages, window.tables, window.scanned), figures
    yield partitioner.close(), {}
