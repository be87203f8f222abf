"""The optional reranker (THOTH_RERANK_PROVIDER, off by default): it reorders hybrid search's first fused
hits by a model that reads the query and each passage together: a `/rerank` endpoint in Cohere's shape
(`cohere`: Cohere, Jina, vLLM) or TEI's (`tei`), the Vertex AI ranking API (`vertex`), or a local
cross-encoder folder (`cross-encoder`). A reranker that is slow (past BUDGET_SECONDS), down
or failing leaves the fused ranking as it was: a search never fails or waits longer because of it.
docs/models.md ("Reranking") has what it was measured to do.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Any, Protocol

import httpx

from thoth.config import Settings
from thoth.records import Hit

log = logging.getLogger(__name__)

# Reranking runs here so a search can stop waiting at its budget; a late answer is dropped when it comes.
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="thoth-rerank")
VERTEX_RANKING_ROOT = "https://discoveryengine.googleapis.com"
VERTEX_RANKING_MODEL = "semantic-ranker-default@latest"  # Google's default; semantic-ranker-fast-004 is faster
BUDGET_SECONDS = 2.0  # a search waits this long for the reranker; past it, the fused ranking stands


class RerankFailed(RuntimeError):
    """The reranker answered with something other than one score per passage."""


class Reranker(Protocol):
    name: str  # what the log says failed

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """One relevance score per text, higher is more relevant."""
        ...


class EndpointReranker:
    """`POST {url}` in Cohere's shape (`{"model", "query", "documents"}` -> `{"results": [{"index",
    "relevance_score"}]}`) or text-embeddings-inference's (`{"query", "texts"}` -> `[{"index", "score"}]`);
    either answer is read from either shape."""

    def __init__(self, shape: str, url: str, model: str = "", key: str = "", timeout: float = 2.0):
        self.name = f"{shape} reranker at {url}"
        self.shape, self.url, self.model = shape, url, model
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def scores(self, query: str, texts: list[str]) -> list[float]:
        body: dict[str, Any] = {"query": query}
        if self.shape == "tei":
            body["texts"] = texts
        else:
            body |= {"documents": texts, "top_n": len(texts)}
            if self.model:
                body["model"] = self.model
        response = self._client.post(self.url, json=body)
        if response.status_code != 200:
            raise RerankFailed(f"{response.status_code}: {response.text.strip()[:200]}")
        return by_index(response.json(), len(texts))


class VertexRanker:
    """The Vertex AI ranking API (Discovery Engine): `POST {root}/v1/projects/{project}/locations/global/
    rankingConfigs/default_ranking_config:rank` with `{"model", "query", "records": [{"id", "content"}],
    "topN", "ignoreRecordDetailsInResponse": true}` -> `{"records": [{"id", "score"}]}`, best first.
    `credentials=None`: application default credentials (the caller needs discoveryengine.rankingConfigs.rank,
    e.g. roles/discoveryengine.viewer)."""

    def __init__(self, project: str, model: str = "", root: str = "", timeout: float = 2.0, credentials: Any = None):
        root = (root or VERTEX_RANKING_ROOT).rstrip("/")
        self.url = f"{root}/v1/projects/{project}/locations/global/rankingConfigs/default_ranking_config:rank"
        self.name = f"vertex ranker ({model or VERTEX_RANKING_MODEL}, project {project})"
        self.project, self.model = project, model or VERTEX_RANKING_MODEL
        self._credentials = credentials
        self._auth_lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout)

    def _token(self) -> str:
        import google.auth
        from google.auth.transport.requests import Request

        with self._auth_lock:  # one refresh for concurrent searches
            if self._credentials is None:
                self._credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
            if not self._credentials.valid:
                self._credentials.refresh(Request())
            return self._credentials.token

    def scores(self, query: str, texts: list[str]) -> list[float]:
        records = [{"id": str(i), "content": text} for i, text in enumerate(texts)]
        body = {"model": self.model, "query": query, "records": records, "topN": len(texts)}
        body["ignoreRecordDetailsInResponse"] = True  # ids and scores only: the passages are here already
        headers = {"Authorization": f"Bearer {self._token()}", "X-Goog-User-Project": self.project}
        response = self._client.post(self.url, json=body, headers=headers)
        if response.status_code != 200:
            raise RerankFailed(f"{response.status_code}: {response.text.strip()[:200]}")
        rows = response.json().get("records", [])
        return by_index([{"index": r.get("id"), "score": r.get("score", 0.0)} for r in rows], len(texts))


def by_index(answer: Any, expected: int) -> list[float]:
    """The scores of a rerank answer (Cohere's `results[].relevance_score` or TEI's `[].score`), in the
    passages' order."""
    rows = answer.get("results") if isinstance(answer, dict) else answer
    scores: dict[int, float] = {}
    try:
        for row in rows:
            scores[int(row["index"])] = float(row.get("relevance_score", row.get("score")))
    except (TypeError, KeyError, ValueError) as exc:
        raise RerankFailed(f"an answer without results[].index and a score: {exc!r}") from exc
    if sorted(scores) != list(range(expected)):
        raise RerankFailed(f"scores for {len(scores)} of {expected} passages")
    return [scores[i] for i in range(expected)]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder, loaded on first use (torch)."""

    def __init__(self, folder: str):
        self.name = f"cross-encoder {folder}"
        self.folder = folder
        self._model: Any = None
        self._lock = threading.Lock()

    def scores(self, query: str, texts: list[str]) -> list[float]:
        with self._lock:  # the first searches wait for one load, not one each
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.folder, device="cpu")
        return [float(s) for s in self._model.predict([(query, t) for t in texts], batch_size=32)]


_loading = threading.Lock()  # functools.cache alone lets two first searches both load a model


def configured_reranker(settings: Settings) -> Reranker | None:
    """The process-wide reranker `settings` configure, or None (the default: no reranking)."""
    if settings.rerank_provider == "none":
        return None
    with _loading:
        return _reranker(
            settings.rerank_provider,
            settings.rerank_url,
            settings.rerank_model,
            settings.rerank_api_key,
            settings.gcp_project,
        )


@functools.cache
def _reranker(provider: str, url: str, model: str, api_key: str, project: str) -> Reranker:
    if provider == "cross-encoder":
        return CrossEncoderReranker(model)
    if provider == "vertex":
        return VertexRanker(project, model, url, BUDGET_SECONDS)
    return EndpointReranker(provider, url, model, api_key, BUDGET_SECONDS)


def reranked(reranker: Reranker, query: str, hits: list[Hit], top_n: int) -> list[Hit]:
    """`hits` with their first `top_n` in the reranker's order, or unchanged when it fails or is late.

    The reordered hits are handed the same scores, best first (and document scores, when ranked by
    document), so scores still fall down the list and the hits past `top_n` still rank below.
    """
    top = hits[:top_n]
    if len(top) < 2:
        return hits
    future = _pool.submit(reranker.scores, query, [_text(h) for h in top])
    try:
        scores = future.result(timeout=BUDGET_SECONDS)
    except FutureTimeout:
        log.warning("the %s took longer than %.1f s: the fused ranking stands", reranker.name, BUDGET_SECONDS)
        return hits
    except Exception as exc:  # any failure of an optional step: the ranking it would improve stands
        log.warning("the %s failed (%s): the fused ranking stands", reranker.name, exc)
        return hits
    order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    fused = sorted((h.score for h in top), reverse=True)
    documents = sorted((h.document_score for h in top if h.document_score is not None), reverse=True)
    out = []
    for place, i in enumerate(order):
        document_score = documents[place] if len(documents) == len(top) else top[i].document_score
        out.append(replace(top[i], score=fused[place], document_score=document_score))
    return out + hits[top_n:]


def _text(hit: Hit) -> str:
    """What the reranker reads of a passage: its section's heading path, then its text."""
    chunk = hit.chunk
    return f"{chunk.section}\n{chunk.text}" if chunk.section else chunk.text
