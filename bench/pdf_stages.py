"""Where the PDF parser's CPU time goes: seconds per stage over every PDF, PDFium's plain text beside.

    python -m bench.pdf_stages [--data ../shared/data/pdfs] [--rounds 3]

Each round parses every PDF once (one untimed parse first: imports are not page time), then reads
every page's plain text with PDFium alone (the reference of `python -m bench.pdfs --parse-only`).
The stages are the parser's own functions, timed where the parser (`parse`) and lines.py call them: reading
characters (chars.read_page), making lines of them (lines.read_lines),
figure regions (the page's drawn objects, read once for them and the tables' rules), tables (tables.py, on
the pages with a table caption), headings, floats,
furniture, vocabularies, partitions. "the rest" is what no stage
holds: PDFium's own page and text-page loading (about the reference's time), the title page, the
document's metadata. CPU seconds (time.process_time), so a loaded machine's waiting is left out.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

from bench.pdfs import DEFAULT_DATA, pdfium_text
from thoth.writes.parsers import ParseError, parse
from thoth.writes.parsers import pdf as pdf_parser
from thoth.writes.parsers.pdf.partitions import Partitioner

# (module, function, stage): the functions timed, where their callers look them up
_STAGES = [
    (pdf_parser, "read_chars", "reading characters"),
    (pdf_parser, "read_lines", "lines from characters"),
    (pdf_parser, "drawn_objects", "figure regions"),
    (pdf_parser, "graphic_regions", "figure regions"),
    (pdf_parser, "_read_tables", "tables"),
    (pdf_parser, "mark_figure_text", "figure regions"),
    (pdf_parser, "mark_headings", "headings"),
    (pdf_parser, "body_size", "headings"),
    (pdf_parser, "mark_floats", "floats"),
    (pdf_parser, "page_furniture", "furniture"),
    (pdf_parser, "mark_repeated", "furniture"),
    (pdf_parser, "vocabulary", "vocabularies"),
    (Partitioner, "add", "partitions"),
    (Partitioner, "close", "partitions"),
]


def _timed(function, stage: str, seconds: dict[str, float]):
    def run(*args, **kwargs):
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[stage] += time.process_time() - started

    return run


def _reference(files: list[Path]) -> float:
    """CPU seconds of bench.pdfs' reference: every page's plain text by PDFium alone."""
    started = time.process_time()
    pdfium_text(files, {})
    return time.process_time() - started


def _parse_all(files: list[Path], blobs: list[bytes]) -> float:
    started = time.process_time()
    for path, data in zip(files, blobs, strict=True):
        try:
            parse(path.name, data)
        except ParseError:
            pass
    return time.process_time() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_stages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    files = sorted(args.data.rglob("*.pdf")) if args.data.is_dir() else []
    if not files:
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return
    blobs = [path.read_bytes() for path in files]
    seconds: dict[str, float] = defaultdict(float)
    originals = [(module, name, getattr(module, name)) for module, name, _ in _STAGES]
    for module, name, stage in _STAGES:
        setattr(module, name, _timed(getattr(module, name), stage, seconds))
    try:
        _parse_all(files[:1], blobs[:1])  # warm-up, untimed
        print(f"{len(files)} PDFs, CPU seconds per round")
        for round_ in range(1, args.rounds + 1):
            seconds.clear()
            total = _parse_all(files, blobs)
            reference = _reference(files)
            parts = dict(seconds)
            parts["the rest"] = total - sum(parts.values())
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
            print(f"round {round_}: parser {total:.2f}, PDFium {reference:.2f} ({total / reference:.2f}x): {shown}")
    finally:
        for module, name, function in originals:
            setattr(module, name, function)


if __name__ == "__main__":
    main()
