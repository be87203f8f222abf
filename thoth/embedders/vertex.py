"""The `vertex` provider: Vertex AI text embeddings (`text-embedding-005`, `gemini-embedding-001`, ...)
through Google's SDK (google-genai), with application default credentials.

The SDK sends the requests (it knows each model's endpoint); `RemoteEmbedder` keeps the batches,
concurrency, retries, probe, checks and counts. Queries and documents go with their task types
(`Prompts.query_task` / `document_task`, recorded with the index like the prompts).
"""

from __future__ import annotations

from typing import Any

from thoth.embed import VERTEX_TASKS, EmbedderUnavailable, Prompts
from thoth.embedders.remote import Refused, RemoteEmbedder

# Per request, the text-embedding models take up to 250 texts and 20,000 tokens; Gemini embedding models
# one text. Texts are cut to `max_tokens` word pieces of the bundled tokenizer, so a batch is capped at
# 20,000 // (max_tokens + 2) texts (78 for 254): under the limit unless Google's tokenizer reads many
# more tokens than the bundled one (auto_truncate cuts only a single text over 2,048).
MAX_BATCH = 250
MAX_REQUEST_TOKENS = 20_000
TASKS = Prompts("", "", *VERTEX_TASKS)


def one_text_per_request(model: str) -> bool:
    """Whether Vertex AI embeds one text per request with `model` (the Gemini embedding models)."""
    return "gemini" in model.rsplit("/", 1)[-1]


class VertexEmbedder(RemoteEmbedder):
    """Vertex AI text embeddings over google-genai; `credentials=None` means application default
    credentials (the service account on GCP, `gcloud auth application-default login` elsewhere)."""

    provider = "vertex"
    key_hint = (
        "check THOTH_GCP_PROJECT and GOOGLE_CLOUD_LOCATION, that the Vertex AI API is enabled there, and that "
        "the application default credentials may use it (roles/aiplatform.user)"
    )

    def __init__(
        self,
        model: str,
        project: str,
        location: str,
        *,
        prompts: Prompts = TASKS,
        base_url: str = "",
        credentials: Any = None,
        max_tokens: int,
        batch_size: int = 64,
        timeout: float = 30.0,
        **kw: Any,
    ):
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"THOTH_EMBED_PROVIDER=vertex needs google-genai: pip install 'thoth[vertex]' ({exc})"
            ) from exc
        if not project:
            raise EmbedderUnavailable("THOTH_EMBED_PROVIDER=vertex needs a project: set THOTH_GCP_PROJECT")
        from google.auth import exceptions as auth_exceptions

        self._errors, self._types, self._auth = errors, types, auth_exceptions
        options = types.HttpOptions(base_url=base_url or None, timeout=int(timeout * 1000))  # no SDK retries: ours
        try:
            self._genai = genai.Client(
                vertexai=True, project=project, location=location, credentials=credentials, http_options=options
            )
        except Exception as exc:  # the SDK raises several kinds for missing credentials or settings
            raise EmbedderUnavailable(f"cannot start the Vertex AI client: {exc}; {self.key_hint}") from exc
        self.transient = RemoteEmbedder.transient + _sdk_transient()
        limit = 1 if one_text_per_request(model) else min(MAX_BATCH, MAX_REQUEST_TOKENS // (max_tokens + 2))
        host = base_url or f"https://{location}-aiplatform.googleapis.com"
        super().__init__(
            model,
            f"{host} (project {project}, location {location})",
            max_tokens=max_tokens,
            prompts=prompts,  # the task types with the prompts: both are recorded with the index
            batch_size=min(batch_size, limit),
            **kw,
        )

    def _post(self, texts: list[str], task: str) -> list[list[float]]:
        config = self._types.EmbedContentConfig(
            task_type=task or None, output_dimensionality=self.dimensions or None, auto_truncate=True
        )
        try:
            answer = self._genai.models.embed_content(model=self.model, contents=texts, config=config)
        except self._auth.TransportError:
            raise  # retried: a network failure while refreshing the token
        except self._auth.GoogleAuthError as exc:  # no application default credentials, or refused ones
            raise EmbedderUnavailable(f"no usable Google credentials for Vertex AI ({exc}); {self.key_hint}") from exc
        except self._errors.APIError as exc:
            said = f"{exc.status or ''} {exc.message or ''}".strip()[:300]
            refused = Refused(int(exc.code or 0), said)
            if exc.code == 400 and "dimensionality" in said.lower():  # a size the model does not give
                raise EmbedderUnavailable(
                    f"Vertex AI model {self.model!r} refused THOTH_EMBED_DIMENSIONS={self.dimensions} ({said}); "
                    "set one the model supports (text-embedding-005: up to 768, gemini-embedding-001: up to 3072)"
                ) from exc
            raise refused from exc
        return [list(e.values or []) for e in answer.embeddings or []]


def _sdk_transient() -> tuple[type[BaseException], ...]:
    """The request failures the SDK's HTTP clients and the credentials' refresh raise, retried."""
    found: list[type[BaseException]] = []
    try:
        import httpx2

        found += [httpx2.TimeoutException, httpx2.TransportError]
    except ImportError:
        pass
    from google.auth import exceptions as auth_exceptions

    return (*found, auth_exceptions.TransportError)
