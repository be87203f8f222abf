"""Run the embed-and-write step beside the parse-and-chunk step, in order, with bounded memory.

Embedding (onnxruntime or torch) and LanceDB writes run native code that releases the GIL, so a
single background worker embedding and writing batch k while the caller parses and chunks the
documents of batch k+1 keeps every core busy. One worker keeps the batches' order, and so the
pipeline's ordering guarantees (a batch's chunks, then its documents rows; batch k before k+1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")


class OrderedWorker(Generic[T]):
    """Calls `fn(item)` on one background thread, in submission order, at most `pending` items ahead: `submit`
    blocks while that many wait or run, so at most that many prepared batches are held in memory. The first
    failure is raised in the caller (at the next `submit` or at `close`); nothing submitted after it runs."""

    def __init__(self, fn: Callable[[T], int], pending: int = 2):
        self._fn = fn
        self._pending = max(1, pending)
        self._futures: deque[Future[int]] = deque()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thoth-ingest-write")
        self._failed = False
        self.total = 0  # sum of fn's results for the items done so far

    def _run(self, item: T) -> int:
        if self._failed:  # an earlier item failed: keep the order's promise, run nothing after it
            raise RuntimeError("an earlier batch failed")
        try:
            return self._fn(item)
        except BaseException:
            self._failed = True
            raise

    def submit(self, item: T) -> None:
        while len(self._futures) >= self._pending:
            self.total += self._futures.popleft().result()  # re-raises the worker's exception here
        self._futures.append(self._pool.submit(self._run, item))

    def close(self, raise_errors: bool = True) -> int:
        """Wait for everything submitted; return the total of fn's results (of those that succeeded, and no
        failure raised, if not `raise_errors`)."""
        try:
            while self._futures:
                future = self._futures.popleft()
                if raise_errors or future.exception() is None:
                    self.total += future.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        return self.total

    def __enter__(self) -> OrderedWorker[T]:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self.close()
            return
        self._failed = True  # the caller failed: finish what is running, start nothing else
        self._pool.shutdown(wait=True, cancel_futures=True)
