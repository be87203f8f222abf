"""The chunk table's indexes (thoth.store.indexes) and the lazy lancedb import.

Correctness only: the IVF_RQ index is built when the table passes the threshold, searches go through
it, and recall@10 against exact search stays high; an index of an older type is trained again as IVF_RQ
by the next ingest. Timings are in `python -m bench.search` and docs/benchmarks.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import make_settings, nearest
from thoth.records import Chunk, Document, VectorIndex
from thoth.store import Store
from thoth.store.schema import CHUNKS

DIM = 32  # small vectors keep training fast; the index code does not depend on the width
ROWS = 3000


def clustered_unit_vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 40 random centres: neighbourhoods as real embeddings have them."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    v = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.6, (n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def make_store(tmp_path: Path, rows: int = ROWS, **settings: object) -> tuple[Store, np.ndarray]:
    store = Store(make_settings(tmp_path / "db", **settings))
    store.ensure_tables(DIM)
    vectors = clustered_unit_vectors(rows, seed=1)
    store.insert(
        Chunk,
        [
            {"chunk_id": f"c{i:05d}", "source_id": "s", "doc_id": "d", "text": f"row {i}", "search_text": f"row {i}"}
            | {"vector": v}
            for i, v in enumerate(vectors)
        ],
    )
    store.insert(Document, [{"doc_id": "d", "source_id": "s", "key": "rows.md", "status": "ok"}])  # searches serve it
    return store, vectors


def exact_top_10(vectors: np.ndarray, query: np.ndarray) -> set[str]:
    """The 10 nearest rows by cosine, computed here (the vectors are unit length)."""
    return {f"c{i:05d}" for i in np.argsort(-(vectors @ query), kind="stable")[:10]}


def recall_at_10(store: Store, vectors: np.ndarray, queries: np.ndarray) -> float:
    found = [len({r.chunk_id for r in nearest(store, q, 10)} & exact_top_10(vectors, q)) / 10 for q in queries]
    return float(np.mean(found))


def test_index_built_past_threshold_and_recall_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", ROWS)
    store, vectors = make_store(tmp_path)
    info = store.indexes.ensure_vector()
    assert info is not None and info.action == "built" and info.rows == ROWS
    assert info.index == VectorIndex("vector_idx", "IvfRq", indexed_rows=ROWS, unindexed_rows=0)

    queries = vectors[:40] + np.random.default_rng(2).normal(0, 0.05, (40, DIM)).astype(np.float32)
    plan = store.table(CHUNKS).search(queries[0]).metric("cosine").nprobes(4).explain_plan()
    assert "ANN" in plan  # searches go through the index now
    assert recall_at_10(store, vectors, queries) >= 0.9
    store.chunks.warm()
    held = store.chunks._memory.held
    assert held is not None and held[1] is None  # an indexed table: not in memory

    # new rows are folded into the existing index, not trained again
    store.insert(
        Chunk,
        [{"chunk_id": "extra", "source_id": "s", "doc_id": "d", "text": "x", "search_text": "x", "vector": vectors[0]}],
    )
    again = store.indexes.ensure_vector()
    assert again is not None and again.action == "updated"
    assert again.index is not None and again.index.unindexed_rows == 0 and again.index.indexed_rows == ROWS + 1
    assert "extra" in {r.chunk_id for r in nearest(store, vectors[0], 3)}


@pytest.mark.parametrize("old", ["IvfPq", "IvfHnswSq"])
def test_an_index_of_an_older_type_is_trained_again_as_ivf_rq(
    tmp_path: Path, old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A table indexed by an older version (IVF_PQ or IVF_HNSW_SQ): the next ingest trains an IVF_RQ index in
    # its place, grown or not.
    from lancedb.index import HnswSq, IvfPq

    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", ROWS)
    store, vectors = make_store(tmp_path)
    config = IvfPq(distance_type="cosine", num_partitions=1, num_sub_vectors=DIM // 4)
    if old == "IvfHnswSq":
        config = HnswSq(distance_type="cosine", num_partitions=1)
    store.table(CHUNKS).create_index("vector", config=config)
    assert store.indexes.vector_index() is not None and store.indexes.vector_index().type == old

    info = store.indexes.ensure_vector(fold_in=False)
    assert info is not None and info.action == "retrained" and info.index is not None and info.index.type == "IvfRq"
    assert store.indexes.ensure_vector(fold_in=False) is None  # now current: nothing to do
    queries = vectors[:20] + np.random.default_rng(3).normal(0, 0.05, (20, DIM)).astype(np.float32)
    assert recall_at_10(Store(store.settings), vectors, queries) >= 0.9


def test_no_index_below_threshold_or_when_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", 401)
    store, vectors = make_store(tmp_path, rows=400)
    assert store.indexes.ensure_vector() is None and store.indexes.vector_index() is None
    assert store.indexes.ensure_vector(min_rows=0) is None  # 0: never
    assert store.indexes.ensure_vector(min_rows=100) is not None  # never below MIN_TRAIN_ROWS, but 400 >= 256
    assert len(nearest(store, vectors[0], 10)) == 10


def test_ingest_builds_the_index_past_the_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from thoth.writes.writer import Writer

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):  # ~300 short chunks: just past MIN_TRAIN_ROWS
        notes = (f"## Part {j}\n\nNote {i}-{j} about topic {j % 7} and item {i * 50 + j}." for j in range(50))
        sections = "\n\n".join(notes)
        (corpus / f"page-{i}.md").write_text(f"# Page {i}\n\n{sections}\n")
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", 256)
    settings = make_settings(tmp_path / "db")
    summary = Writer(settings).run(str(corpus), name="notes")
    assert summary.chunks_written >= 256, summary.render()
    index = Store(settings).indexes.vector_index()
    assert index is not None and index.indexed_rows == summary.chunks_written


def test_lancedb_import_defers_the_rest_client_until_used(tmp_path: Path) -> None:
    """lancedb imports without running its REST client's API modules (thoth/_imports.py); the client
    still works, validation included, once something asks the package for a name."""
    code = """
import sys
import pydantic
from thoth._imports import is_deferred
from thoth.store.lance import lancedb

db = lancedb().connect(sys.argv[1])
db.create_table("t", data=[{"x": 1}])
assert db.open_table("t").count_rows() == 1
client = sys.modules["lance_namespace_urllib3_client"]
assert is_deferred(client) and is_deferred(sys.modules["lance_namespace_urllib3_client.api"])
assert not [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api.")]

from lance_namespace_urllib3_client import ApiClient  # the first name asked for runs the real __init__
from lance_namespace_urllib3_client.api.table_api import TableApi
assert not is_deferred(client) and client.__version__
try:
    TableApi(ApiClient()).alter_table_add_columns(id=123, alter_table_add_columns_request=None)
except pydantic.ValidationError as exc:
    assert "id" in str(exc)
else:
    raise AssertionError("no validation error")
print("ok")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "db")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_a_deeper_search_reranks_the_same_candidates_and_keeps_recall_at_10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hybrid search asks the index for 40 hits: its first 10 are as good as a 10-hit search's (issue 17)."""
    from thoth.store.chunks import refine_candidates

    assert refine_candidates(50, 10) == refine_candidates(50, 40) == 500 and refine_candidates(1, 40) == 40
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", ROWS)
    store, vectors = make_store(tmp_path)
    store.indexes.ensure_vector()
    queries = clustered_unit_vectors(20, seed=9)
    deep = [{r.chunk_id for r in nearest(store, q, 40)[:10]} for q in queries]
    shallow = [{r.chunk_id for r in nearest(store, q, 10)} for q in queries]
    exact = [exact_top_10(vectors, q) for q in queries]
    recall_deep = np.mean([len(d & e) / 10 for d, e in zip(deep, exact, strict=True)])
    recall_shallow = np.mean([len(s & e) / 10 for s, e in zip(shallow, exact, strict=True)])
    assert recall_deep >= recall_shallow - 0.02 and recall_shallow >= 0.7


def test_a_first_build_past_the_threshold_is_compacted_before_its_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.store.indexes.VECTOR_INDEX_MIN_ROWS", 300)
    store, vectors = make_store(tmp_path, rows=300)
    extra = [
        {"chunk_id": f"x{i}", "source_id": "s", "doc_id": "d", "text": "x", "search_text": "x", "vector": vectors[i]}
        for i in range(3)
    ]
    for row in extra:  # one data file per write, as ingest's batches leave them
        store.insert(Chunk, [row])
    assert store.table(CHUNKS).stats()["fragment_stats"]["num_fragments"] == 4
    before = [h.chunk_id for h in nearest(store, vectors[7], 10)]
    store.indexes.ensure_fts()
    assert store.table(CHUNKS).stats()["fragment_stats"]["num_fragments"] == 1
    assert [h.chunk_id for h in nearest(store, vectors[7], 10)] == before  # the same rows, compacted
    assert store.count_of(Chunk) == 303

    small, _ = make_store(tmp_path / "small", rows=50)
    small.insert(Chunk, extra)
    small.indexes.ensure_fts()  # below the threshold: left as written
    assert small.table(CHUNKS).stats()["fragment_stats"]["num_fragments"] == 2
