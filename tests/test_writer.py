"""The ingest run against a real LanceDB folder: idempotency, changes, deletions, bad files, kill-and-rerun."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from examples.pdfgen import write_image_only_pdf, write_text_pdf, write_truncated_pdf
from tests.conftest import REPO_ROOT as REPO
from tests.conftest import make_settings, write_corpus
from thoth.records import Chunk, Document, Partition
from thoth.store import Store
from thoth.store.schema import DOCUMENTS
from thoth.writes.writer import Writer


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def settings(tmp_path: Path):
    return make_settings(tmp_path / "db")


def chunk_rows(store: Store) -> list[dict]:
    return sorted(
        (r for b in store.scan_of(Chunk, ["chunk_id", "doc_id", "key", "text"]) for r in b.to_pylist()),
        key=lambda r: r["chunk_id"],
    )


def test_second_run_writes_nothing(corpus: Path, settings) -> None:
    first = Writer(settings).run(str(corpus), name="docs")
    assert len(first.ingested) == 5 and first.chunks_written > 5
    store = Store(settings)
    versions = store.versions()
    second = Writer(settings).run(str(corpus), name="docs")
    assert second.changed == 0 and second.unchanged == 5 and second.chunks_written == 0
    assert "0 changed" in second.render()
    assert Store(settings).versions() == versions  # not a single table was written


def test_changed_file_replaced_and_deleted_file_removed(corpus: Path, settings) -> None:
    Writer(settings).run(str(corpus), name="docs")
    (corpus / "index.md").write_text("# Welcome\n\nThe cafeteria opens at eight and serves porridge.\n")
    (corpus / "engineering" / "deploy.md").unlink()
    summary = Writer(settings).run(str(corpus), name="docs")
    assert summary.ingested == ["index.md"] and summary.removed == ["engineering/deploy.md"]
    rows = chunk_rows(Store(settings))
    keys = {r["key"] for r in rows}
    assert "engineering/deploy.md" not in keys
    index_text = " ".join(r["text"] for r in rows if r["key"] == "index.md")
    assert "porridge" in index_text and "holidays" not in index_text
    store = Store(settings)
    assert store.count_of(Document) == 4
    live_docs = {d.doc_id for d in store.find(Document, {"source_id": "docs"})}
    partition_docs = {r["doc_id"] for b in store.scan_of(Partition, ["doc_id"]) for r in b.to_pylist()}
    assert partition_docs == live_docs  # no partitions of the old or deleted versions left behind


def test_same_bytes_under_two_keys_stored_once(corpus: Path, settings) -> None:
    shutil.copy(corpus / "index.md", corpus / "copy-of-index.md")
    Writer(settings).run(str(corpus), name="docs")
    store = Store(settings)
    docs = store.find(Document, {"source_id": "docs"})
    assert {d.key for d in docs} >= {"index.md", "copy-of-index.md"}
    assert len({r["chunk_id"] for r in chunk_rows(store)}) == len(chunk_rows(store))
    index_chunks = [r for r in chunk_rows(store) if r["doc_id"] == next(d.doc_id for d in docs if d.key == "index.md")]
    assert len(index_chunks) == 1  # one copy of the content
    (corpus / "index.md").unlink()  # the content stays, known under the remaining key
    Writer(settings).run(str(corpus), name="docs")
    remaining = [r for r in chunk_rows(Store(settings)) if "holidays" in r["text"]]
    assert [r["key"] for r in remaining] == ["copy-of-index.md"]


def test_bad_files_are_recorded_and_skipped(corpus: Path, settings) -> None:
    bad = corpus / "bad"
    bad.mkdir()
    write_text_pdf(bad / "encrypted.pdf", ["secret page"], password="hunter2")
    write_truncated_pdf(bad / "truncated.pdf")
    write_image_only_pdf(bad / "scan.pdf", pages=2)
    (bad / "empty.md").write_text("")
    (bad / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    summary = Writer(settings).run(str(corpus), name="docs")
    reasons = dict(summary.failed)
    assert set(reasons) == {"bad/encrypted.pdf", "bad/truncated.pdf", "bad/scan.pdf", "bad/empty.md", "bad/latin1.md"}
    assert "password" in reasons["bad/encrypted.pdf"]
    assert "corrupt" in reasons["bad/truncated.pdf"]
    assert "no text layer" in reasons["bad/scan.pdf"]
    assert "empty" in reasons["bad/empty.md"]
    assert "UTF-8" in reasons["bad/latin1.md"]
    assert len(summary.ingested) == 5  # the good files went in
    failed = {d.key: d for d in Store(settings).find(Document, {"source_id": "docs", "status": "failed"})}
    assert failed["bad/scan.pdf"].error == reasons["bad/scan.pdf"]
    # unchanged bad files are not retried on the next run
    assert Writer(settings).run(str(corpus), name="docs").changed == 0


def test_encrypted_pdf_ingests_with_its_password(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    write_text_pdf(folder / "locked.pdf", ["The vault code is written on page one."], password="hunter2")
    settings = make_settings(tmp_path / "db")
    settings = type(settings).from_env({"THOTH_PDF_PASSWORD": "hunter2"}, db_uri=settings.db_uri)
    summary = Writer(settings).run(str(folder), name="pdfs")
    assert summary.ingested == ["locked.pdf"], summary.render()


def test_cli_exit_codes_and_summary(corpus: Path, tmp_path: Path) -> None:
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "ingest", "--source", str(corpus), "--db", str(tmp_path / "db"), "--name", "docs"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "5 ingested" in run.stdout and "1 failed" in run.stdout and "broken.pdf" in run.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "ingest", "--source", str(tmp_path / "nope"), "--db", str(tmp_path / "db")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    usage = subprocess.run([sys.executable, "-m", "ingest"], cwd=REPO, env=env, capture_output=True, text=True)
    assert usage.returncode == 2 and "--source" in usage.stderr


def test_rows_left_by_a_killed_run_are_not_doubled(corpus: Path, settings) -> None:
    """A run that wrote chunks but died before its documents rows: the rerun ends as one clean run."""
    ingestor = Writer(settings)
    ingestor.run(str(corpus), name="docs")
    clean = chunk_rows(Store(settings))
    store = Store(settings)
    store.tables.delete(DOCUMENTS, "key = 'index.md'")  # as if the run died after writing chunks, before this row
    Writer(settings).run(str(corpus), name="docs")
    assert chunk_rows(Store(settings)) == clean
