"""A long PDF ingested a window of pages at a time: peak memory, the stop on SIGTERM, and the rerun that completes it.

    python -m bench.pdf_long [--pages 3000] [--data ../shared/data/pdfs/papers] [--embedder onnx|stub]
                             [--stop-after 20] [--parse-only]

The example papers imported again and again (pypdfium2) into one PDF of at least `--pages` pages. Then two
runs of the ingest job (thoth.writes.job, as `python -m ingest` runs it), each in a child process, trees off:
1. one sent SIGTERM `--stop-after` seconds after the document's first window is staged (its chunks appear in
   the index): how long it takes to exit, its exit code, and whether the document stayed absent (no
   `documents` row, no chunks left);
2. the rerun, to its end: its peak RSS (VmHWM) once every window is written (when the document's row is)
   and at the end (the indexes built over the new rows too), wall seconds, and the document as written.
`--embedder stub` puts bench.ingest's hash-based stand-in in the model's place (no model memory, about 1000x
faster), so the pipeline's own memory over thousands of pages is measured in minutes; `onnx` is the real run.
`--parse-only`: the parser alone, read to its last window in a child process, its peak RSS. One JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pypdfium2 as pdfium

from bench.ingest import own_status_mb
from thoth.config import Settings
from thoth.records import Chunk, Document
from thoth.store import Store

ROOT = Path(__file__).resolve().parent.parent


def write_long_pdf(data: Path, pages: int, out: Path) -> int:
    """The PDFs of `data` imported in turn until the document has at least `pages` pages; its page count."""
    sources = [pdfium.PdfDocument(str(p)) for p in sorted(data.glob("*.pdf"))]
    if not sources:
        raise SystemExit(f"no PDFs in {data}")
    long = pdfium.PdfDocument.new()
    while len(long) < pages:
        for source in sources:
            long.import_pages(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    long.save(str(out))
    count = len(long)
    for document in (long, *sources):  # PDFium holds every page it parsed until closed
        document.close()
    return count


def _child(embedder: str, argv: list[str]) -> int:
    """The ingest job in this process (the stub embedder in the model's place if asked); prints its peak RSS
    when the document's row is written (the windows all in) and at the end (the indexes built too)."""
    from thoth.freed import cap_malloc_arenas
    from thoth.writes import writer

    cap_malloc_arenas()  # as `python -m ingest` does, before any thread
    if embedder == "stub":
        from bench.ingest import StubEmbedder

        writer.get_embedder = lambda settings: StubEmbedder()  # type: ignore[assignment]
    switch = writer.Writer._switch

    def switched(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        print(f"windows-peak-rss-mb {own_status_mb('VmHWM'):.0f}", file=sys.stderr, flush=True)
        return switch(self, *args, **kwargs)

    writer.Writer._switch = switched  # type: ignore[method-assign]
    from thoth.writes.job import main

    code = main(argv)
    print(f"peak-rss-mb {own_status_mb('VmHWM'):.0f}", file=sys.stderr, flush=True)
    return code


def _parse_child(path: Path) -> int:
    """Parse `path` to its last window in this process (nothing kept); prints its peak RSS before and after."""
    from thoth.writes.parsers import parse

    parsed = parse(path.name, path.read_bytes())  # the bytes are let go once the first window is read
    print(f"read-rss-mb {own_status_mb('VmHWM'):.0f}", file=sys.stderr, flush=True)
    for _ in parsed.rest or ():
        pass
    print(f"peak-rss-mb {own_status_mb('VmHWM'):.0f}", file=sys.stderr, flush=True)
    return 0


def parse_only(data: Path, pages: int) -> dict:
    """The parser alone over the long PDF, in a child process: peak RSS once its first window is read, at the end."""
    with tempfile.TemporaryDirectory(prefix="thoth-bench-long-") as tmp:
        path = Path(tmp) / "long.pdf"
        page_count = write_long_pdf(data, pages, path)
        started = time.monotonic()
        cmd = [sys.executable, "-m", "bench.pdf_long", "parse-child", str(path)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        return {
            "pages": page_count,
            "seconds": round(time.monotonic() - started, 1),
            "rss_mb_first_window": _peak(done.stderr, "read-rss-mb"),
            "peak_rss_mb": _peak(done.stderr),
        }


def _start(embedder: str, corpus: Path, db: Path) -> subprocess.Popen[str]:
    argv = ["--source", str(corpus), "--db", str(db), "--name", "long"]
    env = {**os.environ, "THOTH_TREES": "off", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "bench.pdf_long", "child", "--embedder", embedder, "--", *argv]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _peak(stderr: str, what: str = "peak-rss-mb") -> float:
    return next((float(line.split()[1]) for line in stderr.splitlines() if line.startswith(what)), 0.0)


def _staged(settings: Settings) -> int:
    store = Store(settings)
    return store.count_of(Chunk, {"source_id": "long"}) if store.exists() and store.has(Chunk) else 0


def _documents(settings: Settings) -> list[Document]:
    store = Store(settings)
    return store.find(Document, {"source_id": "long"}) if store.exists() and store.has(Document) else []


def run(data: Path, pages: int, embedder: str, stop_after: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="thoth-bench-long-") as tmp:
        corpus, db = Path(tmp) / "corpus", Path(tmp) / "db"
        page_count = write_long_pdf(data, pages, corpus / "long.pdf")
        settings = Settings.from_env({}, db_uri=str(db), read_consistency_seconds=0.0)
        out: dict = {"pages": page_count, "megabytes": round((corpus / "long.pdf").stat().st_size / 1e6, 1)}

        if stop_after >= 0:  # 1. stopped by SIGTERM inside the document
            started = time.monotonic()
            proc = _start(embedder, corpus, db)
            while proc.poll() is None and not _staged(settings):
                time.sleep(0.5)
            out["first_window_seconds"] = round(time.monotonic() - started, 1)
            time.sleep(stop_after)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate()
            out["stop_seconds"] = round(time.monotonic() - signalled, 1)
            out["stop_exit_code"] = proc.returncode
            out["stopped_peak_rss_mb"] = _peak(err)
            out["after_stop"] = {"documents": len(_documents(settings)), "chunks": _staged(settings)}

        # 2. the rerun, to the end
        started = time.monotonic()
        proc = _start(embedder, corpus, db)
        _, err = proc.communicate()
        seconds = time.monotonic() - started
        documents = _documents(settings)
        out["rerun"] = {
            "exit_code": proc.returncode,
            "seconds": round(seconds, 1),
            "pages_per_second": round(page_count / seconds, 2),
            "peak_rss_mb_windows": _peak(err, "windows-peak-rss-mb"),  # until the document's row is written
            "peak_rss_mb": _peak(err),  # the indexes (BM25, vectors) built over the new rows too
            "documents": [(d.status, d.page_count) for d in documents],
            "chunks": _staged(settings),
        }
        return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["parse-child"]:
        return _parse_child(Path(argv[1]))
    if argv[:1] == ["child"]:
        child = argparse.ArgumentParser(prog="python -m bench.pdf_long child")
        child.add_argument("--embedder", choices=["onnx", "stub"], default="onnx")
        child.add_argument("rest", nargs=argparse.REMAINDER)
        known = child.parse_args(argv[1:])
        return _child(known.embedder, [a for a in known.rest if a != "--"])
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_long", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000, help="at least this many pages (default 3000)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/pdfs/papers"), help="the PDFs to repeat")
    parser.add_argument("--embedder", choices=["onnx", "stub"], default="onnx", help="the model, or a stand-in")
    parser.add_argument(
        "--stop-after", type=float, default=20.0, help="seconds after the first window: SIGTERM (<0: no stopped run)"
    )
    parser.add_argument("--parse-only", action="store_true", help="only the parser's peak RSS over the long PDF")
    args = parser.parse_args(argv)
    if args.parse_only:
        print(json.dumps(parse_only(args.data, args.pages), indent=1))
        return 0
    print(json.dumps(run(args.data, args.pages, args.embedder, args.stop_after), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
