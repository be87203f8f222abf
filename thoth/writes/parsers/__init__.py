"""Parsers turn one file's bytes into sections (pages, sections under headings) of blocks (text, code, tables).

`parse(key, data)` picks the parser from the table `thoth.formats.FORMATS` by file extension (Markdown, plain
text, PDF, HTML, DOCX, Jupyter notebooks, source code), or by `fmt` for a workshop unit or a crawled web page
(`fmt="html"`): a new format is one row there and one module here. A file that cannot be read raises `ParseError`
with a reason meant for people (it is stored in the `documents` table and printed in the run summary).
"""

from __future__ import annotations

import importlib
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from thoth.errors import ThothError
from thoth.formats import FORMATS, Format
from thoth.writes.parsers.unseen import drop_invisible_chars


class ParseError(ThothError):
    """The file cannot be ingested; str(error) is the reason."""


class Stopped(Exception):
    """The run was asked to stop (SIGTERM) while a long file was being read: the file is left for the next run."""


@dataclass
class Block:
    text: str
    kind: str = "text"  # text | code | table | diff | references | caption | figure | algorithm | footnote | ocr
    language: str = ""
    figure: str = ""  # a figure's caption (kind figure): the name of its picture in `ParsedDocument.figures`
    # PDFs: where the block's lines are printed, in order: (page, left, bottom, right, top, end) per line, `end`
    # the share of the block's text (0..1) up to that line's end, so a chunk cut from part of it finds its lines
    boxes: tuple[tuple[int, float, float, float, float, float], ...] = ()


@dataclass
class Section:
    """A part of a parsed file (a page, a section under a heading, a workshop step's file) that chunks
    are cut from; the writer stores each as a `thoth.records.Partition`."""

    kind: str  # section | page
    blocks: list[Block]
    heading_path: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None
    # Workshop sections (thoth/writes/parsers/workshop.py): their place in the workshop and the file they show.
    exercise_number: int | None = None
    step_number: int | None = None
    path: str = ""
    is_diff: bool = False
    body: str | None = None  # the text to store when it should read differently from the joined blocks
    ocr_confidence: float | None = None  # a PDF page read by OCR: the recogniser's confidence, 0..1

    @property
    def text(self) -> str:
        if self.body is not None:
            return self.body
        return "\n\n".join(b.text for b in self.blocks)


@dataclass
class ParsedDocument:
    title: str
    sections: list[Section]
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    page_count: int | None = None
    url: str | None = None
    first_page: str = ""  # the first page's text, line by line (PDFs): BibTeX guesses title and authors from it
    title_from_metadata: bool = False  # the title is the file's own (PDF Title, front matter), not a guess
    # PDFs: what the first page's layout says: title, authors, eprint, primary_class, year (the arXiv
    # id's), arxiv_version, arxiv_date, doi. It beats the metadata, which is often empty or a file name.
    front_matter: dict = field(default_factory=dict)
    unmapped_glyphs: int = 0  # PDFs: glyphs the page shows that no Unicode was found for (kept as U+FFFD)
    figures: dict = field(default_factory=dict)  # PDFs: picture name -> figures.FigureImage
    # characters of text left out because a person never sees them, by reason (docs/security.md)
    hidden_dropped: dict[str, int] = field(default_factory=dict)
    # A PDF longer than a window of pages (thoth/writes/parsers/pdf): `sections` and `figures` are its first
    # window's; the others' (sections, figures) come from this, read as it is iterated, the last one's
    # `hidden_dropped` counted in once it is.
    rest: Iterator[tuple[list[Section], dict]] | None = None

    def whole(self) -> ParsedDocument:
        """All of it at once: the windows of `rest` read into `sections` and `figures` (benchmarks, tests)."""
        for sections, figures in self.rest or ():
            self.sections += sections
            self.figures.update(figures)
        self.rest = None
        return self


_BY_NAME = {f.name: f for f in FORMATS}
_BY_SUFFIX = {suffix: f for f in FORMATS for suffix in f.suffixes}
WORKSHOP_FORMAT = "workshop"
HTML_FORMAT = "html"


@dataclass(frozen=True)
class RawFile:
    """One file as its parser gets it: the key, the bytes, and what some formats read besides."""

    key: str
    data: bytes
    pdf_password: str | None = None
    pdf_ocr: bool = False  # read pages without a text layer by OCR
    pdf_figures: bool = False  # cut figures out as pictures
    base_url: str | None = None  # a crawled page's URL: its relative links resolve against it
    stop: threading.Event | None = None  # set: a long PDF's reading ends between its windows (Stopped)

    @property
    def title(self) -> str:
        """The title when the file names none: its name without the suffix."""
        return PurePosixPath(self.key).stem

    def text(self) -> str:
        """The bytes as UTF-8 text (a BOM is dropped); anything else is a ParseError."""
        if not self.data.strip():
            raise ParseError("empty file")
        try:
            return self.data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ParseError(f"not UTF-8 text (undecodable byte at offset {exc.start})") from None


def format_of(key: str, fmt: str = "") -> Format | None:
    """The format named by `fmt`, else by the key's suffix; None when Thoth does not read it."""
    return _BY_NAME.get(fmt) or _BY_SUFFIX.get(PurePosixPath(key).suffix.lower())


def content_kind(keys: list[str]) -> str | None:
    """What a collection of these files is: a handbook if any is Markdown, else pdf if any is a PDF, else text
    (None: no files, the collection keeps the kind it has)."""
    kinds = {found.kind for found in map(format_of, keys) if found}
    return next((kind for kind in ("handbook", "pdf") if kind in kinds), "text") if keys else None


def is_supported(key: str) -> bool:
    return format_of(key) is not None


def parse(key: str, data: bytes, *, fmt: str = "", **options: Any) -> ParsedDocument:
    """Parse one source object with its format's parser (`format_of`); `options` are RawFile's fields. Whatever
    the format, invisible characters leave the text here (unseen.py), counted with what the parser left out."""
    found = format_of(key, fmt)
    if found is None:
        suffix = PurePosixPath(key).suffix.lower() or "(none)"
        raise ParseError(f"unsupported file type {suffix}; supported: {', '.join(_BY_SUFFIX)}")
    parser = importlib.import_module(f"{__name__}.{found.name}")
    parsed = parser.read(RawFile(key, data, **options))
    parsed.title = drop_invisible_chars(parsed.title, Counter())
    parsed.first_page = drop_invisible_chars(parsed.first_page, Counter())
    hidden: Counter[str] = Counter(parsed.hidden_dropped)
    headings: dict[str, str] = {}
    _drop_invisible_chars(parsed, parsed.sections, hidden, headings)
    if parsed.rest is not None:  # each later window as it is read
        parsed.rest = ((_drop_invisible_chars(parsed, s, hidden, headings), figures) for s, figures in parsed.rest)
    return parsed


def _drop_invisible_chars(
    parsed: ParsedDocument, sections: list[Section], hidden: Counter[str], headings: dict[str, str]
) -> list[Section]:
    """`sections` without invisible characters (unseen.py); those of the blocks and of each distinct heading
    (`headings`: those seen, as they read without) are counted in `hidden`, and so in `parsed.hidden_dropped`
    (a title and a section's stored body repeat them)."""
    for section in sections:
        for block in section.blocks:
            block.text = drop_invisible_chars(block.text, hidden)
        for heading in section.heading_path:
            if heading not in headings:
                headings[heading] = drop_invisible_chars(heading, hidden)
        section.heading_path = [headings[h] for h in section.heading_path]
        if section.body is not None:
            section.body = drop_invisible_chars(section.body, Counter())
    parsed.hidden_dropped = {reason: n for reason, n in hidden.items() if n}
    return sections


def parser_version(key: str, fmt: str = "") -> str:
    """The version of the parser that reads `key` (stored with each document: a run over unchanged files
    re-parses those an older parser read, once, thoth/writes/writer.py); '' for parsers never changed."""
    found = format_of(key, fmt)
    return found.version if found else ""
