"""The remote embedding providers (thoth/embedders/remote.py, openai.py) against a real
OpenAI-compatible server on loopback (tests/embedding_server.py) serving the bundled model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ONNX_CACHE, LiveServer, call, job_env, make_settings, run_ingest, write_corpus
from tests.embedding_server import SERVED_MODEL, EmbeddingServer
from thoth.config import ConfigError, Settings
from thoth.embed import EmbedderUnavailable, get_tokenizer, model_name
from thoth.embedders import get_embedder
from thoth.embedders.openai import OpenAIEmbedder
from thoth.retrieval.search import DEFAULT_RANKING, hybrid_search
from thoth.store import ModelMismatch, Store
from thoth.writes.writer import Writer

TEXTS = ["How do I request time off?", "Expense reports are due monthly.", "The VPN needs a token."]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(key="sk-test") as server:
        yield server


def remote(server: EmbeddingServer, key: str = "sk-test", model: str = SERVED_MODEL, **kw: object) -> OpenAIEmbedder:
    """An embedder over `server` whose backoff waits are recorded, not slept."""
    waits: list[float] = []
    embedder = OpenAIEmbedder(server.base_url, model, key, max_tokens=254, sleep=waits.append, **kw)
    embedder.waits = waits  # type: ignore[attr-defined]
    return embedder


def openai_settings(db: Path, server: EmbeddingServer, **overrides: object):
    values: dict[str, object] = {
        "embed_provider": "openai",
        "embed_url": server.base_url,
        "embed_model": SERVED_MODEL,
        "embed_api_key": "sk-test",
        "cache_dir": str(ONNX_CACHE),
    }
    return make_settings(db, **(values | overrides))


def test_vectors_are_the_local_providers_exactly(endpoint: EmbeddingServer) -> None:
    embedder = remote(endpoint, batch_size=2, concurrency=2)
    assert embedder.dim == endpoint.model.dim and embedder.model_name == f"openai:{SERVED_MODEL}"
    got = embedder.embed(TEXTS)
    assert np.array_equal(got, endpoint.model.embed(TEXTS))  # order kept although the server reverses it
    assert embedder.sent.texts == 3 + 1  # the three, and the dimension probe
    assert embedder.sent.characters == sum(map(len, TEXTS)) + len("dimension probe")


def test_ingest_and_search_rank_exactly_as_the_local_provider(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    local = make_settings(tmp_path / "local", cache_dir=str(ONNX_CACHE))
    served = openai_settings(tmp_path / "served", endpoint)
    for settings in (local, served):
        summary = Writer(settings).run(str(corpus), name="handbook")
        assert not summary.failed, summary.render()
    assert Store(served).metadata.index_model() == (f"openai:{SERVED_MODEL}", 384)
    assert model_name(served) == f"openai:{SERVED_MODEL}"
    assert get_tokenizer(served) is get_tokenizer(local)  # chunks cut the same way
    for query in ["how many vacation days", "expense report deadline", "VPN token"]:
        got = [
            [
                (h.chunk_id, h.score)
                for h in hybrid_search(Store(s), get_embedder(s), query, 8, ranking=DEFAULT_RANKING).hits
            ]
            for s in (local, served)
        ]
        assert got[0] == got[1] and got[0], query


def test_a_wrong_key_is_refused_at_once_and_named(endpoint: EmbeddingServer) -> None:
    before = len(endpoint.requests)
    with pytest.raises(EmbedderUnavailable, match="refused the key .401.*THOTH_EMBED_API_KEY"):
        remote(endpoint, key="sk-wrong")
    assert len(endpoint.requests) == before + 1  # not retried


def test_the_key_can_come_from_a_file(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    (tmp_path / "key").write_text("sk-test\n")
    key = Settings.from_env({"THOTH_EMBED_API_KEY_FILE": str(tmp_path / "key")}).embed_api_key
    assert get_embedder(openai_settings(tmp_path / "db", endpoint, embed_api_key=key)).dim == 384
    with pytest.raises(ConfigError, match="THOTH_EMBED_API_KEY_FILE '.*nope' cannot be read"):
        Settings.from_env({"THOTH_EMBED_API_KEY_FILE": str(tmp_path / "nope")})


def test_a_wrong_model_is_named(endpoint: EmbeddingServer) -> None:
    with pytest.raises(EmbedderUnavailable, match="does not serve model 'bge-large'.*THOTH_EMBED_MODEL"):
        remote(endpoint, model="bge-large")


def test_429_then_success_backs_off_and_succeeds(endpoint: EmbeddingServer) -> None:
    embedder = remote(endpoint)
    endpoint.script[:] = ["500", "500", "429"]
    vectors = embedder.embed(TEXTS[:1])
    assert np.array_equal(vectors, endpoint.model.embed(TEXTS[:1]))
    # doubling from BACKOFF_SECONDS, then what the 429's Retry-After asks (at once)
    assert embedder.waits == [0.5, 1.0, 0.0]  # type: ignore[attr-defined]
    assert embedder.sent.retries == 3


def test_500_past_the_retries_is_an_unavailable_provider(endpoint: EmbeddingServer) -> None:
    embedder = remote(endpoint, retries=2)
    before = len(endpoint.requests)
    endpoint.script[:] = ["500"] * 3
    with pytest.raises(EmbedderUnavailable, match="is unavailable: 500 after 3 attempts"):
        embedder.embed(TEXTS[:1])
    assert len(endpoint.requests) == before + 3


def test_a_timeout_is_retried_then_reported(endpoint: EmbeddingServer) -> None:
    embedder = remote(endpoint, retries=1, timeout=0.5)
    endpoint.script[:] = ["slow"]
    assert embedder.embed(TEXTS[:1]).shape == (1, 384)  # the retry got through
    endpoint.script[:] = ["slow", "slow"]
    with pytest.raises(EmbedderUnavailable, match="did not answer after 2 attempts.*THOTH_EMBED_URL"):
        embedder.embed(TEXTS[:1])
    endpoint.script.clear()


def test_a_wrong_dimension_is_named() -> None:
    with EmbeddingServer(truncate_to=256) as short:
        assert remote(short, key="").dim == 256  # unasked, the endpoint's size is the index's
        with pytest.raises(EmbedderUnavailable, match="256-dimension vectors, not 384.*THOTH_EMBED_DIMENSIONS"):
            remote(short, key="", dimensions=384)
        assert short.requests[-1]["dimensions"] == 384  # asked of the endpoint


def test_batches_go_out_concurrently_within_the_limit(endpoint: EmbeddingServer) -> None:
    embedder = remote(endpoint, batch_size=1, concurrency=3)
    deadline = time.monotonic() + 30  # an earlier test's answer its client gave up on (a timeout) ends first
    while endpoint.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    endpoint.most_in_flight = 0
    texts = [f"text number {i}" for i in range(9)]
    assert np.array_equal(embedder.embed(texts), endpoint.model.embed(texts))
    assert endpoint.most_in_flight == 3


def test_the_server_answers_with_keyword_matches_while_the_provider_is_down(
    endpoint: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.embedders.remote.RETRIES", 1)
    settings = openai_settings(tmp_path / "db", endpoint)
    assert not Writer(settings).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    with LiveServer(settings) as live:
        up = call(live, "search_handbook", {"query": "requesting time off"})
        assert not up["isError"] and up["structuredContent"]["results"][0]["similarity"] is not None
        assert "warnings" not in (up.get("_meta") or {})
        endpoint.script[:] = ["500", "500"]  # both attempts fail
        down = call(live, "search_handbook", {"query": "how do I request vacation days"})
        assert not down["isError"]
        assert down["content"][0]["text"].startswith("Warning: vector search is unavailable (the openai embedding")
        assert "500 after 2 attempts" in down["_meta"]["warnings"][0]
        results = down["structuredContent"]["results"]
        assert results and all(hit["similarity"] is None for hit in results)  # keyword matches only
        assert "Found" in down["content"][1]["text"]  # the usual text follows the warning
        again = call(live, "search_handbook", {"query": "how do I request vacation days"})
        assert again["structuredContent"]["results"][0]["similarity"] is not None  # back when the provider is


def test_the_ingest_summary_says_what_was_sent(endpoint: EmbeddingServer, tmp_path: Path) -> None:
    env = job_env(
        THOTH_DB_URI=str(tmp_path / "db"),
        THOTH_EMBED_PROVIDER="openai",
        THOTH_EMBED_URL=endpoint.base_url,
        THOTH_EMBED_MODEL=SERVED_MODEL,
        THOTH_EMBED_API_KEY="sk-test",
    )
    run = run_ingest("--source", str(write_corpus(tmp_path / "corpus")), "--name", "handbook", env=env)
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("embedding: "))
    assert "characters sent to openai (all-MiniLM-L6-v2) in " in line, line


def test_a_server_on_another_model_names_the_settings_that_built_the_index(
    endpoint: EmbeddingServer, tmp_path: Path
) -> None:
    served = openai_settings(tmp_path / "db", endpoint)
    assert not Writer(served).run(str(write_corpus(tmp_path / "corpus")), name="handbook").failed
    local = make_settings(tmp_path / "db", cache_dir=str(ONNX_CACHE))
    with pytest.raises(ModelMismatch, match=f"THOTH_EMBED_PROVIDER=openai THOTH_EMBED_MODEL={SERVED_MODEL} or"):
        Store(local).metadata.check_model(get_embedder(local).model_name, 384)
