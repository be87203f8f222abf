"""Parallel ingest tasks (CLOUD_RUN_TASK_INDEX/COUNT) and a run killed mid-write, on a local folder.

N task processes writing one LanceDB folder at once must end with exactly the rows one task writes,
also when files change, move and disappear between runs; a run killed halfway and started again
must end with the rows of one clean run. (Concurrent writers are tested on a local folder: the
GCS emulator ignores generation preconditions, DESIGN.md.)
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from examples.pdfgen import write_image_only_pdf, write_text_pdf
from tests.conftest import REPO_ROOT, ingest_command, job_env, make_settings, write_corpus
from thoth.config import Settings
from thoth.records import Document
from thoth.store import Store
from thoth.store.schema import ALL_TABLES, CHUNKS, DOCUMENTS, SETTINGS
from thoth.writes.writer import Writer

TASKS = 3
# a tree's version chains from the one it replaced (history); its fingerprint and node ids say what it holds
VOLATILE = {"ingested_at", "updated_at", "built_at", "vector", "version", "tree_version"}


def build_corpus(root: Path) -> Path:
    write_corpus(root)
    weeks = ["Heavy rain flooded the lower meadow", "A dry spell lowered the river", "Snow melt raised the gauge"]
    for i in range(6):
        # a line that repeats on every page at the same place is page furniture to the PDF parser: each
        # page also has text of its own
        pages = [
            f"Report {i}, page {p}: the river station measured {i * 7 + p} centimetres of rain.\n\n"
            f"{weeks[p]} in week {p + 1} of season {i}."
            for p in range(3)
        ]
        write_text_pdf(root / "reports" / f"station-{i}.pdf", pages, title=f"Station {i}", author="Hydro Team")
    shutil.copy(root / "reports" / "station-0.pdf", root / "reports" / "copy-of-station-0.pdf")
    shutil.copy(root / "index.md", root / "welcome.md")
    write_image_only_pdf(root / "scans" / "scan.pdf")
    return root


def _comparable(table: str, row: dict) -> dict:
    if table == DOCUMENTS:  # a document's object version is its identity: only trees' versions are history
        return {k: v for k, v in row.items() if k not in VOLATILE - {"version"}}
    if table == SETTINGS and row["key"].startswith("tree."):  # a tree pointer: JSON with its build time
        row = {**row, "value": {k: v for k, v in json.loads(row["value"]).items() if k not in VOLATILE}}
    return {k: v for k, v in row.items() if k not in VOLATILE}


def snapshot(settings: Settings) -> dict[str, list[dict]]:
    """Every row of every table (vectors compared apart), sorted: what 'the same tables' means."""
    store = Store(settings)
    assert set(store.tables.names()) == set(ALL_TABLES)
    tables: dict[str, list[dict]] = {}
    for table in ALL_TABLES:
        rows = store.table(table).to_arrow().to_pylist()
        tables[table] = sorted(rows, key=lambda r: repr(sorted(_comparable(table, r).items())))
    return tables


def assert_same_tables(a: dict[str, list[dict]], b: dict[str, list[dict]]) -> None:
    for table in a:
        assert len(a[table]) == len(b[table]), table
        for left, right in zip(a[table], b[table], strict=True):
            assert _comparable(table, left) == _comparable(table, right), table
            if "vector" in left:  # the same backend in every process; batches differ, so float noise
                np.testing.assert_allclose(left["vector"], right["vector"], atol=1e-5)


@pytest.fixture
def onnx_settings(onnx_cache: Path):
    def make(db: Path) -> Settings:
        return make_settings(db, embed_backend="onnx", cache_dir=str(onnx_cache))

    return make


def run_tasks(corpus: Path, db: Path, count: int) -> list[subprocess.CompletedProcess]:
    """`count` ingest tasks started together, as a Cloud Run Job starts them."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ingest", "--source", str(corpus), "--db", str(db), "--name", "docs"],
            cwd=REPO_ROOT,
            env=job_env(CLOUD_RUN_TASK_INDEX=str(i), CLOUD_RUN_TASK_COUNT=str(count)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(count)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def test_parallel_tasks_write_exactly_what_one_task_writes(tmp_path: Path, onnx_settings) -> None:
    corpus = build_corpus(tmp_path / "corpus")
    single, parallel = onnx_settings(tmp_path / "single"), onnx_settings(tmp_path / "parallel")

    def both_runs(tasks: int) -> list[subprocess.CompletedProcess]:
        Writer(single).run(str(corpus), name="docs")
        # a single run updates its tree in place after changes (history-dependent): compare trees built
        # from scratch over the same chunks on both sides
        Writer(single).update_tree("docs", force=True)
        runs = run_tasks(corpus, tmp_path / "parallel", tasks)
        assert all(r.returncode == 0 for r in runs), [r.stderr[-2000:] for r in runs]
        Writer(parallel).update_tree("docs", force=True)  # parallel tasks leave the tree to one pass after them
        return runs

    runs = both_runs(TASKS)
    assert [r.stdout.split(":")[0] for r in runs] == [f"source docs (task {i}/{TASKS})" for i in range(1, TASKS + 1)]
    ingested = sum(int(r.stdout.split(" ingested")[0].rsplit(" ", 1)[1]) for r in runs)
    assert ingested == 13  # each file by exactly one task (the failed scan is reported, not ingested)
    tables = snapshot(parallel)
    keys = [row["key"] for row in tables[SETTINGS]]
    assert len(keys) == len(set(keys)), keys  # three tasks recorded the model at once: each key once
    assert_same_tables(snapshot(single), tables)

    # changes between runs: edited, deleted, renamed (content moves to a new key), a copy removed
    (corpus / "engineering" / "deploy.md").write_text("# Deploying\n\nDeploys now happen on Thursdays.\n")
    (corpus / "people" / "time-off.md").unlink()
    (corpus / "reports" / "station-3.pdf").rename(corpus / "reports" / "station-3-final.pdf")
    (corpus / "reports" / "station-0.pdf").unlink()  # its bytes stay under copy-of-station-0.pdf
    both_runs(2)  # another split of the same index
    after = snapshot(parallel)
    assert_same_tables(snapshot(single), after)
    keys = {r["key"] for r in after[CHUNKS]}
    assert "people/time-off.md" not in keys and "reports/station-3-final.pdf" in keys
    assert "reports/copy-of-station-0.pdf" in keys and "reports/station-0.pdf" not in keys
    assert {r["doc_id"] for r in after[CHUNKS]} == {r["doc_id"] for r in after[DOCUMENTS] if r["status"] == "ok"}


TWO_CHUNK_BATCHES = {"thoth.writes.writer.BATCH_CHUNKS": 2}  # many small commits


def test_run_killed_mid_write_then_rerun_loses_and_doubles_nothing(
    tmp_path: Path, onnx_settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = build_corpus(tmp_path / "corpus")
    clean = onnx_settings(tmp_path / "clean")
    Writer(clean).run(str(corpus), name="docs")

    db = tmp_path / "killed"
    proc = subprocess.Popen(  # many small commits: the kill lands between two of them
        ingest_command("--source", str(corpus), "--db", str(db), "--name", "docs", patches=TWO_CHUNK_BATCHES),
        cwd=REPO_ROOT,
        env=job_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    manifests = db / "chunks.lance" / "_versions"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if manifests.is_dir() and len(list(manifests.iterdir())) >= 4:  # some batches of chunks are in
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    killed = onnx_settings(db)
    partial = Store(killed).count_of(Document)
    assert partial < 14  # it died halfway

    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 2)
    rerun = Writer(killed).run(str(corpus), name="docs")
    assert len(rerun.ingested) + len(rerun.failed) == 14 - partial
    assert_same_tables(snapshot(clean), snapshot(killed))
