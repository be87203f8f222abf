"""The `openai` provider: any OpenAI-compatible `POST {THOTH_EMBED_URL}/embeddings` (OpenAI, vLLM,
text-embeddings-inference, Ollama, LiteLLM...)."""

from __future__ import annotations

from typing import Any

from thoth.embed import EmbedderUnavailable


class OpenAIWire:
    """Request and answer shapes of the OpenAI embeddings API."""

    name = "openai"

    def __init__(self, url: str, model: str, key: str = "", dimensions: int = 0):
        if not url:
            raise EmbedderUnavailable(
                "THOTH_EMBED_PROVIDER=openai needs THOTH_EMBED_URL, e.g. http://127.0.0.1:8000/v1"
            )
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.key = key
        self.dimensions = dimensions

    def request(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:  # only when asked: servers of fixed-size models reject the field
            body["dimensions"] = self.dimensions
        return self.url, body

    def vectors(self, body: Any) -> list[list[float]]:
        try:
            rows = sorted(body["data"], key=lambda row: row["index"])  # the API allows any order
            return [row["embedding"] for row in rows]
        except (KeyError, TypeError) as exc:
            raise EmbedderUnavailable(f"{self.url} answered without OpenAI's data[].embedding: {exc!r}") from exc

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}
