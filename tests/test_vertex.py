"""The `vertex` embedding provider (thoth/embedders/vertex.py) through google-genai against a real
Vertex-shaped endpoint on loopback (tests/vertex_server.py) serving the bundled model: the requests'
documented shapes, ingest and search ranking as the local provider, retries and clear refusals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from google.auth.credentials import AnonymousCredentials
from google.oauth2.credentials import Credentials

from tests.conftest import ONNX_CACHE, make_settings, write_corpus
from tests.vertex_server import LOCATION, PROJECT, TOKEN, VertexServer
from thoth.embed import EmbedderUnavailable, Prompts
from thoth.embedders import get_embedder
from thoth.embedders.vertex import VertexEmbedder
from thoth.retrieval.search import DEFAULT_RANKING, hybrid_search
from thoth.store import ModelMismatch, Store
from thoth.writes.writer import Writer

TASKS = Prompts(query_task="RETRIEVAL_QUERY", document_task="RETRIEVAL_DOCUMENT")
BASE = f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[VertexServer]:
    with VertexServer() as server:
        yield server


def vertex(server: VertexServer, model: str = "text-embedding-005", **kw: object) -> VertexEmbedder:
    """A vertex embedder over `server` with a fixed token (never real credentials); waits recorded, not slept."""
    waits: list[float] = []
    values: dict[str, object] = {"project": PROJECT, "dimensions": 384, "retries": 2} | kw
    embedder = VertexEmbedder(
        model,
        str(values.pop("project")),
        LOCATION,
        prompts=TASKS,
        base_url=server.url,
        credentials=values.pop("credentials", Credentials(token=TOKEN)),
        max_tokens=254,
        sleep=waits.append,
        **values,  # type: ignore[arg-type]
    )
    embedder.waits = waits  # type: ignore[attr-defined]
    return embedder


def test_text_embedding_requests_have_the_documented_shape(endpoint: VertexServer) -> None:
    embedder = vertex(endpoint, batch_size=1000)
    endpoint.requests.clear()
    texts = [f"policy paragraph {i}" for i in range(260)]
    got = embedder.embed_documents(texts)
    assert np.array_equal(got, endpoint.model.embed(texts))
    paths = [p for p, _ in endpoint.requests]
    assert paths == [f"{BASE}/text-embedding-005:predict"] * 4
    bodies = [b for _, b in endpoint.requests]
    # Vertex's limits: 250 texts and 20,000 tokens per request; texts of up to 254 word pieces: 78 a request
    assert sorted(len(b["instances"]) for b in bodies) == [26, 78, 78, 78]
    assert {i["task_type"] for b in bodies for i in b["instances"]} == {"RETRIEVAL_DOCUMENT"}
    assert {b["parameters"]["outputDimensionality"] for b in bodies} == {384}
    endpoint.requests.clear()
    embedder.embed_queries(["how many vacation days"])
    ((path, body),) = endpoint.requests
    assert body["instances"] == [{"content": "how many vacation days", "task_type": "RETRIEVAL_QUERY"}]


def test_gemini_embedding_sends_one_text_per_request(endpoint: VertexServer) -> None:
    embedder = vertex(endpoint, "gemini-embedding-001")
    assert embedder.batch_size == 1 and embedder.model_name == "vertex:gemini-embedding-001"
    endpoint.requests.clear()
    texts = ["How do I request time off?", "Expense reports are due monthly.", "The VPN needs a token."]
    assert np.array_equal(embedder.embed_queries(texts), endpoint.model.embed(texts))
    assert [p for p, _ in endpoint.requests] == [f"{BASE}/gemini-embedding-001:embedContent"] * 3
    sent = sorted(b["content"]["parts"][0]["text"] for _, b in endpoint.requests)
    assert sent == sorted(texts)
    configs = [b["embedContentConfig"] for _, b in endpoint.requests]
    assert all(c["taskType"] == "RETRIEVAL_QUERY" and c["outputDimensionality"] == 384 for c in configs)


def test_ingest_and_search_rank_as_the_local_provider(endpoint: VertexServer, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    local = make_settings(tmp_path / "local", cache_dir=str(ONNX_CACHE))
    served = make_settings(tmp_path / "served", cache_dir=str(ONNX_CACHE), embed_provider="vertex")
    embedder = vertex(endpoint)
    for settings, using in ((local, None), (served, embedder)):
        summary = Writer(settings, embedder=using).run(str(corpus), name="handbook")
        assert not summary.failed, summary.render()
    store = Store(served)
    assert store.metadata.index_model() == ("vertex:text-embedding-005", 384)
    assert store.metadata.index_prompts() == ("", "", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT")
    for query in ["how many vacation days", "expense report deadline", "VPN token"]:
        got = [
            [(h.chunk_id, h.score) for h in hybrid_search(Store(s), e, query, 8, ranking=DEFAULT_RANKING).hits]
            for s, e in ((local, get_embedder(local)), (served, embedder))
        ]
        assert got[0] == got[1] and got[0], query
    other_tasks = "task types .RETRIEVAL_QUERY.* but this process loads .*task types .QUESTION_ANSWERING"
    with pytest.raises(ModelMismatch, match=other_tasks):
        store.metadata.check_model(
            "vertex:text-embedding-005", 384, ("", "", "QUESTION_ANSWERING", "RETRIEVAL_DOCUMENT")
        )


def test_a_429_is_retried_then_succeeds(endpoint: VertexServer) -> None:
    embedder = vertex(endpoint)
    endpoint.script[:] = ["429", "503"]
    got = embedder.embed_documents(["Expense reports are due monthly."])
    assert np.array_equal(got, endpoint.model.embed(["Expense reports are due monthly."]))
    assert embedder.sent.retries == 2 and embedder.waits == [0.5, 1.0]  # type: ignore[attr-defined]


def test_refusals_name_the_setting_to_fix(endpoint: VertexServer) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"403: PERMISSION_DENIED.*THOTH_GCP_PROJECT"):
        vertex(endpoint, project="someone-elses-project")
    with pytest.raises(EmbedderUnavailable, match=r"does not serve model 'text-embedding-999'.*THOTH_EMBED_MODEL"):
        vertex(endpoint, "text-embedding-999")
    with pytest.raises(EmbedderUnavailable, match="refused THOTH_EMBED_DIMENSIONS=4096"):
        vertex(endpoint, dimensions=4096)
    with pytest.raises(EmbedderUnavailable, match="no usable Google credentials.*roles/aiplatform.user"):
        vertex(endpoint, credentials=AnonymousCredentials())  # no token to send: refused before any request
    endpoint.script[:] = ["429"] * 3
    with pytest.raises(EmbedderUnavailable, match="unavailable: 429 after 3 attempts"):
        vertex(endpoint)
    endpoint.script.clear()
    with pytest.raises(EmbedderUnavailable, match="needs a project: set THOTH_GCP_PROJECT"):
        get_embedder(make_settings(Path("unused"), embed_provider="vertex", gcp_project=""))
