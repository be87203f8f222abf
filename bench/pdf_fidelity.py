"""PDF text fidelity: what PDFium hands over versus what Thoth's chunks hold, and BibTeX against the truth.

    python -m bench.pdf_fidelity [--data ../shared/data/pdfs]   (also run by `python -m bench.pdfs`)

Per folder (papers, edge cases), over the chunks the ingest job would write (the real parser and chunker):
- chunks holding a Unicode `Cc` character other than newline and tab;
- line-break hyphens in PDFium's raw text (U+0002/U+FFFE, or "-" at a line end before a lower-case
  letter), and words still split by one in the chunks ("knowl- edge", or the raw marker);
- furniture lines: running headers/footers (the same non-numeric line first or last on at least 40%
  of a file's pages, and at least 3) and arXiv stamps in PDFium's raw text, and how many of them are
  still in the chunks of their page;
- BibTeX of the dev papers: title, first author, year and arXiv id against bench/data/papers_bibtex.tsv,
  written by hand from the papers' first pages;
- per dev paper, against bench/data/papers_sections.tsv (each paper's headings, written by hand from
  the PDF): chunks whose section is one of the paper's headings (an empty one only on page one),
  chunks holding a numbered heading of the paper inside their text (straddling), captions
  ("Figure 2: ") spliced into the running text's chunks, interrupted sentences (those captions plus
  sentences cut at a page break: a page's text ending mid-sentence, the next page's going on in lower
  case, in two partitions under one heading, and words cut by a line-break hyphen that run on, in the
  running text, into something other than their continuation: a table's text, "ap-Model", or a
  footnote, "us-12All"), whether the
  reference list is marked, arXiv ids of the PDF's text kept in the chunks, letters and digits of
  the PDF's text missing from the parsed text (furniture lines and page numbers left out, also a page
  number PDFium glued to the page's last line after a line-break hyphen), and
  glyphs without Unicode (kept as U+FFFD); reference entries that give the cited work's BibTeX;
- tables, against bench/data/papers_tables.json (every table of the dev papers, written down by hand
  from the printed pages: caption, columns, and the body rows of most): tables found as chunks of
  content type `table` that start with their caption; of those written down cell by cell, rows and
  columns as printed, and numeric cells in the right row and column (the Markdown table of the chunks,
  header rows left out, a long table's chunks joined); rows of a table (two numbers or more, in order)
  inside another table's chunks.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium

from thoth.bibtex import Citation, parse_reference
from thoth.config import Settings
from thoth.embed import get_tokenizer
from thoth.writes.chunking import Chunker
from thoth.writes.parsers import ParseError, parse
from thoth.writes.parsers.pdf.tables import is_number
from thoth.writes.parsers.pdf.text import has_controls
from thoth.writes.prepare import citation_of

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs"
TRUTH = Path(__file__).resolve().parent / "data" / "papers_bibtex.tsv"
SECTIONS = Path(__file__).resolve().parent / "data" / "papers_sections.tsv"
TABLES = Path(__file__).resolve().parent / "data" / "papers_tables.json"
_CAPTION_IN_TEXT = re.compile(r"\b(?:Figure|Table|Algorithm) \d{1,2}: ")  # a caption spliced into running text
_ARXIV_ID = re.compile(r"(?:arXiv:\s*|abs/)(\d{4}\.\d{4,5})", re.I)
_RAW_BREAK = re.compile(r"[\x02\ufffe]|[^\W\d_]-\r?\n[a-z]")
_SPLIT_WORD = re.compile(r"[\x02\ufffe]|[^\W\d_]{2}- [a-z]{2}")
_STAMP = re.compile(r"arXiv:\d{4}\.\d{4,5}v\d+\s*\[[\w.-]+\]\s*\d{1,2}\s+\w+\s+\d{4}")  # the margin stamp


@dataclass
class Row:
    files: int = 0
    chunks: int = 0
    control_chunks: int = 0
    raw_control_pages: int = 0
    raw_breaks: int = 0
    split_words: int = 0
    furniture: int = 0
    furniture_left: int = 0
    controls: Counter = field(default_factory=Counter)


def _raw_pages(data: bytes, password: str | None) -> list[str]:
    pdf = pdfium.PdfDocument(data, password=password)
    try:
        pages = []
        for i in range(len(pdf)):
            textpage = pdf[i].get_textpage()
            pages.append(textpage.get_text_bounded() or "")
            textpage.close()
        return pages
    finally:
        pdf.close()


def _furniture(pages: list[str]) -> list[tuple[int, str]]:
    """(page, line) for running headers/footers and arXiv stamps in PDFium's raw text."""
    edges: dict[str, set[int]] = {}
    found: list[tuple[int, str]] = []
    for number, text in enumerate(pages, start=1):
        lines = [x.strip() for x in text.splitlines() if x.strip()]
        for line in lines[:1] + lines[-1:]:
            if re.search(r"[^\W\d_]{3}", line):
                edges.setdefault(re.sub(r"\d+", "#", line), set()).add(number)
        found += [(number, stamp.group(0)) for line in lines for stamp in [_STAMP.search(line)] if stamp]
    for number, text in enumerate(pages, start=1):
        for line in {x.strip() for x in text.splitlines()}:
            key = re.sub(r"\d+", "#", line)
            if key in edges and len(edges[key]) >= max(3, 0.4 * len(pages)) and number in edges[key]:
                found.append((number, line))
    return found


@dataclass
class Paper:
    chunks: int = 0
    section_right: int = 0
    straddling: int = 0
    floats_in_text: int = 0
    page_breaks_cut: int = 0
    hyphens_cut: int = 0
    ref_entries: int = 0  # reference-list entries, and those that give a cited work's BibTeX
    ref_cited: int = 0
    references_marked: bool = False
    arxiv_ids: int = 0
    arxiv_kept: int = 0
    dropped: int = 0
    unmapped: int = 0
    tables: list[str] = field(default_factory=list)  # the text of its table chunks, in order

    @property
    def interrupted(self) -> int:
        return self.floats_in_text + self.page_breaks_cut + self.hyphens_cut


def _norm(text: str) -> str:
    return " ".join(text.replace("’", "'").casefold().split())


def _letters(text: str) -> Counter:
    """Letters and digits, accents and case aside (headings are recased, accents composed)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return Counter(c for c in bare.casefold() if c.isalnum() and unicodedata.category(c) != "Lm")  # "ˆ" is an accent


_RAW_HYPHEN = re.compile(r"(\S+ \S+ [^\W\d_]+)[\x02\ufffe](\S*)")  # two words, the cut word's head, what follows
_GLUED_MARK = re.compile(r"^\d{1,2}[A-Z][a-z]")  # a footnote's number glued to its first word: "12All"


def _hyphens_cut(pages: list[str], text: str) -> int:
    """Words cut by a line-break hyphen (PDFium's U+0002) that the running text never continues as PDFium
    drew them (joined, or on in lower case, or with what PDFium drew after the hyphen) but with a capital
    or a digit: "also ap-" then a table's "Model" (PDFium drew the page number after it), or a footnote's
    mark, "us-12All". A float cut the sentence."""
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    cut = 0
    for page in pages:
        for m in _RAW_HYPHEN.finditer(" ".join(unicodedata.normalize("NFKC", page).split())):
            found = [(x.group(1), x.group(2)) for x in re.finditer(re.escape(m.group(1)) + r"(-\s*|)(\S+)", text)]
            good = any(a[:1].islower() or a == m.group(2) and not _GLUED_MARK.match(a) for _, a in found)
            cut += not good and any(hyphen for hyphen, _ in found)
    return cut


_OPEN_END = re.compile(r"[^.!?:\"'”’)\]]\s*$")


def _page_breaks_cut(sections) -> int:
    """Sentences cut at a page break: running text under one heading that stops mid-sentence at a
    page's end and goes on in lower case at the next page's start, in two partitions."""
    cut = 0
    for prev, nxt in zip(sections, sections[1:], strict=False):
        if not (prev.blocks and nxt.blocks) or prev.heading_path != nxt.heading_path:
            continue
        if prev.blocks[0].kind != "text" or nxt.blocks[0].kind != "text":
            continue
        head = nxt.blocks[0].text.lstrip()
        if nxt.page_start == (prev.page_end or 0) + 1 and _OPEN_END.search(prev.blocks[0].text) and head[:1].islower():
            cut += 1
    return cut


def _paper(doc, chunks, pages: list[str], headings: list[str]) -> Paper:
    truth = {_norm(h) for h in headings}
    numbered = [_norm(h) for h in headings if h[:1].isdigit()]
    out = Paper(chunks=len(chunks), unmapped=getattr(doc, "unmapped_glyphs", 0))
    for chunk in chunks:
        path = doc.sections[chunk.partition_index].heading_path
        out.section_right += _norm(path[-1]) in truth if path else chunk.page_start == 1
        own = _norm(path[-1]) if path else ""
        out.straddling += any(h in _norm(chunk.text) and h != own for h in numbered)
        out.references_marked |= chunk.content_type == "references"
        if chunk.content_type == "text":
            out.floats_in_text += len(_CAPTION_IN_TEXT.findall(chunk.text))
    out.page_breaks_cut = _page_breaks_cut(doc.sections)
    running = "\n".join(b.text for s in doc.sections for b in s.blocks if b.kind == "text")
    out.hyphens_cut = _hyphens_cut(pages, running)
    entries = [e for s in doc.sections for b in s.blocks if b.kind == "references" for e in b.text.splitlines()]
    out.ref_entries, out.ref_cited = len(entries), sum(parse_reference(e) is not None for e in entries)
    text = "\n".join(c.text for c in chunks)
    own_id = (doc.front_matter or {}).get("eprint")
    ids = {m.group(1) for page in pages for m in _ARXIV_ID.finditer(page)} - {own_id}
    out.arxiv_ids, out.arxiv_kept = len(ids), sum(i in text for i in ids)
    furniture = {line for _, line in _furniture(pages)}
    raw = _letters(
        "\n".join(
            x
            for number, page in enumerate(pages, start=1)
            for x in _page_number_after_hyphen(page, number).splitlines()
            if x.strip() not in furniture and not x.strip().isdigit()
        )
    )
    parsed = _letters("\n".join(s.text + " " + " ".join(s.heading_path) for s in doc.sections))
    out.dropped = sum(max(0, n - parsed[c]) for c, n in raw.items())
    return out


def _page_number_after_hyphen(page: str, number: int) -> str:
    """The page's text without its page number where PDFium glued that to the last line: after a
    line-break hyphen it writes no line break ('In addition, high\x022' ends page 2)."""
    return re.sub(rf"([\x02\ufffe]){number}\s*$", r"\1", page)


def measure(data: Path, password: str | None = None) -> tuple[dict[str, Row], dict[str, Citation], dict[str, Paper]]:
    chunker = Chunker(get_tokenizer(Settings.from_env()))
    rows: dict[str, Row] = {}
    fields: dict[str, Citation] = {}
    papers: dict[str, Paper] = {}
    headings = _sections()
    for path in sorted(data.rglob("*.pdf")):
        group = path.parent.name
        row = rows.setdefault(group, Row())
        raw = path.read_bytes()
        try:
            doc = parse(path.name, raw, pdf_password=password)
            pages = _raw_pages(raw, password)
        except (ParseError, pdfium.PdfiumError):
            continue
        row.files += 1
        fields[path.name] = citation_of(doc, doc.title)
        chunks = chunker.chunk(doc.title, doc.sections)
        row.chunks += len(chunks)
        if path.name in headings:
            papers[path.name] = _paper(doc, chunks, pages, headings[path.name])
            papers[path.name].tables = [c.text for c in chunks if c.content_type == "table"]
        for chunk in chunks:
            if has_controls(chunk.text):
                row.control_chunks += 1
                row.controls.update(f"U+{ord(c):04X}" for c in chunk.text if has_controls(c))
            row.split_words += len(_SPLIT_WORD.findall(chunk.text))
        row.raw_control_pages += sum(has_controls(p.replace("\r", "").replace("\ufffe", "\x02")) for p in pages)
        row.raw_breaks += sum(len(_RAW_BREAK.findall(p)) for p in pages)
        by_page: dict[int, str] = {}
        for chunk in chunks:
            by_page[chunk.page_start or 0] = by_page.get(chunk.page_start or 0, "") + "\n" + chunk.text
        for number, line in _furniture(pages):
            row.furniture += 1
            row.furniture_left += line in by_page.get(number, "")
    return rows, fields, papers


def _sections() -> dict[str, list[str]]:
    with SECTIONS.open(newline="") as handle:
        out: dict[str, list[str]] = {}
        for r in csv.DictReader(handle, delimiter="\t"):
            out.setdefault(r["file"], []).append(r["heading"])
        return out


def _truth() -> dict[str, dict]:
    with TRUTH.open(newline="") as handle:
        return {r["file"]: r for r in csv.DictReader(handle, delimiter="\t")}


def report(data: Path, password: str | None = None) -> int:
    rows, fields, papers = measure(data, password)
    head = (
        f"{'folder':12s} {'PDFs':>5s} {'chunks':>7s} {'ctrl chunks':>12s} {'raw ctrl pages':>15s} "
        f"{'raw breaks':>11s} {'split words':>12s} {'furniture':>10s} {'left':>5s}"
    )
    print(head)
    print("-" * len(head))
    for group, r in sorted(rows.items()):
        print(
            f"{group:12s} {r.files:5d} {r.chunks:7d} {r.control_chunks:12d} {r.raw_control_pages:15d} "
            f"{r.raw_breaks:11d} {r.split_words:12d} {r.furniture:10d} {r.furniture_left:5d}"
        )
        if r.controls:
            print(f"  control characters left: {dict(r.controls.most_common(8))}")
    print()
    print(f"{'paper':16s} {'title':>6s} {'first author':>13s} {'year':>5s} {'arXiv id':>9s}")
    right = 0
    for name, truth in _truth().items():
        got = fields.get(name)
        if got is None:
            print(f"{name:16s} not found under {data}")
            continue
        checks = [
            got.title == truth["title"],
            bool(got.authors) and got.authors[0] == truth["first_author"],
            str(got.year) == truth["year"],
            got.eprint == truth["arxiv_id"],
        ]
        right += all(checks)
        marks = ["ok" if c else "WRONG" for c in checks]
        print(f"{name:16s} {marks[0]:>6s} {marks[1]:>13s} {marks[2]:>5s} {marks[3]:>9s}")
        for label, ok, value in zip(("title", "author", "year", "eprint"), checks, _values(got), strict=True):
            if not ok:
                print(f"  {label}: {value!r}")
    print(f"BibTeX right (all four fields): {right} of {len(_truth())} papers")
    print()
    _report_papers(papers)
    print()
    _report_tables(papers)
    return 0


def _cells(markdown: str) -> tuple[str, list[list[str]]]:
    """A table chunk's caption and body rows (header and delimiter rows left out)."""
    caption, _, table = markdown.partition("\n\n") if not markdown.startswith("|") else ("", "", markdown)
    lines = [x for x in table.splitlines() if x.startswith("|")]
    cut = next((i for i, x in enumerate(lines) if set(x) <= set("|-: ")), -1)
    return caption, [[c.strip() for c in x.strip().strip("|").split("|")] for x in lines[cut + 1 :]]


def _label(caption: str) -> str:
    match = re.match(r"^(Table\s*\d+)[:.]", caption)
    return " ".join(match.group(1).split()) if match else ""


def _numbers(row: list[str]) -> list[str]:
    return [c.replace(" ", "") for c in row if is_number(c)]


def _signature(row: list[str]) -> tuple[str, ...]:
    """A row by its label and its numbers (another table may quote a number, not the row)."""
    return (_norm(row[0]) if row else "", *_numbers(row))


def _report_tables(papers: dict[str, Paper]) -> None:
    """Tables found with their caption, rows and columns as printed, numeric cells in place, rows leaked."""
    truth = json.loads(TABLES.read_text())["tables"]
    found = shaped = written = cells = right = leaks = 0
    for paper_name, paper in sorted(papers.items()):
        tables: dict[str, list[list[str]]] = {}  # caption label -> body rows, over the table's chunks
        for text in paper.tables:
            caption, rows = _cells(text)
            label = _label(caption)
            if label:
                tables.setdefault(label, [])
                if not tables[label] or rows != tables[label][: len(rows)]:
                    tables[label] += rows
        for table in (t for t in truth if t["file"] == paper_name):
            got = tables.get(table["caption"])
            found += got is not None
            if got is None:
                print(f"{paper_name:16s} {table['caption']:9s} NOT FOUND")
            if table["rows"] is None:
                continue
            written += 1
            rows = got or []
            width = max((len(r) for r in rows), default=0)
            ok = len(rows) == len(table["rows"]) and width == table["columns"]
            shaped += ok
            numeric = [(i, j, c) for i, r in enumerate(table["rows"]) for j, c in enumerate(r) if is_number(c)]
            hits = sum(
                i < len(rows) and j < len(rows[i]) and rows[i][j].replace(" ", "") == c.replace(" ", "")
                for i, j, c in numeric
            )
            cells += len(numeric)
            right += hits
            if not ok or hits < len(numeric):
                print(
                    f"{paper_name:16s} {table['caption']:9s} rows {len(rows)} of {len(table['rows'])}, "
                    f"columns {width} of {table['columns']}, numeric cells {hits} of {len(numeric)}"
                )
            for label, other in tables.items():  # its rows in another table's chunks
                if label == table["caption"]:
                    continue
                mine = {_signature(r) for r in table["rows"] if len(_numbers(r)) >= 2}
                leaked = [r for r in other if _signature(r) in mine]
                for row in leaked:
                    print(f"{paper_name:16s} {table['caption']:9s} row in {label}'s chunks: {' | '.join(row)}")
                leaks += len(leaked)
    print(f"tables found with their caption: {found} of {len(truth)}")
    print(f"tables with rows and columns as printed: {shaped} of {written} written down cell by cell")
    print(f"numeric cells in the right row and column: {right} of {cells} {_pct(right, cells)}")
    print(f"rows of one table in another table's chunks: {leaks}")


def _report_papers(papers: dict[str, Paper]) -> None:
    head = (
        f"{'paper':16s} {'chunks':>7s} {'section right':>14s} {'straddling':>11s} {'captions in text':>17s} "
        f"{'interrupted':>12s} {'refs marked':>12s} {'arXiv ids kept':>15s} {'dropped chars':>14s} {'unmapped':>9s}"
    )
    print(head)
    print("-" * len(head))
    total = Paper()
    for name, p in sorted(papers.items()):
        print(
            f"{name:16s} {p.chunks:7d} {p.section_right:8d} {_pct(p.section_right, p.chunks)} {p.straddling:11d} "
            f"{p.floats_in_text:17d} {p.interrupted:12d} "
            f"{'yes' if p.references_marked else 'NO':>12s} {p.arxiv_kept:8d} of {p.arxiv_ids:3d} {p.dropped:14d} "
            f"{p.unmapped:9d}"
        )
        for name_ in (
            "chunks",
            "section_right",
            "straddling",
            "floats_in_text",
            "page_breaks_cut",
            "hyphens_cut",
            "ref_entries",
            "ref_cited",
            "arxiv_ids",
            "arxiv_kept",
            "dropped",
            "unmapped",
        ):
            setattr(total, name_, getattr(total, name_) + getattr(p, name_))
        total.references_marked += p.references_marked
    print(
        f"{'all':16s} {total.chunks:7d} {total.section_right:8d} {_pct(total.section_right, total.chunks)} "
        f"{total.straddling:11d} {total.floats_in_text:17d} {total.interrupted:12d} "
        f"{int(total.references_marked):6d} of {len(papers):3d} "
        f"{total.arxiv_kept:8d} of {total.arxiv_ids:3d} {total.dropped:14d} {total.unmapped:9d}"
    )
    print(
        f"reference entries that give the cited work's BibTeX (fetch_chunk_bibtex): {total.ref_cited} of "
        f"{total.ref_entries}"
    )


def _pct(part: int, whole: int) -> str:
    return f"({100 * part / whole:3.0f}%)" if whole else "(  -%)"


def _values(got: Citation) -> list:
    return [got.title, got.authors[:1], got.year, got.eprint]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"PDF folder (default {DEFAULT_DATA})")
    parser.add_argument("--password", default="openpassword", help="password of the encrypted edge case")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return 0
    return report(args.data, args.password)


if __name__ == "__main__":
    sys.exit(main())
