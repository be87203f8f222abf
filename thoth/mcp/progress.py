"""Progress for tools that take seconds, and cancellation where the work can stop (docs/clients.md,
"Progress and cancellation"): `progress(done, total, message)` raises `Cancelled` once the request is cancelled."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import numpy as np
from mcp.server.mcpserver import Context

from thoth.embed import Embedder

T = TypeVar("T")
EMBED_STEP = 32  # texts per progress notification while embedding
Report = Callable[..., None]  # a tool body's progress(done, total, message): a Progress, or `silent`


def silent(done: float, total: float | None = None, message: str | None = None) -> None:
    """No progress to report (a direct call, outside a request)."""


class Cancelled(RuntimeError):
    """The request was cancelled: the work stops here."""


class Progress:
    def __init__(self, ctx: Context | None, token: Any):
        self._ctx = ctx
        self._token = token
        self.cancelled = threading.Event()
        self.enabled = ctx is not None and _progress_token(ctx) is not None
        self._last = -1.0

    def __call__(self, done: float, total: float | None = None, message: str | None = None) -> None:
        if self.cancelled.is_set():
            raise Cancelled("the request was cancelled")
        if not self.enabled or done <= self._last:  # progress only ever increases
            return
        self._last = done
        try:
            anyio.from_thread.run(self._ctx.report_progress, done, total, message, token=self._token)  # type: ignore[union-attr]
        except RuntimeError:  # the event loop is gone (server shutting down): the work goes on without it
            self.enabled = False


def _progress_token(ctx: Context) -> object:
    try:
        meta = ctx.request_context.meta
    except ValueError:  # no request (a direct call)
        return None
    if not isinstance(meta, dict):
        return None
    token = meta.get("progress_token")  # the SDK's name for `_meta.progressToken`
    return token if token is not None else meta.get("progressToken")


async def with_progress(ctx: Context | None, work: Callable[[Progress], T]) -> T:
    """Run `work(progress)` on a worker thread; cancelling the request stops it at its next progress step."""
    progress = Progress(ctx, anyio.lowlevel.current_token())
    try:
        # abandon_on_cancel: the request ends at once; the thread stops at its next progress() call.
        return await anyio.to_thread.run_sync(work, progress, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        progress.cancelled.set()
        raise


class ProgressEmbedder:
    """An embedder that reports each step of texts embedded: "embedded 64 of 130 chunks", then any
    later batches (the RAPTOR tree's summaries) as they come."""

    def __init__(self, embedder: Embedder, progress: Progress):
        self._embedder = embedder
        self._progress = progress
        self._what = "chunks"  # then "summaries", once every announced chunk is embedded
        self._done = 0
        self._total: int | None = None  # the chunks announced by `expect`; else the first call's texts

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._stepped(texts, self._embedder.embed)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._stepped(texts, self._embedder.embed_documents)

    def expect(self, total: int) -> None:
        """`total` chunks are coming, in slices (the writer embeds a document a few chunks at a time)."""
        self._total = total

    def _stepped(self, texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        counting = self._what != "summaries"  # the document's chunks, until all of them are embedded
        total = (self._total or len(texts)) if counting else None
        parts = []
        for start in range(0, len(texts), EMBED_STEP):
            self._progress(self._done, total, None)  # a cancel stops before the batch
            parts.append(embed(texts[start : start + EMBED_STEP]))
            self._done += len(parts[-1])
            if counting:
                message = f"embedded {self._done} of {total} {self._what}"
            else:
                message = f"embedded {start + len(parts[-1])} of {len(texts)} summaries"
            self._progress(self._done, total, message)
        if counting and total is not None and self._done >= total:
            self._what = "summaries"
        return np.concatenate(parts) if parts else embed(texts)

    def __getattr__(self, name: str) -> Any:  # the rest (model_name, dim, max_tokens, prompts...) is the model's
        return getattr(self._embedder, name)
