"""Parsers turn one file's bytes into sections (pages, sections under headings) of blocks (text, code, tables).

`parse(key, data)` picks the parser by file extension (Markdown, plain text, PDF, HTML, DOCX, Jupyter
notebooks, source code), or by `fmt` for a workshop unit or a crawled web page (`fmt="html"`). A file that cannot be
read raises `ParseError` with a reason meant for people (it is stored in the
`documents` table and printed in the run summary).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from thoth.errors import ThothError


class ParseError(ThothError):
    """The file cannot be ingested; str(error) is the reason."""


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


MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown")
PDF_SUFFIXES = (".pdf",)
TEXT_SUFFIXES = (".txt",)
HTML_SUFFIXES = (".html", ".htm")
DOCX_SUFFIXES = (".docx",)
NOTEBOOK_SUFFIXES = (".ipynb",)
# suffix -> the language name fenced Markdown blocks use (what qurio_search's `language` filter matches)
CODE_LANGUAGES = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "jsx",
    ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin",
    ".scala": "scala", ".rb": "ruby", ".php": "php", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".hpp": "cpp", ".cs": "csharp", ".swift": "swift", ".sh": "bash", ".bash": "bash", ".sql": "sql",
    ".r": "r", ".lua": "lua", ".tf": "hcl",
}  # fmt: skip
CODE_SUFFIXES = tuple(CODE_LANGUAGES)
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES + PDF_SUFFIXES + TEXT_SUFFIXES + HTML_SUFFIXES + DOCX_SUFFIXES
SUPPORTED_SUFFIXES += NOTEBOOK_SUFFIXES + CODE_SUFFIXES
WORKSHOP_FORMAT = "workshop"  # a workshop unit's `SourceObject.format`: a bundle of files, not one suffix
HTML_FORMAT = "html"  # a crawled page's `SourceObject.format`: its URL need not end in .html


def is_supported(key: str) -> bool:
    return PurePosixPath(key).suffix.lower() in SUPPORTED_SUFFIXES


def decode_text(data: bytes) -> str:
    """UTF-8 text (a BOM is dropped); anything else is a ParseError."""
    if not data.strip():
        raise ParseError("empty file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text (undecodable byte at offset {exc.start})") from None


def parse(
    key: str,
    data: bytes,
    *,
    pdf_password: str | None = None,
    fmt: str = "",
    pdf_ocr: bool = False,
    base_url: str | None = None,
    pdf_figures: bool = False,
) -> ParsedDocument:
    """Parse one source object; `fmt` names a parser when the key's suffix does not (e.g. "workshop").

    The PDF and workshop parsers (and their libraries) load on first use: a server that only ever
    ingests text never loads them. Whatever the format, zero-width and bidi control characters leave
    the text here (unseen.py), counted with what the parser itself left out.
    """
    parsed = _parse(
        key, data, pdf_password=pdf_password, fmt=fmt, pdf_ocr=pdf_ocr, base_url=base_url, pdf_figures=pdf_figures
    )
    _drop_invisible_chars(parsed)
    return parsed


def _drop_invisible_chars(parsed: ParsedDocument) -> None:
    """The parsed text without invisible characters (unseen.py); those of the blocks and of each distinct
    heading are counted (a title and a section's stored body repeat them)."""
    from thoth.writes.parsers.unseen import drop_invisible_chars

    hidden: Counter[str] = Counter(parsed.hidden_dropped)
    headings: dict[str, str] = {}
    for section in parsed.sections:
        for block in section.blocks:
            block.text = drop_invisible_chars(block.text, hidden)
        for heading in section.heading_path:
            if heading not in headings:
                headings[heading] = drop_invisible_chars(heading, hidden)
        section.heading_path = [headings[h] for h in section.heading_path]
        if section.body is not None:
            section.body = drop_invisible_chars(section.body, Counter())
    parsed.title = drop_invisible_chars(parsed.title, Counter())
    parsed.first_page = drop_invisible_chars(parsed.first_page, Counter())
    parsed.hidden_dropped = {reason: n for reason, n in hidden.items() if n}


def _parse(
    key: str,
    data: bytes,
    *,
    pdf_password: str | None,
    fmt: str,
    pdf_ocr: bool,
    base_url: str | None,
    pdf_figures: bool,
) -> ParsedDocument:
    from thoth.writes.parsers import markdown, text

    suffix = PurePosixPath(key).suffix.lower()
    stem = PurePosixPath(key).stem
    if fmt == WORKSHOP_FORMAT:
        from thoth.writes.parsers import workshop

        return workshop.parse(data)
    if fmt == HTML_FORMAT or suffix in HTML_SUFFIXES:
        from thoth.writes.parsers import html

        return html.parse(data, fallback_title=stem, base_url=base_url)
    if suffix in PDF_SUFFIXES:
        from thoth.writes.parsers import pdf

        return pdf.parse(data, fallback_title=stem, password=pdf_password, ocr=pdf_ocr, figures=pdf_figures)
    if suffix in MARKDOWN_SUFFIXES:
        return markdown.parse(decode_text(data), fallback_title=stem)
    if suffix in TEXT_SUFFIXES:
        return text.parse(decode_text(data), fallback_title=stem)
    if suffix in DOCX_SUFFIXES:
        from thoth.writes.parsers import docx

        return docx.parse(data, fallback_title=stem)
    if suffix in NOTEBOOK_SUFFIXES:
        from thoth.writes.parsers import notebook

        return notebook.parse(data, fallback_title=stem)
    if suffix in CODE_SUFFIXES:
        from thoth.writes.parsers import code

        return code.parse(decode_text(data), key)
    raise ParseError(f"unsupported file type {suffix or '(none)'}; supported: {', '.join(SUPPORTED_SUFFIXES)}")


def parser_version(key: str, fmt: str = "") -> str:
    """The version of the parser that reads `key`; '' for parsers that never changed their output.

    It is stored with each document: a run over unchanged files re-parses those an older parser
    read, once (thoth/writes/writer.py), so a better parser reaches an existing index.
    """
    if not fmt and PurePosixPath(key).suffix.lower() in PDF_SUFFIXES:
        from thoth.writes.parsers.pdf import PARSER_VERSION

        return PARSER_VERSION
    return ""
