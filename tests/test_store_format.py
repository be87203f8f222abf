"""The index format (thoth.store.migration): recorded by the first ingest, an index without one migrated
once by the next ingest and logged, an index of a newer format refused naming its version. Real LanceDB
folders built by the real writer."""

from __future__ import annotations

import logging
from pathlib import Path

import lancedb
import pytest

from tests.conftest import make_settings, write_corpus
from thoth.app import Thoth
from thoth.records import Chunk, IngestRun, Source, TreePointer
from thoth.store import Store, StoreError
from thoth.store.schema import INDEX_FORMAT, META_INDEX_FORMAT
from thoth.writes.writer import Writer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("format") / "corpus")


def test_an_index_without_a_format_is_migrated_once_by_the_next_ingest(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(tmp_path / "db", tree_build=False)
    Writer(settings).run(str(corpus), name="handbook")
    Store(settings).record_run(IngestRun(run_id="r0", source_id="handbook", trigger="job"), keep=5)
    assert Store(settings).metadata.get(META_INDEX_FORMAT) == str(INDEX_FORMAT)
    # as an older Thoth left it: no format recorded, columns added since missing (rows read them as None)
    db = lancedb.connect(settings.db_uri)
    db.open_table("sources").drop_columns(["include", "exclude"])
    db.open_table("ingest_runs").drop_columns(["state", "uri"])
    db.drop_table("sessions")  # created only once a session was written
    # a tree pointer written before pointers recorded their layer sizes
    dim = Store(settings).metadata.index_model()[1]
    nodes = [
        {"node_id": f"n{i}", "source_id": "handbook", "tree_version": "v0", "level": level, "vector": [0.0] * dim}
        for i, level in enumerate((1, 1, 2))
    ]
    Store(settings).metadata.replace_tree("handbook", nodes, TreePointer("v0", nodes=3))
    Store(settings).delete_settings([META_INDEX_FORMAT])
    assert Store(settings).first(Source, {"source_id": "handbook"}).include == ()

    with caplog.at_level(logging.WARNING, logger="thoth.store"):
        summary = Writer(settings).run(str(corpus), name="handbook")  # nothing changed: still migrates
    assert not summary.ingested
    migrated = [r.getMessage() for r in caplog.records if "migrated" in r.getMessage()]
    assert len(migrated) == 1 and f"from no recorded format to format {INDEX_FORMAT}" in migrated[0], migrated
    assert "sources gained include, exclude" in migrated[0] and "ingest_runs gained state, uri" in migrated[0]
    assert "sessions created" in migrated[0] and "tree pointers of handbook given their layer sizes" in migrated[0]
    store = Store(settings)
    chunks = store.count_of(Chunk, {"source_id": "handbook"})
    assert "sessions" in store.tables.names() and store.tree_pointer("handbook").layer_sizes == (chunks, 2, 1)
    assert store.metadata.get(META_INDEX_FORMAT) == str(INDEX_FORMAT)
    assert {"include", "exclude"} <= set(store.table("sources").schema.names)
    assert store.runs.get("r0").state == ""  # the rows already there read NULL, the record's default
    store.record_run(IngestRun(run_id="r1", source_id="handbook", state="running", uri=str(corpus)), keep=5)
    assert store.runs.get("r1").state == "running"

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="thoth.store"):
        Writer(settings).run(str(corpus), name="handbook")
    assert "migrated" not in caplog.text  # once


def test_an_index_of_a_newer_format_is_refused_naming_it(corpus: Path, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", tree_build=False)
    Writer(settings).run(str(corpus), name="handbook")
    Store(settings).metadata.set({META_INDEX_FORMAT: str(INDEX_FORMAT + 1)})
    newer = rf"is format {INDEX_FORMAT + 1}, newer than this Thoth reads \(format {INDEX_FORMAT}\)"
    with pytest.raises(StoreError, match=newer):
        Store(settings).metadata.index_model()  # what a server's model check reads first
    health = Thoth(settings).health()
    assert health.http_status == 503 and f"is format {INDEX_FORMAT + 1}, newer" in health.reason
    with pytest.raises(StoreError, match=newer):
        Writer(settings).run(str(corpus), name="handbook")
