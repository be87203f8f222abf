"""The `openai` provider: any OpenAI-compatible `POST {THOTH_EMBED_URL}/embeddings` (OpenAI, vLLM,
text-embeddings-inference, Ollama, LiteLLM...)."""

from __future__ import annotations

from typing import Any

import httpx

from thoth.embed import EmbedderUnavailable
from thoth.embedders.remote import Refused, RemoteEmbedder


class OpenAIEmbedder(RemoteEmbedder):
    """The OpenAI embeddings API's request and answer, over httpx."""

    provider = "openai"

    def __init__(self, url: str, model: str, key: str = "", *, timeout: float = 30.0, **options: Any):
        if not url:
            raise EmbedderUnavailable(
                "THOTH_EMBED_PROVIDER=openai needs THOTH_EMBED_URL, e.g. http://127.0.0.1:8000/v1"
            )
        self.url = url.rstrip("/") + "/embeddings"
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        connections = httpx.Limits(max_connections=max(1, options.get("concurrency", 4)))
        self._client = httpx.Client(timeout=timeout, limits=connections)
        super().__init__(model, self.url, **options)

    def _post(self, texts: list[str], task: str) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:  # only when asked: servers of fixed-size models reject the field
            body["dimensions"] = self.dimensions
        response = self._client.post(self.url, json=body, headers=self._headers)
        if response.status_code != 200:
            said = response.text.strip().replace("\n", " ")[:300]
            raise Refused(response.status_code, said, response.headers.get("retry-after"))
        try:
            rows = sorted(response.json()["data"], key=lambda row: row["index"])  # the API allows any order
            return [row["embedding"] for row in rows]
        except (KeyError, TypeError) as exc:
            raise EmbedderUnavailable(f"{self.url} answered without OpenAI's data[].embedding: {exc!r}") from exc
