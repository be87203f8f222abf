"""Progress without a terminal: `python -m ingest` prints JSON progress lines while it runs (every
thoth.writes.job.PROGRESS_SECONDS) and one at the end, with documents and chunks done, the rate and the stage."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.conftest import job_env, make_settings, run_ingest, write_corpus
from thoth.records import Chunk
from thoth.store import Store
from thoth.writes.progress import ProgressMeter

FIELDS = {"event", "stage", "documents_done", "documents_total", "chunks_done", "chunks_per_s", "documents_per_s",
          "elapsed_s"}  # fmt: skip


def progress_lines(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith('{"event": "progress"')]


def test_ingest_without_a_terminal_prints_progress_lines(tmp_path: Path, onnx_cache: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    often = {"thoth.writes.job.PROGRESS_SECONDS": 0.2, "thoth.writes.writer.BATCH_CHUNKS": 2}
    run = run_ingest("--source", str(corpus), "--db", str(tmp_path / "db"), env=job_env(), patches=often)
    assert run.returncode == 0, run.stderr
    lines = progress_lines(run.stderr)
    assert len(lines) >= 2, run.stderr  # at least one while running (a run takes seconds), one at the end
    assert all(set(line) == FIELDS for line in lines), lines
    last = lines[-1]
    chunks = Store(make_settings(tmp_path / "db")).count_of(Chunk)
    assert last["stage"] == "done" and last["documents_done"] == last["documents_total"] == 5, last
    assert last["chunks_done"] == chunks and last["chunks_per_s"] > 0
    done = [line["chunks_done"] for line in lines]
    assert done == sorted(done)  # counts only grow
    assert {line["stage"] for line in lines} <= {"plan", "documents", "index", "tree", "done"}


def test_meter_counts_and_stages() -> None:
    out = io.StringIO()
    meter = ProgressMeter(interval=3600, stream=out)
    with meter:
        meter(1, 4, "a.md")
        meter.add_chunks(10)
        assert meter.line()["stage"] == "documents"
        meter(4, 4, "d.md")
        meter.add_chunks(5)
        meter.stage("tree")
        assert meter.line()["stage"] == "tree"
    final = json.loads(out.getvalue().splitlines()[-1])
    assert final["stage"] == "done" and final["documents_done"] == 4 and final["chunks_done"] == 15


def test_a_failed_run_ends_without_a_progress_line() -> None:
    out = io.StringIO()
    try:
        with ProgressMeter(interval=3600, stream=out):
            raise RuntimeError("the bucket is not there")
    except RuntimeError:
        pass
    assert out.getvalue() == ""  # the run's one `error:` line is the last word


def test_a_quiet_meter_prints_nothing() -> None:
    out = io.StringIO()
    with ProgressMeter(interval=0.01, stream=out, printing=False) as meter:
        meter.add_chunks(3)
    assert out.getvalue() == "" and meter.line()["chunks_done"] == 3
