"""A long PDF read and written a window of pages at a time (thoth/writes/parsers/pdf, Writer._write_windows):
the same partitions and chunks as the whole document at once, and a run stopped by SIGTERM in the middle of it
leaves the document absent, which the next run writes whole. A generated paper of 36 pages, in windows of 6."""

from __future__ import annotations

import dataclasses
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from examples.pdfgen import write_paper_pdf
from tests.conftest import make_settings
from tests.test_shutdown import env_for
from thoth.records import Chunk, Document, Partition
from thoth.store import Store
from thoth.store.schema import CHUNKS
from thoth.writes.parsers import parse
from thoth.writes.parsers import pdf as pdf_parser
from thoth.writes.parsers.pdf.partitions import Partitioner
from thoth.writes.writer import Writer

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 6
BODY = (
    "Retrieval augmented models read a corpus while they answer. They keep their parameters small and "
    "their knowledge fresh, because the corpus can change without training the model again. "
)


def _in_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PDF over WINDOW pages is read in windows of WINDOW (not whole up to WHOLE_PAGES)."""
    monkeypatch.setattr(pdf_parser, "WINDOW_PAGES", WINDOW)
    monkeypatch.setattr(pdf_parser, "WHOLE_PAGES", WINDOW)


def _pages(count: int) -> list[list[tuple[str, str]]]:
    """Sections over several pages each, a sentence over every page break, a caption and a footnote now and
    then, and a reference list without a heading at the end."""
    pages: list[list[tuple[str, str]]] = [[("h1", "Abstract"), ("p", BODY * 2), ("h1", "1 Introduction"), ("p", BODY)]]
    for n in range(2, count):
        page: list[tuple[str, str]] = [("p", "and so the sentence ends here. " + BODY * 2)]
        if n % 5 == 0:
            page += [("h1", f"{n // 5 + 1} Section on page {n}"), ("p", BODY)]
        if n % 7 == 0:
            page.append(("table", f"Table {n // 7}: Error rates on split {n}."))
        if n % 4 == 0:
            page.append(("footnote", f"{n}Measured on page {n} of the study."))
        page.append(("p", BODY + "The last sentence of the page runs on to the next page"))
        pages.append(page)
    pages.append([("p", f"[{i}] Author {i}. A cited work number {i}. 2020.") for i in range(1, 12)])
    return pages


@pytest.fixture(scope="module")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    return write_paper_pdf(
        folder / "long.pdf",
        title="Reading Long Documents in Windows",
        authors=[("Ann Lee", "1"), ("Bo Chan", "2")],
        pages=_pages(36),
        stamp="arXiv:2002.08909v3 [cs.CL] 7 Jun 2021",
        header="Reading Long Documents in Windows",
    )


def _without_rest(doc) -> dict:  # type: ignore[no-untyped-def]
    out = dataclasses.asdict(doc)
    del out["rest"]
    return out


def test_windows_parse_as_the_whole_document(long_pdf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = parse("long.pdf", long_pdf.read_bytes())
    assert whole.rest is None and len(whole.sections) > 36
    _in_windows(monkeypatch)
    windowed = parse("long.pdf", long_pdf.read_bytes())
    assert windowed.rest is not None and windowed.sections[-1].page_end <= WINDOW  # the first window only
    assert _without_rest(windowed.whole()) == _without_rest(whole)
    assert any(s.page_end == s.page_start + 1 and s.page_start % WINDOW == 0 for s in whole.sections)  # joined
    assert any(s.blocks[0].kind == "references" for s in whole.sections)  # found without a heading


def test_a_window_file_left_by_a_killed_process_goes_with_the_next_long_pdf(
    long_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows read a temporary copy of the PDF; SIGKILL runs no finaliser, so the copy of a process that is
    gone is removed when the next long PDF is read. A running process's copy stays."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    left, running = tmp_path / f"thoth-pdf-{gone.pid}-x1.pdf", tmp_path / f"thoth-pdf-{os.getppid()}-x2.pdf"
    for path in (left, running):
        path.write_bytes(b"%PDF-")
    _in_windows(monkeypatch)
    windowed = parse("long.pdf", long_pdf.read_bytes())
    assert not left.exists() and running.exists()
    assert len(list(tmp_path.glob(f"thoth-pdf-{os.getpid()}-*.pdf"))) == 1  # this parse's, while its windows wait
    windowed.whole()
    del windowed
    gc.collect()
    assert not list(tmp_path.glob(f"thoth-pdf-{os.getpid()}-*.pdf"))


def _rows(settings) -> tuple[set, set]:  # type: ignore[no-untyped-def]
    store = Store(settings)
    chunks = {(c.chunk_id, c.chunk_index, c.text) for c in store.find(Chunk, {"source_id": "long"}, fields=["text"])}
    partitions = {(p.partition_id, p.ordinal) for p in store.find(Partition, {"source_id": "long"}, fields=[])}
    return chunks, partitions


@pytest.fixture(scope="module")
def whole_index(long_pdf: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    settings = make_settings(tmp_path_factory.mktemp("whole") / "db", tree_build=False)
    summary = Writer(settings).run(str(long_pdf.parent), name="long")
    assert summary.ingested == ["long.pdf"] and not summary.failed
    return settings


def test_a_long_pdf_reparsed_in_windows_is_served_old_or_new_never_half(
    long_pdf: Path, whole_index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer parser re-reads the same bytes window by window: its rows are staged under another doc_id and
    swapped in at the end, so every version of the chunk table serves the old rows or the new, whole; a stop
    in the middle leaves the old ones, and the rerun the rows of a clean run."""
    shutil.copytree(whole_index.db_uri, tmp_path / "db")  # the document as written whole
    settings = make_settings(tmp_path / "db", tree_build=False)
    store = Store(settings)
    (old,) = store.find(Document, {"source_id": "long"}, fields=["doc_id", "parser"])
    chunks = store.count_of(Chunk, {"source_id": "long"})
    store.change(Document, {"source_id": "long"}, {"parser": "an-older-parser"})
    store.change(Chunk, {"source_id": "long"}, {"title": "old"})  # the old version's rows, told apart
    table = Store(settings).table(CHUNKS)  # a reader of its own, to look at every version after this one
    start = table.version  # the stopped run's versions are looked at too
    _in_windows(monkeypatch)

    stop, stage, staged = threading.Event(), Writer._stage, []

    def stage_and_stop(self, *args):  # type: ignore[no-untyped-def]
        staged.append(stage(self, *args))
        stop.set()  # SIGTERM once the first window is staged (only the first run is given `stop`)
        return staged[-1]

    monkeypatch.setattr(Writer, "_stage", stage_and_stop)
    assert Writer(settings).run(str(long_pdf.parent), name="long", stop=stop).interrupted
    table.checkout_latest()
    assert table.count_rows() == table.count_rows(f"doc_id = '{old.doc_id}' AND title = 'old'") == chunks

    staged.clear()
    summary = Writer(settings).run(str(long_pdf.parent), name="long")
    assert len(staged) > 2 and sum(staged) == chunks  # window by window
    assert summary.updated == ["long.pdf"] and not summary.failed and not summary.interrupted
    assert summary.chunks_written == chunks and _rows(settings) == _rows(whole_index)
    assert [(d.doc_id, d.parser) for d in store.find(Document, {"source_id": "long"})] == [(old.doc_id, old.parser)]
    table.checkout_latest()
    served = []
    for number in range(start, table.version + 1):
        table.checkout(number)
        where = f"doc_id = '{old.doc_id}'"
        served.append((table.count_rows(where), table.count_rows(f"{where} AND title = 'old'") in (0, chunks)))
    assert set(served) == {(chunks, True)}, served  # every version: the whole document, all old or all new
    assert table.count_rows() == chunks and table.count_rows("title = 'old'") == 0  # the old rows are gone


def test_a_first_window_without_text_still_writes_the_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first window's pages hold one letter each: its parse yields no partition, the later windows all of them
    pages = [[("p", "x")] for _ in range(WINDOW + 1)] + [[("p", BODY * 3)] for _ in range(2 * WINDOW)]
    (tmp_path / "src").mkdir()
    write_paper_pdf(tmp_path / "src" / "long.pdf", title="Blank Start", authors=[("Ann Lee", "1")], pages=pages)
    whole = make_settings(tmp_path / "whole", tree_build=False)
    Writer(whole).run(str(tmp_path / "src"), name="long")
    _in_windows(monkeypatch)
    assert not parse("long.pdf", (tmp_path / "src" / "long.pdf").read_bytes()).sections
    settings = make_settings(tmp_path / "windows", tree_build=False)
    summary = Writer(settings).run(str(tmp_path / "src"), name="long")
    assert summary.ingested == ["long.pdf"] and Store(settings).count_of(Document, {"source_id": "long"}) == 1
    assert _rows(settings) == _rows(whole) and _rows(whole)[0]


def test_a_later_window_the_parser_fails_on_fails_the_document_not_the_run(
    long_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_windows(monkeypatch)
    add, calls = Partitioner.add, []

    def failing_add(self, *args):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:  # the second window's partitions: a parser bug on one of its pages
            raise RuntimeError("bad page")
        return add(self, *args)

    monkeypatch.setattr(Partitioner, "add", failing_add)
    settings = make_settings(tmp_path / "db", tree_build=False)
    summary = Writer(settings).run(str(long_pdf.parent), name="long")
    assert summary.failed == [("long.pdf", "parser error: RuntimeError: bad page")] and not summary.ingested
    store = Store(settings)
    assert [d.status for d in store.find(Document, {"source_id": "long"})] == ["failed"]
    assert store.count_of(Chunk, {"source_id": "long"}) == 0  # the first window's staged rows are gone


_JOB = f"""
import sys
import tempfile
from thoth.writes.parsers import pdf
from thoth.writes.job import main
pdf.WINDOW_PAGES = pdf.WHOLE_PAGES = {WINDOW}
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_mid_document_leaves_it_absent_and_a_rerun_writes_it(
    long_pdf: Path, whole_index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "db"
    settings = make_settings(db, tree_build=False)
    cmd = [sys.executable, "-c", _JOB, "--source", str(long_pdf.parent), "--db", str(db), "--name", "long"]
    env = env_for(THOTH_TREES="off", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:  # the first windows' rows, staged
            store = Store(settings)
            if store.exists() and store.has(Chunk) and store.count_of(Chunk, {"source_id": "long"}) > 0:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the ingest ended before any window was staged"
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert stopped_in < 30, stopped_in
    store = Store(settings)
    assert not store.has(Document) or store.count_of(Document, {"source_id": "long"}) == 0
    assert store.count_of(Chunk, {"source_id": "long"}) == 0  # what was staged is gone

    _in_windows(monkeypatch)
    rerun = Writer(settings).run(str(long_pdf.parent), name="long")
    assert rerun.ingested == ["long.pdf"] and not rerun.interrupted
    assert _rows(settings) == _rows(whole_index)
