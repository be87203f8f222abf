"""What every remote embedding provider shares: batches, a concurrency limit, retries, clear errors.

A provider's subclass sends one batch (`_post`); `RemoteEmbedder` sends at most `concurrency` batches at
once, retries a 429, a 5xx, a timeout or a refused connection with exponential backoff (honouring
Retry-After), turns anything else into an `EmbedderUnavailable` naming the setting to fix, and counts what
it sent for the ingest summary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import numpy as np

from thoth.embed import NO_PROMPTS, Embedder, EmbedderUnavailable, Prompts, prefixed
from thoth.errors import retry_wait

RETRIED_STATUSES = {429, 500, 502, 503, 504}
BACKOFF_SECONDS = 0.5  # the first retry's wait; each next one doubles
MAX_BACKOFF_SECONDS = 20.0  # a Retry-After longer than this is cut to it
RETRIES = 4  # of a 429, a 5xx or a timeout, with doubling waits: rides out a rate limit, not an outage
TIMEOUT_SECONDS = 30.0  # one request of a batch


class Refused(Exception):
    """An endpoint's answer other than 200, from whichever client sent the request."""

    def __init__(self, status: int, said: str, retry_after: str | None = None):
        super().__init__(f"{status}: {said}")
        self.status, self.said, self.retry_after = status, said, retry_after


@dataclass
class Sent:
    """What a remote embedder has sent so far."""

    texts: int = 0
    characters: int = 0
    requests: int = 0
    retries: int = 0

    def render(self, where: str) -> str:
        retried = f", {self.retries} retried" if self.retries else ""
        return (
            f"embedding: {self.texts:,} texts, {self.characters:,} characters sent to {where} "
            f"in {self.requests:,} requests{retried}"
        )


class RemoteEmbedder(Embedder):
    """An `Embedder` over a provider's endpoint: a subclass sends one batch (`_post`), this class does the rest."""

    provider = ""  # THOTH_EMBED_PROVIDER's value, named in errors and the ingest summary
    # Failures of the request itself, retried like a 429 (a subclass's SDK adds its own).
    transient: tuple[type[BaseException], ...] = (httpx.TimeoutException, httpx.TransportError)
    key_hint = "check THOTH_EMBED_API_KEY or THOTH_EMBED_API_KEY_FILE"  # what a 401/403 asks to fix

    def __init__(
        self,
        model: str,
        where: str,
        *,
        max_tokens: int,
        prompts: Prompts = NO_PROMPTS,
        dimensions: int = 0,
        batch_size: int = 64,
        concurrency: int = 4,
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model  # as the endpoint names it
        self.model_name = f"{self.provider}:{model}"
        self.where = where  # named in errors
        self.max_tokens = max_tokens
        self.prompts = prompts
        self.batch_size = max(1, batch_size)
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.sleep = sleep
        self.sent = Sent()
        self._count = threading.Lock()
        self.dimensions = dimensions
        # One request at load: a wrong URL, key, model or dimension is said when the server or the ingest
        # job starts, not at its first query; the dimension, part of the index's identity, is checked after.
        self.dim = len(self._batch(["dimension probe"])[0])

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, "")

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(prefixed(self.prompts.query, texts), self.prompts.query_task)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(prefixed(self.prompts.document, texts), self.prompts.document_task)

    def _embed(self, texts: list[str], task: str) -> np.ndarray:
        """`task`: what the texts are for, for a provider that is told (Vertex AI's task types)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [list(map(str, texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1:
            parts = [self._batch(batches[0], task)]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(batches)), thread_name_prefix="thoth-embed") as pool:
                parts = list(pool.map(lambda batch: self._batch(batch, task), batches))
        vectors = np.asarray([v for part in parts for v in part], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # The Embedder contract is unit length. Rows an endpoint already normalised are kept bit for bit,
        # so the bundled model served remotely gives the local provider's vectors exactly.
        off = np.abs(norms[:, 0] - 1.0) > 1e-4
        vectors[off] /= np.maximum(norms[off], 1e-12)
        return vectors

    def _post(self, texts: list[str], task: str) -> list[list[float]]:
        """One request for `texts`: their vectors, or `Refused` with the endpoint's answer."""
        raise NotImplementedError

    def _batch(self, texts: list[str], task: str = "") -> list[list[float]]:
        for attempt in range(self.retries + 1):
            with self._count:
                self.sent.requests += 1
                self.sent.retries += attempt > 0
            try:
                vectors = self._post(texts, task)
            except self.transient as exc:
                if attempt == self.retries:
                    raise EmbedderUnavailable(
                        f"the {self.provider} embedding endpoint {self.where} did not answer after "
                        f"{attempt + 1} attempts ({type(exc).__name__}: {exc}); check THOTH_EMBED_URL"
                    ) from exc
                self.sleep(retry_wait(attempt, None, BACKOFF_SECONDS, MAX_BACKOFF_SECONDS))
                continue
            except Refused as refused:
                if refused.status in RETRIED_STATUSES and attempt < self.retries:
                    self.sleep(retry_wait(attempt, refused.retry_after, BACKOFF_SECONDS, MAX_BACKOFF_SECONDS))
                    continue
                raise EmbedderUnavailable(self._refusal(refused, attempt + 1)) from None
            vectors = self._checked(vectors, len(texts))
            with self._count:
                self.sent.texts += len(texts)
                self.sent.characters += sum(len(t) for t in texts)
            return vectors
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _checked(self, vectors: list[list[float]], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            got = len(vectors)
            raise EmbedderUnavailable(f"the {self.provider} endpoint returned {got} vectors for {expected} texts")
        want = self.dimensions or getattr(self, "dim", 0)  # no `dim` yet while probing
        for vector in vectors:
            if want and len(vector) != want:
                raise EmbedderUnavailable(
                    f"the {self.provider} embedding model {self.model!r} returned {len(vector)}-dimension "
                    f"vectors, not {want}; set THOTH_EMBED_DIMENSIONS to what the model gives (or one it supports)"
                )
        return vectors

    def _refusal(self, refused: Refused, attempts: int) -> str:
        status, said = refused.status, refused.said
        where = f"the {self.provider} embedding endpoint {self.where}"
        if status in (401, 403):
            return f"{where} refused the key ({status}: {said}); {self.key_hint}"
        if status == 404 or (status in (400, 422) and "model" in said.lower()):
            return f"{where} does not serve model {self.model!r} ({status}: {said}); check THOTH_EMBED_MODEL"
        if status in RETRIED_STATUSES:
            return f"{where} is unavailable: {status} after {attempts} attempts ({said})"
        return f"{where} answered {status}: {said}"
