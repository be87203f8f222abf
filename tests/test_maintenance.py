"""Maintenance over a real LanceDB index after many small writes: versions and files come back down,
new rows are folded into the indexes, orphans are swept only after their grace, searches still find
everything; `python -m ingest maintain` reports what it removed. Also: a small write commits few
versions, and rewrites neither settings nor the source row when nothing in them changed."""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import bm25, job_env, make_settings, run_ingest, write_corpus
from thoth.errors import NotFound
from thoth.records import Chunk
from thoth.store import Store
from thoth.store.maintenance import maintain, sweep_figures, sweep_orphans, table_health
from thoth.store.schema import SETTINGS, SOURCES
from thoth.writes.documents import ingest_text
from thoth.writes.writer import Writer


def note(n: int) -> str:
    return f"Note {n}: the zorbluxian quartermaster counted {n * 7} kumquats on shelf {n}."


def test_maintenance_brings_versions_and_files_down(tmp_path: Path, onnx_cache: Path) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    assert not writer.run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    for n in range(12):
        ingest_text(writer, writer.store, "notes", note(n), f"notes/{n}.md")
    before = table_health(writer.store)
    assert before["chunks"].versions > 12 and before["chunks"].unindexed_rows == 12

    report = maintain(writer.store, retention=timedelta(0))
    after = table_health(Store(settings))
    assert sum(report.versions_removed.values()) > 0 and report.versions_removed["chunks"] > 0
    for name, health in after.items():
        assert health.versions <= 2, (name, health)  # the latest, and the compacted one
        assert health.fragments <= 2, (name, health)  # a fresh index of the same rows has as many
        assert health.last_maintained
    assert after["chunks"].unindexed_rows == 0  # folded into the BM25 index
    hits = bm25(Store(settings), "zorbluxian", 20, {"source_id": "notes"})
    assert len(hits) == 12

    # the command line: it reports what it removed
    ingest_text(writer, writer.store, "notes", note(99), "notes/99.md")
    env = job_env(THOTH_DB_URI=str(tmp_path / "db"), THOTH_TREES="off")
    done = run_ingest("maintain", env=env, patches={"thoth.store.maintenance.RETENTION_MINUTES": 0})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("maintenance: ") and "chunks:" in done.stdout
    missing = run_ingest("maintain", env=job_env(THOTH_DB_URI=str(tmp_path / "none")))
    assert missing.returncode == 1 and "no index" in missing.stderr


def test_orphans_are_swept_after_their_grace_only(tmp_path: Path) -> None:
    """Rows no document owns (a write killed after its switch, or one in flight) wait one grace period."""
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", note(1), "notes/1.md")
    row = writer.store.find(Chunk, {"source_id": "notes"})[0]
    orphan = {**{k: getattr(row, k) for k in ("source_id", "key", "text")}, "chunk_id": "x", "doc_id": "gone"}
    writer.store.insert(Chunk, [{**orphan, "vector": [0.1] * writer.embedder.dim, "search_text": row.text}])

    assert sweep_orphans(writer.store, grace=timedelta(minutes=10)) == 0  # seen now: perhaps a write in flight
    assert writer.store.count_of(Chunk, {"doc_id": "gone"}) == 1
    assert sweep_orphans(writer.store, grace=timedelta(0)) == 1
    assert writer.store.count_of(Chunk, {"doc_id": "gone"}) == 0
    assert writer.store.count_of(Chunk, {"source_id": "notes"}) == 1


def test_rows_still_being_added_are_not_swept(tmp_path: Path) -> None:
    """A long PDF's windows are staged for minutes before its documents row: each window restarts the grace."""
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", note(1), "notes/1.md")
    row = writer.store.find(Chunk, {"source_id": "notes"})[0]

    def stage(n: int) -> None:
        staged = {**{k: getattr(row, k) for k in ("source_id", "key", "text")}, "chunk_id": f"w{n}", "doc_id": "long"}
        writer.store.insert(Chunk, [{**staged, "vector": [0.1] * writer.embedder.dim, "search_text": row.text}])

    grace = timedelta(seconds=1)
    stage(1)
    assert sweep_orphans(writer.store, grace) == 0
    time.sleep(1.1)
    stage(2)  # the next window, after the grace: still being written
    assert sweep_orphans(writer.store, grace) == 0 and writer.store.count_of(Chunk, {"doc_id": "long"}) == 2
    time.sleep(1.1)  # no window since: the write was killed
    assert sweep_orphans(writer.store, grace) == 1 and writer.store.count_of(Chunk, {"doc_id": "long"}) == 0


def test_figure_pictures_no_chunk_names_are_swept(tmp_path: Path) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", note(1), "notes/1.md")
    row = writer.store.find(Chunk, {"source_id": "notes"})[0]
    named, unnamed = (hashlib.sha256(b).hexdigest() + ".png" for b in (b"named", b"unnamed"))
    for name in (named, unnamed):
        writer.store.figures.put(name, b"\x89PNG picture bytes")
    figure = {**{k: getattr(row, k) for k in ("source_id", "key", "text", "doc_id")}, "chunk_id": "f", "figure": named}
    writer.store.insert(Chunk, [{**figure, "vector": [0.1] * writer.embedder.dim, "search_text": row.text}])

    assert sweep_figures(writer.store, grace=timedelta(minutes=10)) == 0  # just written: perhaps a write in flight
    assert sweep_figures(writer.store, grace=timedelta(0)) == 1
    assert writer.store.figures.get(named)
    with pytest.raises(NotFound):
        writer.store.figures.get(unnamed)


def test_a_small_write_leaves_settings_and_source_alone(tmp_path: Path) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", note(1), "notes/1.md")
    ingest_text(writer, writer.store, "notes", note(2), "notes/2.md")
    versions = writer.store.versions()
    ingest_text(writer, writer.store, "notes", note(3), "notes/2.md")  # the same counts: a replaced note
    after = writer.store.versions()
    assert after[SETTINGS] == versions[SETTINGS] and after[SOURCES] == versions[SOURCES]
    assert sum(after[n] - versions[n] for n in after) <= 5, {n: after[n] - versions[n] for n in after}
