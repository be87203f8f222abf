"""PDF ingest over real files: pages/s, files ingested, each failure with its reason.

    python -m bench.pdfs [--data ../shared/data/pdfs] [--password PW] [--backend torch|onnx]

Over every PDF under --data (real arXiv papers and py-pdf's hard edge cases, described by
edge-cases/manifest.tsv), in one process:
1. reference: raw PDFium text extraction (pypdfium2, every page's text, nothing else);
2. Thoth's parser alone (pages, blocks, metadata) with no password: what an operator sees unconfigured;
3. the whole ingest (parse, BibTeX, chunk, embed, write LanceDB in a temp folder) with the password;
4. the manifest's expectations: files with a text layer ingest, image-only ones are reported as such;
5. text fidelity (bench/pdf_fidelity.py): control characters, split words, furniture, BibTeX.
Figures are printed as ratios to the reference measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pypdfium2 as pdfium

from bench import pdf_fidelity as fidelity
from thoth.config import Settings
from thoth.writes.parsers import ParseError, parse
from thoth.writes.writer import Writer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs"


def _manifest(data: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for path in data.rglob("manifest.tsv"):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                rows[str((path.parent / row["file"]).relative_to(data))] = row
    return rows


def _reference(files: list[Path], passwords: dict[Path, str]) -> tuple[int, float]:
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
    parser.add_argument("--backend", choices=["torch", "onnx"], help="embedding backend (default THOTH_EMBED_BACKEND)")
    args = parser.parse_args(argv)

    files = sorted(args.data.rglob("*.pdf")) if args.data.is_dir() else []
    if not files:
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return 0
    manifest = _manifest(args.data)
    passwords = {args.data / k: r["password"] for k, r in manifest.items() if r.get("password")}
    password = args.password or next(iter(passwords.values()), "")

    ref_pages, ref_seconds = _reference(files, passwords)
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
    return fidelity.report(args.data, password or None)


if __name__ == "__main__":
    sys.exit(main())
