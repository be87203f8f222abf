"""The LRU of query embeddings (thoth.embed.CachedEmbedder) and the server's one-thread query embedder."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ONNX_CACHE
from thoth.app import QUERY_CACHE_SIZE, Thoth
from thoth.config import Settings
from thoth.embed import CachedEmbedder, Embedder
from thoth.embedders import get_embedder


@pytest.fixture(scope="module")
def model() -> Embedder:
    return get_embedder(Settings.from_env({}, cache_dir=str(ONNX_CACHE)), threads=1)


def test_a_repeated_query_is_answered_from_the_cache_with_the_same_vector(model: Embedder) -> None:
    cached = CachedEmbedder(model, size=8)
    first = cached.embed(["how do I request time off"])
    again = cached.embed(["how do I request time off"])
    assert (cached.hits, cached.misses) == (1, 1)
    assert first.shape == again.shape == (1, model.dim)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, model.embed(["how do I request time off"]))


def test_the_least_recently_used_query_goes_first(model: Embedder) -> None:
    cached = CachedEmbedder(model, size=2)
    cached.embed(["alpha"])
    cached.embed(["beta"])
    cached.embed(["alpha"])  # alpha is now the most recent: beta goes when gamma comes
    cached.embed(["gamma"])
    assert cached.misses == 3
    cached.embed(["alpha"])
    assert cached.hits == 2
    cached.embed(["beta"])
    assert cached.misses == 4  # beta was evicted


def test_batches_are_not_cached_and_a_caller_cannot_change_the_cache(model: Embedder) -> None:
    cached = CachedEmbedder(model, size=8)
    batch = cached.embed(["one passage", "another passage"])
    assert batch.shape == (2, model.dim) and (cached.hits, cached.misses) == (0, 0)
    vector = cached.embed(["deploy"])
    vector[:] = 0.0  # e.g. a caller normalising in place
    assert np.linalg.norm(cached.embed(["deploy"])) == pytest.approx(1.0, abs=1e-5)


def test_size_zero_caches_nothing(model: Embedder) -> None:
    cached = CachedEmbedder(model, size=0)
    cached.embed(["deploy"])
    cached.embed(["deploy"])
    assert (cached.hits, cached.misses) == (0, 0)


def test_the_server_embeds_queries_on_two_threads_at_most_through_the_cache(indexed: Settings) -> None:
    from thoth.app import SERVER_EMBED_THREADS
    from thoth.embed import available_cpus

    app = Thoth(indexed)
    assert app.embed_threads == min(SERVER_EMBED_THREADS, available_cpus())
    embedder = app.embedder()
    assert isinstance(embedder, CachedEmbedder) and embedder.size == QUERY_CACHE_SIZE
    assert app.embedder() is embedder  # loaded once
