"""The ingest history: every job run and `ingest_document` write leaves a run record (bucket events: tests/test_gcs.py),
read back newest first, shown by /health, and pruned to the newest runs of each source."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from examples.pdfgen import write_truncated_pdf
from tests.conftest import CORPUS, LOOPBACK, LiveServer, call, job_env, make_settings, run_ingest, write_corpus
from thoth.records import IngestRun
from thoth.store import Store
from thoth.writes.run_records import describe


def test_job_runs_are_recorded_newest_first(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    write_truncated_pdf(corpus / "broken.pdf")
    db = tmp_path / "db"
    first = run_ingest("--source", str(corpus), "--db", str(db), "--name", "docs", env=job_env())
    assert first.returncode == 0, first.stderr[-2000:]
    store = Store(make_settings(db))
    [run] = store.recent_runs("docs")
    assert (run.trigger, run.started_by) == ("job", "python -m ingest run (task 1/1)")
    assert (run.added, run.updated, run.removed, run.failed) == (len(CORPUS) + 1, 0, 0, 1)
    assert run.chunks_written > 0 and run.started_at <= run.ended_at
    assert len(run.failures) == 1 and run.failures[0].startswith("broken.pdf: ")

    first_key = sorted(CORPUS)[0]
    (corpus / first_key).write_text("# Changed\n\nThis page now says something else entirely.\n")
    (corpus / "broken.pdf").unlink()
    second = run_ingest("--source", str(corpus), "--db", str(db), "--name", "docs", env=job_env())
    assert second.returncode == 0, second.stderr[-2000:]
    newest, oldest = store.recent_runs("docs")
    assert oldest.run_id == run.run_id
    assert (newest.added, newest.updated, newest.removed, newest.failed) == (0, 1, 1, 0)
    assert "docs  job (python -m ingest run (task 1/1)): 0 added, 1 updated, 1 removed" in describe(newest)

    missing = run_ingest("--source", str(tmp_path / "gone"), "--db", str(db), "--name", "docs", env=job_env())
    assert missing.returncode == 1
    failed = store.recent_runs("docs", limit=1)[0]
    assert failed.error and "gone" in failed.error


def test_a_job_that_cannot_start_creates_no_index(tmp_path: Path) -> None:
    db = tmp_path / "db"
    result = run_ingest("--source", str(tmp_path / "gone"), "--db", str(db), env=job_env())
    assert result.returncode == 1 and not db.exists()


def test_ingest_document_writes_are_recorded_and_shown_by_health(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    arguments = {"dataset_id": "notes", "file_content": "The picnic moved to the lake shore.", "source": "picnic.md"}
    with LiveServer(settings) as live:
        assert not call(live, "ingest_document", arguments)["isError"]
        assert not call(live, "ingest_document", arguments)["isError"]  # unchanged: writes nothing, no run
        health = LOOPBACK.get(f"{live.url}/health").json()
    [run] = Store(settings).recent_runs("notes")
    assert (run.trigger, run.started_by, run.added, run.failed) == ("document", "local", 1, 0)
    assert health["last_run"] == {
        "source_id": "notes",
        "trigger": "document",
        "started_by": "local",
        "ended_at": run.ended_at.isoformat(),
        "added": 1,
        "updated": 0,
        "removed": 0,
        "failed": 0,
    }


def test_old_runs_are_pruned_per_source(tmp_path: Path) -> None:
    store = Store(make_settings(tmp_path / "db"))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(5):
        at = start + timedelta(hours=i)
        store.record_run(IngestRun(f"a{i}", "alpha", "job", started_at=at, ended_at=at), keep=3)
    store.record_run(IngestRun("b0", "beta", "event", started_at=start, ended_at=start), keep=3)
    assert [r.run_id for r in store.recent_runs("alpha")] == ["a4", "a3", "a2"]
    assert [r.run_id for r in store.recent_runs()] == ["a4", "a3", "a2", "b0"]
    assert "ingest_runs" not in store.tables.names()  # history, not one of the index's tables
