"""A real Vertex AI embeddings endpoint for tests, on loopback: Starlette on uvicorn serving the bundled
model in the documented shapes, at the paths google-genai sends to:

- `POST /{version}/projects/{p}/locations/{l}/publishers/google/models/{model}:predict`
  (`text-embedding-*`): `{"instances": [{"content", "task_type"}], "parameters": {"outputDimensionality"}}`
  → `{"predictions": [{"embeddings": {"values", "statistics"}}]}`;
- `...:embedContent` (`gemini-embedding-*`): `{"content": {"parts": [{"text"}]}, "embedContentConfig":
  {"taskType", "outputDimensionality"}}` → `{"embedding": {"values"}}`.

It checks the bearer token, answers 403 for a project other than `PROJECT` and 404 for a model it
does not serve, 400 for a dimensionality above the model's, plays a scripted list of failures
("429", "503") before succeeding, and records every request (path, body).
"""

from __future__ import annotations

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

PROJECT, LOCATION, TOKEN = "thoth-test", "europe-west4", "test-token"
SERVED = ("text-embedding-005", "gemini-embedding-001")


def error(code: int, status: str, message: str) -> JSONResponse:
    """Google's error shape, which the SDK reads into APIError(code, status, message)."""
    return JSONResponse({"error": {"code": code, "status": status, "message": message}}, status_code=code)


class VertexServer(LiveServer):
    def __init__(self) -> None:
        self.script: list[str] = []
        self.requests: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self.model: Embedder = get_embedder(Settings(embed_backend="onnx", cache_dir=str(ONNX_CACHE)))
        super().__init__(Settings(), Starlette(routes=[Route("/{path:path}", self.post, methods=["POST"])]))  # type: ignore[arg-type]

    async def post(self, request: Request) -> JSONResponse:
        path, body = request.url.path, await request.json()
        with self._lock:
            self.requests.append((path, body))
            action = self.script.pop(0) if self.script else ""
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        parts = path.strip("/").split("/")  # v1beta1 projects P locations L publishers google models M:verb
        if (
            len(parts) != 9
            or parts[1::2][:4] != ["projects", "locations", "publishers", "models"]
            or parts[6] != "google"
        ):
            return error(404, "NOT_FOUND", f"no such path {path}")
        if parts[2] != PROJECT:
            return error(403, "PERMISSION_DENIED", f"Permission 'aiplatform.endpoints.predict' denied on {parts[2]}")
        model, _, verb = parts[8].partition(":")
        if model not in SERVED:
            return error(404, "NOT_FOUND", f"Publisher Model `{model}` not found.")
        if action in ("429", "503"):
            return error(int(action), "RESOURCE_EXHAUSTED", "Quota exceeded, try later")
        if verb == "predict":
            texts = [i["content"] for i in body["instances"]]
            wanted = body.get("parameters", {}).get("outputDimensionality")
        else:
            texts = [p["text"] for p in body["content"]["parts"]]
            wanted = body.get("embedContentConfig", {}).get("outputDimensionality")
        if wanted and wanted > self.model.dim:
            return error(400, "INVALID_ARGUMENT", f"outputDimensionality must be at most {self.model.dim}")
        vectors = await run_in_threadpool(self.model.embed, texts)
        rows = [v[:wanted].tolist() if wanted else v.tolist() for v in vectors]
        if verb == "predict":
            stats = {"token_count": 5, "truncated": False}
            return JSONResponse({"predictions": [{"embeddings": {"values": r, "statistics": stats}} for r in rows]})
        return JSONResponse({"embedding": {"values": rows[0]}})
