"""The optional LLM: any OpenAI-compatible chat endpoint, or Vertex AI Gemini through google-genai.

Used for generated answers and, when `THOTH_TREES=llm`, for tree summaries. Off by default: with no
`THOTH_LLM_MODEL`, `get_llm()` returns None and Thoth stays extractive.
Every call is rate-limited (requests per minute, per process) and retried with exponential
backoff on 429, 5xx and connection failures (a `Retry-After` header is honoured).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from thoth.config import Settings
from thoth.errors import UpstreamError, retry_wait

log = logging.getLogger("thoth.llm")

MAX_BACKOFF_SECONDS = 30.0
# A generated answer or a tree summary is a few hundred tokens: a slow self-hosted model still replies
# within a minute, and a request that takes longer is stuck rather than busy.
REQUEST_TIMEOUT_SECONDS = 60.0
# Retries on 429, 5xx and connection failures: with the doubling backoff from 1 s, four of them wait
# about 15 s in all, which rides out a rate-limit window or a restarting endpoint without hiding an outage.
MAX_RETRIES = 4
# Calls a minute per process: under the smallest paid tiers' limits, and tree summaries are few
REQUESTS_PER_MINUTE = 60


LLMError = UpstreamError  # the LLM could not answer (after retries); the message says why


class RateLimiter:
    """At most `per_minute` calls a minute: each call waits for its slot (thread-safe)."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.interval = 60.0 / max(1, per_minute)
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            self._sleep(slot - now)


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: str | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLM:
    """A chat model behind a rate limit and retries; a provider's subclass sends one request (`_send`)."""

    def __init__(self, name: str, what: str, *, per_minute: int, retries: int = MAX_RETRIES, base_delay: float = 1.0):
        self.name = name  # provider:model, recorded with what it wrote
        self.what = what  # the call, as errors and logs name it
        self.retries = retries
        self.base_delay = base_delay
        self._limiter = RateLimiter(per_minute)

    def complete(self, prompt: str, *, system: str = "", temperature: float = 0.0, max_tokens: int = 512) -> str:
        """The model's reply to one user prompt."""
        for attempt in range(self.retries + 1):
            self._limiter.wait()
            try:
                return self._send(prompt, system, temperature, max_tokens)
            except _Retryable as exc:
                if attempt == self.retries:
                    raise LLMError(f"{self.what} failed after {attempt + 1} attempts: {exc}") from exc
                delay = retry_wait(attempt, exc.retry_after, self.base_delay, MAX_BACKOFF_SECONDS)
                log.warning(
                    "%s: %s; retrying in %.1f s (attempt %d of %d)", self.what, exc, delay, attempt + 1, self.retries
                )
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _send(self, prompt: str, system: str, temperature: float, max_tokens: int) -> str:
        raise NotImplementedError


class OpenAICompatibleLLM(LLM):
    """POST {url}/chat/completions, as OpenAI, vLLM, Ollama, LiteLLM and most gateways serve it."""

    def __init__(
        self, url: str, model: str, api_key: str = "", *, timeout: float = REQUEST_TIMEOUT_SECONDS, **limits: Any
    ):
        import httpx  # here, not at the top: httpx (and rich, through its CLI) would slow every start

        self.model = model
        self.endpoint = url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        super().__init__(f"openai:{model}", f"LLM call to {self.endpoint}", **limits)

    def _send(self, prompt: str, system: str, temperature: float, max_tokens: int) -> str:
        import httpx  # loaded by __init__ already: a dictionary lookup

        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        body = {"model": self.model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        try:
            response = self._client.post(self.endpoint, json=body)
        except httpx.TransportError as exc:
            raise _Retryable(f"cannot reach {self.endpoint}: {type(exc).__name__}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}", response.headers.get("retry-after"))
        if response.status_code != 200:
            raise LLMError(f"{self.endpoint} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            return str(response.json()["choices"][0]["message"]["content"]).strip()
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.endpoint} answered something that is not a chat completion") from exc


class GeminiLLM(LLM):
    """Vertex AI Gemini through google-genai (credentials: the service account on GCP, or ADC)."""

    def __init__(self, model: str, project: str, location: str, **limits: Any):
        try:
            from google import genai
        except ImportError as exc:
            raise LLMError("a Gemini THOTH_LLM_MODEL needs google-genai: pip install 'thoth[gemini]'") from exc
        self.model = model
        self._client = genai.Client(vertexai=True, project=project or None, location=location)
        super().__init__(f"gemini:{model}", f"Gemini call ({model})", **limits)

    def _send(self, prompt: str, system: str, temperature: float, max_tokens: int) -> str:
        from google.genai import errors, types

        config = types.GenerateContentConfig(
            temperature=temperature, max_output_tokens=max_tokens, system_instruction=system or None
        )
        try:
            response = self._client.models.generate_content(model=self.model, contents=prompt, config=config)
        except errors.APIError as exc:
            if exc.code == 429 or (exc.code or 0) >= 500:
                raise _Retryable(f"HTTP {exc.code}: {exc.message}") from exc
            raise LLMError(f"Gemini refused the request: HTTP {exc.code}: {exc.message}") from exc
        return (response.text or "").strip()


_lock = threading.Lock()
_llms: dict[tuple, LLM] = {}


def get_llm(settings: Settings) -> LLM | None:
    """The process-wide LLM for `settings`, or None when none is configured."""
    if not settings.llm_provider:
        return None
    key = (settings.llm_provider, settings.llm_model, settings.llm_url, settings.llm_api_key)
    with _lock:
        if key not in _llms:
            if settings.llm_provider == "openai":
                where = (settings.llm_url, settings.llm_model, settings.llm_api_key)
                _llms[key] = OpenAICompatibleLLM(*where, per_minute=REQUESTS_PER_MINUTE)
            else:
                where = (settings.llm_model, settings.gcp_project, settings.gcp_location)
                _llms[key] = GeminiLLM(*where, per_minute=REQUESTS_PER_MINUTE)
        return _llms[key]
