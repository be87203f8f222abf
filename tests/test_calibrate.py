"""The cosine floor measured at ingest (thoth/writes/calibrate.py), kept with the model's identity
(thoth/store/calibration.py) and used by hybrid search for every model but the bundled one, whose
dev-chosen floor stands."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ONNX_CACHE, make_settings, write_topic_corpus
from tests.embedding_server import SERVED_MODEL, EmbeddingServer
from thoth.embedders import get_embedder
from thoth.retrieval.search import DEFAULT_RANKING, UNMEASURED_MODEL_RANKING, hybrid_search, ranking_for
from thoth.store import Store
from thoth.store.schema import META_EMBED_FLOOR
from thoth.writes.calibrate import FLOOR_QUANTILE, calibrate
from thoth.writes.writer import Writer


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server


def unrelated_quantile(store: Store) -> tuple[float, int, int]:
    """The floor worked out pair by pair over every chunk: (quantile, chunks, pairs)."""
    doc_ids, vectors = store.calibration.sample(100_000)
    cosines = [
        float(np.dot(vectors[i], vectors[j]))
        for i, j in itertools.combinations(range(len(doc_ids)), 2)
        if doc_ids[i] != doc_ids[j]
    ]
    return float(np.quantile(cosines, FLOOR_QUANTILE)), len(doc_ids), len(cosines)


def test_ingest_records_the_quantile_of_unrelated_pairs_and_the_bundled_model_keeps_its_floor(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE), tree_build=False)
    assert not Writer(settings).run(str(write_topic_corpus(tmp_path / "corpus")), name="topics").failed
    store = Store(settings)
    floor = store.calibration.floor()
    assert floor is not None
    expected, chunks, pairs = unrelated_quantile(store)
    assert (floor.chunks, floor.pairs, floor.quantile) == (chunks, pairs, FLOOR_QUANTILE)
    assert floor.floor == pytest.approx(expected, abs=1e-4)
    assert ranking_for(get_embedder(settings), store) == DEFAULT_RANKING  # 0.2, whatever was measured


def test_another_model_ranks_with_the_floor_measured_on_its_index(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    """The bundled model served through `openai` is another model by name: its hybrid ranking scales
    cosines from the measured floor, exactly as the local model would with that floor."""
    served = make_settings(
        tmp_path / "db",
        cache_dir=str(ONNX_CACHE),
        tree_build=False,
        embed_provider="openai",
        embed_url=endpoint.base_url,
        embed_model=SERVED_MODEL,
    )
    assert not Writer(served).run(str(write_topic_corpus(tmp_path / "corpus")), name="topics").failed
    store, remote = Store(served), get_embedder(served)
    floor = store.calibration.floor()
    assert floor is not None and floor.floor != DEFAULT_RANKING.vector_floor
    measured = replace(DEFAULT_RANKING, vector_floor=floor.floor)
    assert ranking_for(remote, store) == measured
    local = get_embedder(make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE)))
    for query in ("how to water the garden", "bake bread at home"):
        got = hybrid_search(store, remote, query, 6).hits
        assert [(h.chunk_id, h.score) for h in got] == [
            (h.chunk_id, h.score) for h in hybrid_search(store, local, query, 6, ranking=measured).hits
        ]
    # An index from before floors were measured: min-max, which assumes nothing
    store.metadata.set({META_EMBED_FLOOR: ""})
    assert ranking_for(remote, Store(served)) == UNMEASURED_MODEL_RANKING


def test_a_grown_index_is_measured_again_until_its_sample_is_full(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE), tree_build=False)
    corpus = tmp_path / "corpus"
    measured = []
    for files in (2, 4, 6):  # files per topic, four topics
        write_topic_corpus(corpus, files_per_topic=files)
        assert not Writer(settings).run(str(corpus), name="topics").failed
        measured.append(Store(settings).calibration.recorded())
    assert measured[0] is None  # 28 pairs say too little: not recorded yet
    assert measured[1] is not None and measured[2] is not None
    store = Store(settings)
    assert measured[1].chunks < measured[2].chunks == store.calibration.chunk_count()  # every chunk, while < 400
    assert calibrate(store) == measured[2]  # nothing new: the recorded floor stands
