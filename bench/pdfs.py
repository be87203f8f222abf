"""PDF ingest over real files: pages/s, files ingested, each failure with its reason.

    python -m bench.pdfs [--data ../shared/data/pdfs] [--password PW] [--backend torch|onnx]
    python -m bench.pdfs --parse-only [--rounds 3]   (the parser against PDFium alone, interleaved per file,
                                                     after one untimed parse: imports are not page time)

Over every PDF under --data (real arXiv papers and py-pdf's hard edge cases, described by
edge-cases/manifest.tsv), in one process:
1. reference: raw PDFium text extraction (pypdfium2, every page's text, nothing else);
2. Thoth's parser alone (pages, blocks, metadata) with no password: what an operator sees unconfigured;
3. the whole ingest (parse, BibTeX, chunk, embed, write LanceDB in a temp folder) with the password;
4. the manifest's expectations: files with a text layer ingest, image-only ones are reported as such;
5. OCR (thoth/writes/parsers/pdf/ocr.py): the files without a text layer parsed with OCR on, and
   pages of a paper rendered to images (a scan made here) read back: pages/s and the share of the
   text layer's words recovered in order;
6. text fidelity (bench/pdf_fidelity.py): control characters, split words, furniture, BibTeX.
Figures are printed as ratios to the reference measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pypdfium2 as pdfium

from bench import pdf_fidelity as fidelity
from thoth.config import Settings
from thoth.writes.parsers import ParseError, parse
from thoth.writes.parsers.pdf import ocr
from thoth.writes.writer import Writer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs"


def _manifest(data: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for path in data.rglob("manifest.tsv"):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                rows[str((path.parent / row["file"]).relative_to(data))] = row
    return rows


def pdfium_text(files: list[Path], passwords: dict[Path, str]) -> tuple[int, float]:
    """Pages and wall seconds of reading every page's plain text with PDFium alone: the reference."""
    pages, started = 0, time.perf_counter()
    for path in files:
        try:
            pdf = pdfium.PdfDocument(path.read_bytes(), password=passwords.get(path))
        except pdfium.PdfiumError:
            continue
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            textpage.get_text_bounded()
            textpage.close()
            page.close()
            pages += 1
        pdf.close()
    return pages, time.perf_counter() - started


def _parse_all(files: list[Path], data: Path) -> tuple[int, float, dict[str, str]]:
    pages, failures, started = 0, {}, time.perf_counter()
    for path in files:
        try:
            pages += parse(path.name, path.read_bytes()).page_count or 0
        except ParseError as exc:
            failures[str(path.relative_to(data))] = str(exc)
    return pages, time.perf_counter() - started, failures


def _parse_speed(files: list[Path], passwords: dict[Path, str], rounds: int) -> None:
    """PDFium's text extraction and Thoth's parser, file by file in turn, so both see the same load on a
    shared machine; CPU seconds (what the process itself spent) beside wall seconds."""
    blobs = [(path, path.read_bytes()) for path in files]
    totals = {"pdfium": [0, 0.0, 0.0], "parser": [0, 0.0, 0.0]}  # pages, CPU s, wall s

    def timed(name: str, fn) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        pages = fn()
        totals[name][0] += pages
        totals[name][1] += time.process_time() - cpu
        totals[name][2] += time.perf_counter() - wall

    for path, data in blobs[:1]:  # warm-up, untimed: the parser's imports (numpy, its tables) are not page time
        pdfium_text([path], passwords)
        _pages_parsed(path, data, passwords.get(path))
    for _ in range(rounds):
        for path, data in blobs:
            timed("pdfium", lambda path=path: pdfium_text([path], passwords)[0])
            timed("parser", lambda path=path, data=data: _pages_parsed(path, data, passwords.get(path)))
    (rp, rc, rw), (pp, pc, pw) = totals["pdfium"], totals["parser"]
    print(f"{len(files)} PDFs, {rounds} rounds, PDFium and the parser alternating file by file")
    print(f"reference: PDFium text only   {rp / rc:7.1f} pages/s CPU {rp / rw:7.1f} wall")
    print(f"Thoth parser                  {pp / pc:7.1f} pages/s CPU {pp / pw:7.1f} wall")
    print(f"parser slower than PDFium by  {(rp / rc) / (pp / pc):7.2f}x CPU    {(rp / rw) / (pp / pw):5.2f}x wall")


def _pages_parsed(path: Path, data: bytes, password: str | None) -> int:
    try:
        return parse(path.name, data, pdf_password=password).page_count or 0
    except ParseError:
        return 0


def _ocr(files: list[Path], data: Path, unconfigured: dict[str, str], scan_pages: int) -> None:
    """OCR over the files that had no text layer, and over a scan of a paper's first pages."""
    scans = [p for p in files if "no text layer" in unconfigured.get(str(p.relative_to(data)), "")]
    read = 0
    for path in scans:
        try:
            parse(path.name, path.read_bytes(), pdf_ocr=True)
            read += 1
        except ParseError as exc:
            print(f"  OCR: {path.relative_to(data)}: {exc}")
    print(f"OCR: {read} of {len(scans)} files without a text layer now ingest")
    paper = next((p for p in files if re.match(r"\d{4}\.\d{4,5}", p.name)), None)
    if paper is None or scan_pages <= 0:
        return
    pdf = pdfium.PdfDocument(paper.read_bytes())
    count = min(scan_pages, len(pdf))
    images = [pdf[i].render(scale=150 / 72).to_pil().convert("L") for i in range(count)]
    truth = re.findall(r"\w+", " ".join(pdf[i].get_textpage().get_text_range() for i in range(count)))
    pdf.close()
    buf = io.BytesIO()
    images[0].save(buf, format="PDF", save_all=True, append_images=images[1:], resolution=150)
    ocr.engine()  # the model load (about 2 s) is not page time
    started = time.perf_counter()
    doc = parse(paper.name, buf.getvalue(), pdf_ocr=True)
    seconds = time.perf_counter() - started
    words = re.findall(r"\w+", " ".join(s.text for s in doc.sections))
    match = difflib.SequenceMatcher(None, truth, words, autojunk=False)
    recovered = sum(block.size for block in match.get_matching_blocks()) / max(1, len(truth))
    print(
        f"OCR of {paper.name}'s first {count} pages scanned at 150 dpi: {count / seconds:.3f} pages/s "
        f"({seconds:.1f} s, engine load excluded), {recovered:.1%} of the text layer's words recovered in order"
    )


def _expected(row: dict | None) -> str:
    if row is None or row.get("text_on_page1") == "yes":
        return "ingest"
    if row.get("text_on_page1") == "no":
        return "no text layer"
    return "either"  # unknown in the manifest (e.g. files no reader could open)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pdfs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"PDF folder (default {DEFAULT_DATA})")
    parser.add_argument("--password", help="THOTH_PDF_PASSWORD for the ingest (default: the manifest's)")
    parser.add_argument("--backend", choices=["torch", "onnx"], help="embedding backend (default: the provider's)")
    parser.add_argument("--scan-pages", type=int, default=2, help="pages of a paper scanned for the OCR figure")
    parser.add_argument("--parse-only", action="store_true", help="only the parser's speed against PDFium")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the files for --parse-only")
    args = parser.parse_args(argv)

    files = sorted(args.data.rglob("*.pdf")) if args.data.is_dir() else []
    if not files:
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return 0
    manifest = _manifest(args.data)
    passwords = {args.data / k: r["password"] for k, r in manifest.items() if r.get("password")}
    password = args.password or next(iter(passwords.values()), "")
    if args.parse_only:
        _parse_speed(files, passwords, args.rounds)
        return 0

    ref_pages, ref_seconds = pdfium_text(files, passwords)
    parse_pages, parse_seconds, unconfigured = _parse_all(files, args.data)

    settings = Settings.from_env()
    settings = replace(settings, pdf_password=password, **({"embed_backend": args.backend} if args.backend else {}))
    with tempfile.TemporaryDirectory() as db:
        settings = replace(settings, db_uri=db, read_consistency_seconds=-1)
        ingestor = Writer(settings)
        ingestor.embedder.embed(["warm-up"])  # model load is not ingest time
        started = time.perf_counter()
        summary = ingestor.run(str(args.data), name="pdfs")
        seconds = time.perf_counter() - started

    total_mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"{len(files)} PDFs, {total_mb:.1f} MB, {ref_pages} pages PDFium opens; embedder {settings.embed_backend}")
    print()
    head = f"{'stage':44s} {'pages':>6s} {'seconds':>8s} {'pages/s':>8s} {'x PDFium':>9s}"
    print(head)
    print("-" * len(head))
    ref_rate = ref_pages / ref_seconds
    for name, pages, secs in [
        ("reference: PDFium text only (pypdfium2)", ref_pages, ref_seconds),
        ("Thoth parser (pages, blocks, metadata)", parse_pages, parse_seconds),
        ("whole ingest (parse, chunk, embed, write)", summary.pages, seconds),
    ]:
        print(f"{name:44s} {pages:6d} {secs:8.2f} {pages / secs:8.1f} {pages / secs / ref_rate:9.3f}")
    print()
    ingested = [k for k in summary.ingested if k.lower().endswith(".pdf")]  # the folder's README is not counted
    print(
        f"ingested {len(ingested)} of {len(files)} PDFs, {summary.chunks_written} chunks "
        f"({summary.chunks_written / seconds:.1f} chunks/s); failed {len(summary.failed)}:"
    )
    for key, reason in summary.failed:
        print(f"  {key}: {reason}")
    encrypted = [k for k, r in manifest.items() if r.get("encrypted") == "yes"]
    for key in encrypted:
        print(f"without a password: {key}: {unconfigured.get(key, 'opened (no password needed)')}")
        print(f"with the password:  {key}: {'ingested' if key in summary.ingested else 'NOT ingested'}")

    failed = dict(summary.failed)
    mismatches = []
    for path in files:
        key = str(path.relative_to(args.data))
        expected = _expected(manifest.get(key))
        if expected == "ingest" and key in failed:
            mismatches.append(f"{key}: has a text layer but failed: {failed[key]}")
        if expected == "no text layer" and "no text layer" not in failed.get(key, ""):
            mismatches.append(f"{key}: image-only, but {'ingested' if key not in failed else failed[key]}")
    print()
    print("manifest expectations: " + ("all met" if not mismatches else f"{len(mismatches)} not met"))
    for line in mismatches:
        print(f"  {line}")
    print()
    _ocr(files, args.data, unconfigured, args.scan_pages)
    print()
    return fidelity.report(args.data, password or None)


if __name__ == "__main__":
    sys.exit(main())
