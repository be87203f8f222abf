"""Write small PDFs for the demo and the tests (reportlab, BSD).

- `write_text_pdf`: one page per string, wrapped prose, optional Title/Author and a user password.
- `write_image_only_pdf`: shapes and a raster image, no text layer (a "scanned" document).
- `write_truncated_pdf`: a valid text PDF cut to half its bytes (a corrupt file).
- `write_paper_pdf`: a paper's layout: a large title, author lines with superscript marks, an arXiv
  stamp rotated in the margin, numbered section headings (bold or small caps), figures with labels,
  a running header and page numbers.
- `write_symbol_font_pdf`: one line in a font whose codes map to control characters (TeX's cmsy).
- `write_tables_pdf`: tables as papers set them: ruled (booktabs rules, a header spanning two
  columns), unruled (columns by alignment alone), and a long ruled one running over a page break.
- `write_sentence_table_pdf`: a table whose cells are sentences wrapping over lines, its rules drawn as
  thin images (as some papers' are), a vertical rule after its label column, its caption under it.
- `python -m examples.pdfgen OUT_DIR`: the demo collection (see `DEMO_DOCUMENTS`).

Output is deterministic: every canvas is made with ``invariant=1`` (fixed dates and file id), so the
same call writes the same bytes, and the ingest job's content-derived ids stay stable between runs.

Page text format: paragraphs are separated by blank lines; a single newline inside a paragraph starts
a new line (handy for lists); a paragraph that starts with ``"# "`` is drawn as a bold heading (the
marker itself is not drawn). Text is set in Helvetica, so keep it to Latin-1/cp1252 characters.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen import canvas

__all__ = [
    "DEMO_DOCUMENTS",
    "main",
    "write_demo_pdfs",
    "write_image_only_pdf",
    "write_paper_pdf",
    "write_symbol_font_pdf",
    "write_text_pdf",
    "write_truncated_pdf",
]

PAGE_WIDTH, PAGE_HEIGHT = A4
MARGIN = 72.0  # one inch
BODY_FONT = "Helvetica"
HEADING_FONT = "Helvetica-Bold"
MIN_FONT_SIZE = 6.0
CREATOR = "Thoth examples.pdfgen"


def _paragraphs(text: str) -> list[str]:
    """Split page text into paragraphs at blank lines (whitespace-only lines count as blank)."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line.strip():
            current.append(line.rstrip())
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return paragraphs


def _layout(text: str, size: float) -> tuple[list[tuple[str, str, float, float]], float]:
    """Lay out one page at body font `size`: [(font, line, font_size, advance)], total height used."""
    width = PAGE_WIDTH - 2 * MARGIN
    leading = size * 1.3
    lines: list[tuple[str, str, float, float]] = []
    for i, para in enumerate(_paragraphs(text)):
        gap = 0.0 if i == 0 else leading * 0.6  # extra space between paragraphs
        if para.startswith("# "):
            hsize = size * 1.3
            for j, line in enumerate(simpleSplit(para[2:].strip(), HEADING_FONT, hsize, width) or [""]):
                lines.append((HEADING_FONT, line, hsize, hsize * 1.3 + (gap if j == 0 else 0.0)))
            continue
        first = True
        for raw in para.split("\n"):
            for line in simpleSplit(raw, BODY_FONT, size, width) or [""]:
                lines.append((BODY_FONT, line, size, leading + (gap if first else 0.0)))
                first = False
    return lines, sum(advance for *_, advance in lines)


def _draw_text_page(c: canvas.Canvas, text: str) -> None:
    size = 11.0
    lines, height = _layout(text, size)
    while height > PAGE_HEIGHT - 2 * MARGIN:
        size -= 0.5
        if size < MIN_FONT_SIZE:
            raise ValueError(f"page text does not fit on one A4 page even at {MIN_FONT_SIZE}pt: {text[:60]!r}...")
        lines, height = _layout(text, size)
    y = PAGE_HEIGHT - MARGIN
    for font, line, font_size, advance in lines:
        y -= advance
        c.setFont(font, font_size)
        c.drawString(MARGIN, y, line)


def _new_canvas(
    target: str | Path | io.BytesIO, password: str | None = None, title: str = "", author: str = ""
) -> canvas.Canvas:
    encrypt = None
    if password is not None:
        if not password:
            raise ValueError("password must be a non-empty string")
        # RC4 128-bit (revision 3). 256-bit AES (revision 5) draws random salts from os.urandom, which
        # would make the bytes differ on every run; RC4-128 derives everything from the password and the
        # (invariant) file id. The owner password defaults to the user password.
        encrypt = StandardEncryption(password, strength=128)
    c = canvas.Canvas(
        target if isinstance(target, io.BytesIO) else str(target),
        pagesize=A4,
        invariant=1,
        pageCompression=1,
        encrypt=encrypt,
    )
    c.setCreator(CREATOR)
    # reportlab's defaults are the strings "untitled", "anonymous" and "unspecified"; a parser would take
    # them for real metadata, so unset fields are written empty.
    c.setTitle(title)
    c.setAuthor(author)
    c.setSubject("")
    return c


def _text_pdf_bytes(pages: list[str], title: str | None, author: str | None, password: str | None) -> bytes:
    if isinstance(pages, str):
        raise TypeError("pages must be a list of strings (one per page), not a single string")
    if not pages:
        raise ValueError("pages must not be empty")
    buf = io.BytesIO()
    c = _new_canvas(buf, password, title or "", author or "")
    for text in pages:
        _draw_text_page(c, text)
        c.showPage()
    c.save()
    return buf.getvalue()


def _write(path: str | Path, data: bytes) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return out


def write_text_pdf(
    path: str | Path,
    pages: list[str],
    title: str | None = None,
    author: str | None = None,
    password: str | None = None,
) -> Path:
    """Write a text PDF with one page per string in `pages`, wrapped to the page width.

    `title` / `author` go into the document information dictionary (PDF Title / Author). With
    `password`, the file is encrypted (RC4 128-bit, user password = owner password = `password`):
    readers must supply it to open the file. Raises ValueError if a page's text cannot fit on one page.
    """
    return _write(path, _text_pdf_bytes(pages, title, author, password))


def _raster(width: int = 96, height: int = 64):
    """A small deterministic RGB test pattern (a PIL image; Pillow comes with reportlab)."""
    from PIL import Image

    img = Image.new("RGB", (width, height))
    img.putdata(
        [
            ((x * 255) // (width - 1), (y * 255) // (height - 1), ((x // 8 + y // 8) % 2) * 200)
            for y in range(height)
            for x in range(width)
        ]
    )
    return img


def write_image_only_pdf(path: str | Path, pages: int = 1) -> Path:
    """Write `pages` pages that carry only vector shapes and an inline raster image: no text layer.

    This is what a scan without OCR looks like to a parser: pages exist, text extraction yields "".
    """
    if pages < 1:
        raise ValueError("pages must be >= 1")
    buf = io.BytesIO()
    c = _new_canvas(buf)
    image = _raster()
    for n in range(pages):
        c.setStrokeColorRGB(0.2, 0.2, 0.2)
        c.setFillColorRGB(0.85, 0.88, 0.95)
        c.rect(MARGIN, PAGE_HEIGHT - MARGIN - 120, PAGE_WIDTH - 2 * MARGIN, 120, stroke=1, fill=1)
        c.setFillColorRGB(0.3 + 0.1 * (n % 5), 0.4, 0.6)
        c.circle(PAGE_WIDTH * 0.7, PAGE_HEIGHT / 2 + 20, 60 + 10 * (n % 4), stroke=1, fill=1)
        for i in range(12):  # ruled "lines of text" drawn as strokes, as in a scanned page
            y = MARGIN + 40 + i * 14
            c.line(MARGIN, y, PAGE_WIDTH - MARGIN - (i * 17) % 90, y)
        c.drawInlineImage(image, MARGIN, 290, width=192, height=128)
        c.showPage()
    c.save()
    return _write(path, buf.getvalue())


def write_truncated_pdf(path: str | Path) -> Path:
    """Write the first half of a valid three-page text PDF: a corrupt file no reader can open."""
    data = _text_pdf_bytes(
        [
            "# Truncated sample\n\nThis document was cut in half on purpose to exercise error handling.",
            "Page two of a document whose end, with its cross-reference table and trailer, is missing.",
            "Page three. A parser should record the file as failed and carry on with the next one.",
        ],
        title="Truncated sample",
        author="Thoth examples",
        password=None,
    )
    return _write(path, data[: len(data) // 2])


def write_paper_pdf(
    path: str | Path,
    title: str,
    authors: list[tuple[str, str]],
    pages: list[list[tuple[str, str]]],
    stamp: str | None = None,
    header: str | None = None,
) -> Path:
    """A paper's layout, for the layout reader's tests.

    `authors`: (name, superscript mark) pairs, drawn on one line under the 17pt title, with an
    affiliation line under them. `pages`: per page, (kind, text) items drawn top-down: kind "h1"
    (12pt bold heading), "h2" (10pt bold heading), "sc" (a heading in small caps, as ICLR sets it),
    "figure" (a plot whose bold labels and ticks look like headings; the text is its caption),
    "panels" (two drawings side by side, their titles on one line over them; the text is their caption),
    "table" (a ruled table of results, rows of eight cells and more; the text is its caption, under it),
    "footnote" (8pt, at the foot of the page), "note" (a footnote right under the line before it: its
    number raised in 6pt, its text in 8pt) or "p"
    (10pt body; a "\\n" in the text breaks the line there, so a test can place a hyphen at a line
    end). `stamp` is drawn rotated in the left margin of page one (as arXiv does); `header` at the
    top of every page after the first, and each page gets its number at the bottom.
    """
    buf = io.BytesIO()
    c = _new_canvas(buf)
    width = PAGE_WIDTH - 2 * MARGIN
    for number, items in enumerate(pages, start=1):
        y = PAGE_HEIGHT - MARGIN
        if number == 1:
            c.setFont(HEADING_FONT, 17)
            for line in simpleSplit(title, HEADING_FONT, 17, width):
                y -= 22
                c.drawCentredString(PAGE_WIDTH / 2, y, line)
            y -= 30
            text = c.beginText(MARGIN, y)
            for name, mark in authors:
                text.setFont(BODY_FONT, 11)
                text.textOut(name)
                if mark:
                    text.setFont(BODY_FONT, 7)
                    text.setRise(4)
                    text.textOut(mark)
                    text.setRise(0)
                text.setFont(BODY_FONT, 11)
                text.textOut("     ")
            c.drawText(text)
            y -= 14
            c.setFont(BODY_FONT, 10)
            c.drawString(MARGIN, y, "Example University, Example City")
            y -= 30
            if stamp:
                c.saveState()
                c.translate(30, PAGE_HEIGHT / 2 - 100)
                c.rotate(90)
                c.setFont("Times-Roman", 20)
                c.drawString(0, 0, stamp)
                c.restoreState()
        elif header:
            c.setFont(BODY_FONT, 9)
            c.drawCentredString(PAGE_WIDTH / 2, PAGE_HEIGHT - 40, header)
        for kind, body in items:
            if kind == "sc":
                y -= 8 + 15
                _small_caps(c, MARGIN, y, body)
                continue
            if kind == "figure":
                y = _figure(c, y, body)
                continue
            if kind == "panels":
                y = _panels(c, y, body)
                continue
            if kind == "table":
                y = _table(c, y, body)
                continue
            if kind == "note":  # right under the text, as TeX sets a footnote under a column's last line
                mark, text = body.split(" ", 1)
                y -= 11
                c.setFont(BODY_FONT, 6)
                c.drawString(MARGIN, y + 3, mark)
                c.setFont(BODY_FONT, 8)
                c.drawString(MARGIN + c.stringWidth(mark, BODY_FONT, 6), y, text)
                continue
            if kind == "footnote":  # at the foot of the page, in 8pt
                c.setFont(BODY_FONT, 8)
                c.drawString(MARGIN, 70, body)
                continue
            font, size = {"h1": (HEADING_FONT, 12), "h2": (HEADING_FONT, 10)}.get(kind, (BODY_FONT, 10))
            y -= 8 if kind != "p" else 4
            for raw in body.split("\n"):
                for line in simpleSplit(raw, font, size, width):
                    y -= size * 1.25
                    c.setFont(font, size)
                    c.drawString(MARGIN, y, line)
        c.setFont(BODY_FONT, 10)
        c.drawCentredString(PAGE_WIDTH / 2, 40, str(number))
        c.showPage()
    c.save()
    return _write(path, buf.getvalue())


def _small_caps(c: canvas.Canvas, x: float, y: float, heading: str) -> None:
    """A heading in the body's font and size, in small caps as ICLR sets them: each word's first
    capital at 12pt, the rest as 9.5pt capitals (neither bold nor larger than the body as a whole)."""
    text = c.beginText(x, y)
    for word in heading.split():
        text.setFont(BODY_FONT, 12)
        text.textOut(word[0].upper())
        text.setFont(BODY_FONT, 9.5)
        text.textOut(word[1:].upper() + " ")
    c.drawText(text)


def _figure(c: canvas.Canvas, y: float, caption: str) -> float:
    """A plot: a frame, bold panel labels and axis ticks set apart like headings, its caption under it."""
    top, bottom = y - 10, y - 130
    c.rect(MARGIN + 30, bottom, 200, top - bottom)
    c.setFont(HEADING_FONT, 12)
    c.drawString(MARGIN + 40, top - 20, "ViT-L/16")
    c.drawString(MARGIN + 150, top - 20, "2 Layers")
    c.setFont(BODY_FONT, 8)
    for i, tick in enumerate(["0.2", "0.4", "0.6", "0.8"]):
        c.drawString(MARGIN + 10, bottom + 10 + 28 * i, tick)
    c.drawString(MARGIN + 100, bottom - 12, "q(x)")
    c.setFont(BODY_FONT, 10)
    c.drawString(MARGIN, bottom - 30, caption)
    return bottom - 34


PANEL_TITLES = ("Scaled Dot-Product Attention", "Multi-Head Attention")


def _panels(c: canvas.Canvas, y: float, caption: str) -> float:
    """Two drawings side by side, each titled over it on one line (the titles set far apart), one caption
    under both."""
    top, bottom = y - 26, y - 126
    c.setFont(BODY_FONT, 10)
    for left, title in zip((MARGIN + 20, MARGIN + 250), PANEL_TITLES, strict=True):
        c.rect(left, bottom, 150, top - bottom)
        c.drawString(left, top + 6, title)
    c.drawString(MARGIN, bottom - 24, caption)
    return bottom - 28


_TABLE_ROWS = [
    "Model Resolution Crops Models Top-1 error Top-5 error",
    "GoogLeNet ensemble 224 144 7 - 6.67%",
    "Deep Image low-res 256 - 1 - 7.96%",
    "Deep Image high-res 512 - 1 24.88 7.42%",
    "Deep Image ensemble variable - - - 5.98%",
]


def _table(c: canvas.Canvas, y: float, caption: str) -> float:
    """A table in a ruled frame (its rules touch: one drawing), its caption under it."""
    top = y - 10
    bottom = top - 14 * len(_TABLE_ROWS) - 6
    c.rect(MARGIN + 40, bottom, 360, top - bottom)
    c.line(MARGIN + 40, top - 17, MARGIN + 400, top - 17)  # under the header row, from side to side
    c.setFont(BODY_FONT, 10)
    for i, row in enumerate(_TABLE_ROWS):
        c.drawString(MARGIN + 50, top - 13 - 14 * i, row)
    c.drawString(MARGIN, bottom - 20, caption)
    return bottom - 24


TABLE_PROSE = (
    "The models were trained on the same data and evaluated on the held out test set. We report the "
    "error rates of single models and ensembles, and the number of parameters each one needs. "
)
RULED_TABLE = {
    "caption": "Table 1. Error rates (%) of single models on the validation set.",
    "header": [["model", "error (%)", "", "params"], ["", "top-1", "top-5", ""]],
    "rows": [
        ["VGG-16", "28.07", "9.33", "138M"],
        ["GoogLeNet", "-", "9.15", "7M"],
        ["PReLU-net", "24.27", "7.38", "60M"],
        ["ResNet-50", "22.85", "6.71", "25M"],
        ["ResNet-152", "21.43", "5.71", "60M"],
    ],
}
UNRULED_TABLE = {
    "caption": "Table 2: Exact match on three question answering benchmarks.",
    "header": [["system", "NQ", "WQ", "CT"]],
    "rows": [
        ["BM25 reader", "26.5", "17.7", "21.3"],
        ["Dense retriever", "33.3", "36.4", "30.1"],
        ["Retrieval pretraining", "40.4", "40.7", "42.9"],
    ],
}
LONG_TABLE = {
    "caption": "Table 3. Learning rate sweep: loss per step for every run.",
    "header": [["run", "step", "loss", "accuracy"]],
    "rows": [
        [f"sweep-{i:02d}", str(1000 * (i + 1)), f"{4.0 - i * 0.05:.2f}", f"{50 + i * 0.5:.1f}"] for i in range(60)
    ],
}
_COLUMNS = [0.0, 150.0, 230.0, 310.0]  # each column's left edge, from the table's left
_ROW = 14.0


def _rules(c: canvas.Canvas, left: float, y: float, width: float = 380.0) -> None:
    c.setLineWidth(0.6)
    c.line(left, y, left + width, y)


def _cells(c: canvas.Canvas, left: float, y: float, cells: list[str]) -> None:
    for x, cell in zip(_COLUMNS, cells, strict=True):
        if cell:
            c.drawString(left + x + 4, y, cell)


def _prose(c: canvas.Canvas, y: float, text: str) -> float:
    """`text` set in 10pt lines across the page from `y` down; where the next block may start."""
    c.setFont(BODY_FONT, 10)
    for line in simpleSplit(text, BODY_FONT, 10, PAGE_WIDTH - 2 * MARGIN):
        y -= 12.5
        c.drawString(MARGIN, y, line)
    return y - 8


def write_tables_pdf(path: str | Path) -> Path:
    """Page 1: prose, the ruled table (caption over it, a header "error (%)" over two columns with a
    partial rule under it), prose, the unruled table (caption under it), prose. Pages 2-3: prose, then
    the long table from the foot of page 2 over the break, its header repeated on page 3, then prose."""
    buf = io.BytesIO()
    c = _new_canvas(buf)
    left = MARGIN + 20
    y = _prose(c, PAGE_HEIGHT - MARGIN, TABLE_PROSE * 2)
    c.setFont(BODY_FONT, 9)
    y -= 12
    c.drawString(MARGIN, y, RULED_TABLE["caption"])
    y -= 8
    _rules(c, left, y)
    y -= 11
    c.setFont(BODY_FONT, 9)
    c.drawString(left + _COLUMNS[0] + 4, y - 6, "model")
    c.drawString(left + 185, y, "error (%)")
    c.drawString(left + _COLUMNS[3] + 4, y - 6, "params")
    c.setLineWidth(0.4)
    c.line(left + _COLUMNS[1], y - 3, left + _COLUMNS[3] - 10, y - 3)  # under the spanning header
    y -= _ROW
    _cells(c, left, y, ["", "top-1", "top-5", ""])
    y -= 5
    _rules(c, left, y)
    for row in RULED_TABLE["rows"]:
        y -= _ROW
        _cells(c, left, y, row)
    y -= 6
    _rules(c, left, y)
    y = _prose(c, y - 12, TABLE_PROSE)
    y -= 6
    c.setFont(BODY_FONT, 9)
    for row in [*UNRULED_TABLE["header"], *UNRULED_TABLE["rows"]]:
        y -= _ROW
        _cells(c, left, y, row)
    y -= 20
    c.drawString(MARGIN, y, UNRULED_TABLE["caption"])
    _prose(c, y - 16, TABLE_PROSE)
    c.showPage()

    y = _prose(c, PAGE_HEIGHT - MARGIN, TABLE_PROSE * 3)
    c.setFont(BODY_FONT, 9)
    y -= 12
    c.drawString(MARGIN, y, LONG_TABLE["caption"])
    rows = list(LONG_TABLE["rows"])
    while rows:
        y -= 8
        _rules(c, left, y)
        y -= 11
        c.setFont(BODY_FONT, 9)
        _cells(c, left, y, LONG_TABLE["header"][0])
        y -= 5
        _rules(c, left, y)
        while rows and y - _ROW > MARGIN:
            y -= _ROW
            _cells(c, left, y, rows.pop(0))
        y -= 6
        _rules(c, left, y)
        if rows:
            c.showPage()
            y = PAGE_HEIGHT - MARGIN + 8
    _prose(c, y - 12, TABLE_PROSE)
    c.showPage()
    c.save()
    return _write(path, buf.getvalue())


SENTENCE_TABLE = {  # each sentence wraps over three lines or more: no run of table-like lines
    "caption": "Table 4: Translations of long source sentences by the two models, with the reference.",
    "rows": [
        [
            "Source",
            "An admitting privilege is the right of a doctor to admit a patient to a hospital or a medical "
            "centre to carry out a diagnosis or a procedure, based on his status as a health care worker at "
            "a hospital, as the rules of the hospital and of the state in which it stands allow.",
        ],
        [
            "Reference",
            "The privilege of admission is the right of a physician, by virtue of his status as a member of "
            "the nursing staff of a hospital, to admit a patient to a hospital or to a medical centre in "
            "order to deliver a diagnosis or a treatment to that patient there.",
        ],
        [
            "RNNsearch",
            "A privilege of admission is the right of a doctor to recognise a patient at the hospital or a "
            "medical centre of a diagnosis, or to make a diagnosis according to his state of health, as the "
            "rules of the hospital and of the state in which it stands allow.",
        ],
    ],
}


def write_sentence_table_pdf(path: str | Path) -> Path:
    """One page: prose, the sentence table (a rule between rows, each a thin image; a vertical rule after
    the labels), its caption under it, prose."""
    buf = io.BytesIO()
    c = _new_canvas(buf)
    width = PAGE_WIDTH - 2 * MARGIN
    from PIL import Image

    rule = Image.new("L", (1, 1))  # a black pixel, stretched into each rule

    y = _prose(c, PAGE_HEIGHT - MARGIN, TABLE_PROSE * 2) - 10
    c.setFont(BODY_FONT, 9)
    top = y
    c.drawInlineImage(rule, MARGIN, y, width=width, height=0.4)
    for label, sentence in SENTENCE_TABLE["rows"]:
        c.drawString(MARGIN + 4, y - 10, label)
        for line in simpleSplit(sentence, BODY_FONT, 9, width - 80):
            y -= 11
            c.drawString(MARGIN + 70, y + 1, line)
        y -= 4
        c.drawInlineImage(rule, MARGIN, y, width=width, height=0.4)
    c.drawInlineImage(rule, MARGIN + 64, y, width=0.4, height=top - y)
    c.setFont(BODY_FONT, 10)
    c.drawString(MARGIN, y - 20, SENTENCE_TABLE["caption"])
    _prose(c, y - 30, TABLE_PROSE)
    c.showPage()
    c.save()
    return _write(path, buf.getvalue())


def _raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF from numbered object bodies (1 = catalog), with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def write_symbol_font_pdf(
    path: str | Path, text: str, font_name: str = "CMSY10", codes: dict[str, int] | None = None
) -> Path:
    """One line of `text` in Helvetica renamed `font_name`, whose ToUnicode map sends each character of
    `codes` to that control code: what TeX's symbol fonts (cmsy, cmex) look like to PDFium."""
    codes = codes or {"~": 0x0F}
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n"
        f"{len(codes)} beginbfchar\n"
        + "".join(f"<{ord(ch):02X}> <{code:04X}>\n" for ch, code in codes.items())
        + "endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode()
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
    content = b"BT /F1 12 Tf 72 700 Td (" + escaped + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /" + font_name.encode() + b" /FirstChar 32 /LastChar 126 "
        b"/Widths [" + b" 556" * 95 + b"] /FontDescriptor 7 0 R /ToUnicode 6 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
        b"<< /Type /FontDescriptor /FontName /" + font_name.encode() + b" /Flags 32 /FontBBox [0 -200 1000 900] "
        b"/ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>",
    ]
    return _write(path, _raw_pdf(objects))


# --- The demo collection ------------------------------------------------------------------------------

DEMO_DOCUMENTS: dict[str, dict] = {
    "thoth-ops-report-ingest.pdf": {
        "title": "Thoth operations report: running the ingest job",
        "author": "Maren Holt; Idris Okafor",
        "pages": [
            """# Thoth operations report: running the ingest job

This report is for the people on the Thoth rotation who run, watch and repair the ingest job. It \
describes one complete pass over the example corpus: the Markdown handbook in examples/handbook and \
the small PDF collection that make demo generates into examples/pdfs.

# What the job does

The ingest job is a batch program. It lists the files under a source folder, parses each one into \
partitions (a page of a PDF, a section of a Markdown page), cuts the partitions into chunks, embeds \
every chunk and writes the rows to LanceDB, where the MCP server reads them.

# The four tables

A run touches four LanceDB tables. sources holds one row per corpus, for example the handbook. \
documents holds one row per ingested file. partitions holds one row per PDF page or Markdown section. \
chunks holds the retrievable units, each with its text and its embedding vector.

The row counts are the first thing to check after a run: every file should have a documents row, and \
every document with text should have at least one chunk.""",
            """# Running the job locally

On a workstation the index lives in a plain folder. Point THOTH_DB_URI at it and run the job once per \
source folder:

export THOTH_DB_URI=./.thoth/lancedb
python -m ingest --source examples/handbook
python -m ingest --source examples/pdfs

When THOTH_DB_URI is not set, Thoth uses ./.thoth/lancedb, so the export above only makes the default \
explicit. The same variable accepts a gs://bucket/prefix URI in production, where the job runs as a \
Cloud Run Job and the service reads the same bucket.

# The embedding model

Every chunk is embedded with all-MiniLM-L6-v2, a sentence-transformers model that produces \
384-dimensional vectors. The model comes from an installed Python package, so a local run needs no \
network access and no cloud account. The model name and its dimension are stored with the tables; the \
server compares them with the model it loads before it answers any search.""",
            """# Identity and re-runs

Identity in the index is derived from content. A document's doc_id is the SHA-256 hash of the file's \
bytes, and a chunk's id is a hash of its source, its document, its normalised text and its position. \
Two consequences matter in operations.

First, re-running the job over an unchanged folder writes nothing. In our test pass the second run \
over the handbook finished without a single new row, which is the expected result and a cheap way to \
confirm that a deployment did not corrupt the index.

Second, any change to a file, even one byte, gives it a new doc_id. The job then replaces the rows of \
the old version. A file that has disappeared from the source folder has its rows removed, so deleting \
a page from the handbook and re-running ingest is how a page is retired from search.

# Deterministic inputs

The demo PDFs are generated with fixed dates and a fixed file identifier, so regenerating them gives \
byte-identical files and the same doc_id values. If a regenerated PDF suddenly shows up as changed, \
look for a change in the generator, not in the index.""",
            """# Files that cannot be parsed

Three kinds of broken input turn up in real collections, and the job must survive all of them without \
stopping the run:

An encrypted PDF that needs a password cannot be opened at all. A scanned PDF without OCR opens \
normally but has no text layer, so every page yields an empty string. A truncated PDF, typically a \
failed upload cut off halfway, is missing its cross-reference table and trailer and cannot be read.

The documents table has a status column and an error column for exactly this case. A file that fails \
is recorded with its error message, the remaining files are processed as usual, and the problem is \
visible in the table instead of in a stack trace in the job log.

# What to do about them

An encrypted file has to be replaced by an unencrypted copy from its owner. A scanned file needs OCR \
before it can be searched. A truncated file should be uploaded again; check its size against the \
original before retrying.""",
            """# After the run: a five-minute checklist

1. Start the server with python -m thoth.mcp.server. It listens on port 8080 unless the PORT \
environment variable says otherwise, and it speaks MCP at the /mcp path.
2. Call list_tools and confirm that search_handbook, list_topics and list_tools are listed. The \
THOTH_TOOLSETS variable controls which tool surfaces are switched on; the handbook surface is the one \
the example corpus needs.
3. Call list_topics and compare the sections with the handbook folders.
4. Call search_handbook with a query whose answer you know, for example "how to request time off", \
and check that the top result is the time-off page of the handbook.

# Error THOTH-E1042

If the server answers searches with error THOTH-E1042, the index was built with a different embedding \
model than the one the server loaded. Vectors from two different models cannot be compared, so the \
server refuses to search rather than return nonsense. Re-run the ingest job with the server's model, \
all-MiniLM-L6-v2, or point the server at the index that matches its model.""",
        ],
    },
    "retrieval-evaluation-notes.pdf": {
        "title": "Retrieval evaluation notes: BM25, dense and hybrid search",
        "author": "Ana Lindqvist",
        "pages": [
            """# Retrieval evaluation notes: BM25, dense and hybrid search

These notes explain the three ways Thoth can rank chunks for a query and how we judge whether a \
ranking is good. Thoth searches the chunks table in three ways: by keywords with BM25, by meaning \
with dense vectors, and by a hybrid of both that merges the two rankings with reciprocal rank fusion.

No single method wins everywhere. Keyword search is precise when the query contains a rare exact \
token. Vector search is forgiving when the query uses different words from the text. Hybrid search \
exists because real questions mix the two kinds.

# Why the handbook needs both

The Thoth handbook contains identifiers such as THOTH-E1042, THOTH_DB_URI and port 8080, next to \
ordinary prose about on-call handovers and time off. A person asking about an error code types the \
code; a person asking about a holiday may write "vacation" when the page says "time off". A good \
ranking has to serve both questions from the same index.""",
            """# BM25: ranking by keywords

BM25 scores a chunk by the query terms it contains. Each matching term contributes its inverse \
document frequency, so rare terms count for more than common ones, multiplied by a saturating function \
of how often the term occurs in the chunk. Two parameters shape the score: k1 controls how quickly \
repeated occurrences stop adding to it, and b controls how strongly long chunks are penalised. The \
usual defaults are k1 = 1.2 and b = 0.75.

# Where BM25 is strong

BM25 is the method of choice for exact identifiers. A query for THOTH-E1042 matches the one chunk that \
mentions the code, and because the token is rare its inverse document frequency is high, so that \
chunk ranks first. The same holds for environment variable names and command-line flags.

# Where BM25 fails

BM25 knows nothing about meaning. A query for "vacation policy" scores zero against a page that only \
says "requesting time off", because no term overlaps. It also cannot tell that "start the server" and \
"launch the service" ask the same thing.""",
            """# Dense retrieval: ranking by meaning

Dense retrieval embeds the query and every chunk into the same vector space and ranks chunks by \
cosine similarity to the query vector. Thoth uses all-MiniLM-L6-v2, which maps text to 384-dimensional \
vectors. The model reads at most 256 word pieces; longer input is cut off, which is one reason the \
ingest job keeps chunks well below that length.

# Where dense retrieval is strong

Paraphrases land close together in the vector space. "How do I take a day off?" and "requesting time \
off" are near neighbours even though they share almost no words, so the time-off page ranks high for \
either wording.

# Where dense retrieval fails

Rare identifiers are poorly represented. The word-piece tokenizer splits THOTH-E1042 into several \
fragments, and the resulting vector sits close to any chunk about errors in general. A query for one \
error code can therefore return the chunk for a different code. This is the failure that hybrid \
search is meant to repair.""",
            """# Hybrid search with reciprocal rank fusion

Hybrid search runs BM25 and vector search separately and merges the two ranked lists with reciprocal \
rank fusion (RRF), introduced by Cormack, Clarke and Buettcher in 2009. Each chunk receives the sum, \
over the lists it appears in, of 1 / (k + rank), with ranks starting at 1. The constant k is usually \
60; it damps the influence of the very top positions.

# A worked example

Suppose chunk A is ranked 1st by BM25 and 3rd by vector search. Its fused score is 1/61 + 1/63, which \
is 0.016393 + 0.015873 = 0.032266. Chunk B is ranked 2nd by vector search and does not appear in the \
BM25 list at all; its score is 1/62 = 0.016129. Chunk A wins because both methods agree that it is \
relevant, even though neither placed it first by a wide margin.

# Why ranks and not scores

BM25 scores are unbounded and depend on the query length, while cosine similarities lie between -1 \
and 1. Adding them would need a normalisation that changes from query to query. RRF uses only the \
positions, so it needs no tuning beyond k and behaves the same for every query.""",
            """# Measuring a ranking

We judge rankings against a query set: questions written by hand, each with the chunk or page that \
answers it. Three measures are enough for day-to-day work.

Recall at 10 is the fraction of queries whose answer appears anywhere in the top 10 results. It tells \
us whether the answer is reachable at all.

Mean reciprocal rank (MRR) averages 1 / rank of the first correct result. A query answered at rank 4 \
contributes 0.25; a query answered at rank 1 contributes 1.0; a miss contributes 0.

nDCG at 10 rewards placing relevant results early with a logarithmic discount, and it handles queries \
with more than one relevant chunk.

# Writing good test queries

Write the query the way a user would, not by copying a sentence from the page. Include queries with \
exact identifiers (an error code, a variable name) and queries that paraphrase (asking about a \
vacation when the page says time off). Keep the set under version control next to the corpus, so a \
change to the handbook and a change to the expected answers travel together.""",
        ],
    },
    "raptor-trees-explained.pdf": {
        "title": "RAPTOR trees explained",
        "author": "Tomasz Weber",
        "pages": [
            """# RAPTOR trees explained

RAPTOR stands for Recursive Abstractive Processing for Tree-Organized Retrieval. The method was \
published by Sarthi and colleagues at ICLR 2024. It answers a weakness of plain chunk retrieval: a \
question about a whole document, such as "what is this report about?", has no single chunk that \
answers it, because the answer is spread across many pages.

# The idea in one paragraph

RAPTOR builds a tree on top of the chunks. The chunks themselves are the leaves, at level 0. Similar \
chunks are grouped into clusters, each cluster is summarised into a new piece of text, and those \
summaries become the nodes of level 1. The process repeats on the summaries until only a handful of \
nodes remain. High levels describe broad themes; low levels keep the exact details.""",
            """# Building one layer

Each layer is built in four steps. First, every node of the level below is embedded. Second, the \
embeddings are clustered. The original paper reduces their dimension with UMAP and then fits a \
Gaussian mixture model, choosing the number of clusters with the Bayesian information criterion. \
Because a Gaussian mixture gives soft assignments, one chunk may belong to more than one cluster.

Third, a language model writes a summary of the texts in each cluster. Fourth, the summaries are \
embedded, and they become the nodes of the new level, each remembering its children.

# When to stop

Building stops when a level has too few nodes to cluster meaningfully, or when clustering no longer \
reduces the number of nodes. For a corpus of a few hundred chunks the tree is usually two or three \
levels high.

# Where the cost goes

Summarising is by far the most expensive step, because it calls a language model once per cluster. \
Embedding and clustering are cheap in comparison.""",
            """# Querying the tree

The paper compares two ways of searching a RAPTOR tree. Tree traversal starts at the top level, picks \
the most similar nodes, and descends into their children level by level. The collapsed tree method \
puts the nodes of all levels into one pool and ranks them together by similarity to the query.

In the paper's experiments the collapsed tree performed better, because it lets each question pick \
its own level of detail: a broad question matches a summary node, while a question about a specific \
fact still matches a leaf chunk directly.

# Citations

A summary node has no page of its own. To cite it, follow its children down to the leaves and cite \
the pages of the leaf chunks. Every answer built from a summary can therefore still be traced back to \
the exact pages it came from.""",
            """# Keeping a tree up to date

The tree depends on its leaves. When a document changes, its chunks change, and every summary above \
them is stale. The simplest correct policy is to rebuild the layers of a source whenever its chunks \
change, and to leave the trees of unchanged sources alone.

Giving every summary node an identifier derived from the identifiers of its children makes rebuilds \
cheap to check: if the children are the same, the node id is the same, and an unchanged summary need \
not be written again.

# When a tree is worth it

A tree pays off for long documents and broad questions: a 40-page report, a set of papers on one \
topic, a handbook read as a whole. For short pages and precise questions, ordinary hybrid search over \
the chunks is already the right tool, and the summaries add cost without adding answers.""",
        ],
    },
}


def write_demo_pdfs(out_dir: str | Path) -> list[Path]:
    """Write the demo collection (`DEMO_DOCUMENTS`) into `out_dir`; returns the paths written."""
    out = Path(out_dir)
    return [
        write_text_pdf(out / name, doc["pages"], title=doc["title"], author=doc["author"])
        for name, doc in DEMO_DOCUMENTS.items()
    ]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m examples.pdfgen OUT_DIR", file=sys.stderr)
        return 2
    for path in write_demo_pdfs(args[0]):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
