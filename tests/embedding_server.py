"""A real OpenAI-compatible embeddings server for tests: Starlette on uvicorn on a loopback port,
serving the bundled model through `POST /v1/embeddings`, and scoring `POST /rerank` (and `/v1/rerank`) with
it: each passage's cosine to the query, a bi-encoder standing in for a cross-encoder, answered in Cohere's
shape (`documents` asked) or text-embeddings-inference's (`texts` asked).

It can be told to refuse a key (401), to answer a scripted list of failures before succeeding
(`script`: "429", "500", "slow" — an answer later than the client waits), or to return vectors
of the wrong size; it records every request and the most it served at once.
"""

from __future__ import annotations

import asyncio
import threading

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.conftest import ONNX_CACHE, LiveServer
from thoth.config import Settings
from thoth.embed import Embedder
from thoth.embedders import get_embedder

SERVED_MODEL = "all-MiniLM-L6-v2"
# The Vertex AI ranking API's method (Discovery Engine v1, rankingConfigs.rank), as Google documents it
VERTEX_RANK_PATH = "/v1/projects/{project}/locations/{location}/rankingConfigs/{config}"
VERTEX_PROJECT, VERTEX_TOKEN = "thoth-test", "test-token"


class EmbeddingServer(LiveServer):
    def __init__(self, key: str = "", truncate_to: int = 0, slow_seconds: float = 2.0):
        self.key = key
        self.truncate_to = truncate_to  # > 0: vectors cut to this many dimensions (a wrong-dimension server)
        self.slow_seconds = slow_seconds
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.in_flight = self.most_in_flight = 0
        self._count = threading.Lock()
        self.model: Embedder = get_embedder(Settings(embed_backend="onnx", cache_dir=str(ONNX_CACHE)))
        routes = [Route("/v1/embeddings", self.embeddings, methods=["POST"])]
        routes += [Route(path, self.rerank, methods=["POST"]) for path in ("/rerank", "/v1/rerank")]
        routes += [Route(VERTEX_RANK_PATH, self.vertex_rank, methods=["POST"])]
        app = Starlette(routes=routes)
        super().__init__(Settings(), app)  # type: ignore[arg-type]

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    async def embeddings(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.key and request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided"}}, status_code=401)
        if body.get("model") != SERVED_MODEL:
            return JSONResponse({"error": {"message": f"model {body.get('model')!r} not found"}}, status_code=404)
        action = self.script.pop(0) if self.script else ""
        if action in ("429", "500"):
            busy = {"error": {"message": "try later"}}
            again = {"Retry-After": "0"} if action == "429" else {}  # a 500 says nothing: the doubling wait
            return JSONResponse(busy, status_code=int(action), headers=again)
        with self._count:  # a slow answer is in flight too: its client may have given up on it long ago
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if action == "slow":
                await asyncio.sleep(self.slow_seconds)
            await asyncio.sleep(0.05)  # long enough for concurrent batches to overlap here
            vectors = await run_in_threadpool(self.model.embed, body["input"])
        finally:
            with self._count:
                self.in_flight -= 1
        if self.truncate_to:
            vectors = vectors[:, : self.truncate_to]
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        data.reverse()  # the API allows any order: clients must sort by index
        return JSONResponse({"object": "list", "data": data, "model": SERVED_MODEL})

    async def rerank(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.key and request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided"}}, status_code=401)
        action = self.script.pop(0) if self.script else ""
        if action in ("429", "500"):
            return JSONResponse({"error": {"message": "try later"}}, status_code=int(action))
        if action == "slow":
            await asyncio.sleep(self.slow_seconds)
        passages = body.get("documents", body.get("texts"))
        texts = [p["text"] if isinstance(p, dict) else p for p in passages]
        vectors = await run_in_threadpool(self.model.embed, [body["query"], *texts])
        scores = (vectors[1:] @ vectors[0]).tolist()
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        if "texts" in body:  # text-embeddings-inference
            return JSONResponse([{"index": i, "score": scores[i]} for i in order])
        results = [{"index": i, "relevance_score": scores[i]} for i in order[: body.get("top_n") or len(texts)]]
        return JSONResponse({"results": results, "model": body.get("model", "")})

    async def vertex_rank(self, request: Request) -> JSONResponse:
        """`rankingConfigs/default_ranking_config:rank`: Google's error shape for a wrong token, project,
        config or body; else the records by cosine, best first, ids and scores only when asked so."""
        body = await request.json()
        self.requests.append(body)
        params = request.path_params

        def error(code: int, status: str, message: str) -> JSONResponse:
            return JSONResponse({"error": {"code": code, "message": message, "status": status}}, status_code=code)

        if request.headers.get("authorization") != f"Bearer {VERTEX_TOKEN}":
            return error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        if params["project"] != VERTEX_PROJECT or request.headers.get("x-goog-user-project") != VERTEX_PROJECT:
            return error(403, "PERMISSION_DENIED", "Permission 'discoveryengine.rankingConfigs.rank' denied")
        if params["location"] != "global" or params["config"] != "default_ranking_config:rank":
            return error(404, "NOT_FOUND", f"{request.url.path} not found")
        records = body.get("records")
        shaped = isinstance(records, list) and all(isinstance(r, dict) and {"id", "content"} <= set(r) for r in records)
        shaped = shaped and isinstance(body.get("query"), str) and str(body.get("model", "")).startswith("semantic-")
        if not shaped:
            return error(400, "INVALID_ARGUMENT", "query, model and records[].id/content are required")
        action = self.script.pop(0) if self.script else ""
        if action == "slow":
            await asyncio.sleep(self.slow_seconds)
        vectors = await run_in_threadpool(self.model.embed, [body["query"], *[r["content"] for r in records]])
        scores = (vectors[1:] @ vectors[0]).tolist()
        order = sorted(range(len(records)), key=lambda i: -scores[i])[: body.get("topN") or len(records)]
        detail = not body.get("ignoreRecordDetailsInResponse")
        out = [{"id": records[i]["id"], "score": scores[i]} | (records[i] if detail else {}) for i in order]
        return JSONResponse({"records": out})


if __name__ == "__main__":  # `python -m tests.embedding_server`: serve until stopped (bench.quality's reranker runs)
    import time

    with EmbeddingServer() as server:
        print(f"{server.url}/v1/embeddings and {server.url}/rerank", flush=True)
        while True:
            time.sleep(3600)
