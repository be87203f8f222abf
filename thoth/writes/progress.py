"""Progress of an ingest run as JSON lines every few seconds, for logs without a terminal: documents and chunks
done, the rate, the stage."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import TextIO


class ProgressMeter:
    """Counts a run's work and, `printing`, prints a JSON line every `interval` seconds while running, and one at
    the end."""

    def __init__(self, interval: float = 5.0, stream: TextIO | None = None, printing: bool = True):
        self.interval = max(interval, 0.1)
        self.stream = stream or sys.stderr
        self.printing = printing
        self._lock = threading.Lock()
        self._stage = "plan"
        self._documents = self._total = self._chunks = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def stage(self, name: str) -> None:
        with self._lock:
            self._stage = name

    def add_chunks(self, count: int) -> None:
        with self._lock:
            self._chunks += count

    def __call__(self, done: int, total: int, key: str) -> None:
        with self._lock:
            self._stage = "documents" if self._stage == "plan" else self._stage
            self._documents, self._total = done, total

    def line(self) -> dict:
        with self._lock:
            elapsed = max(time.monotonic() - self._started, 1e-9)
            return {
                "event": "progress",
                "stage": self._stage,
                "documents_done": self._documents,
                "documents_total": self._total,
                "chunks_done": self._chunks,
                "chunks_per_s": round(self._chunks / elapsed, 1),
                "documents_per_s": round(self._documents / elapsed, 2),
                "elapsed_s": round(elapsed, 1),
            }

    def emit(self) -> None:
        if self.printing:
            print(json.dumps(self.line()), file=self.stream, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.emit()

    def __enter__(self) -> ProgressMeter:
        self._started = time.monotonic()
        if self.printing:
            self._thread = threading.Thread(target=self._tick, name="thoth-ingest-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if exc[0] is None:  # a failed run ends with its one `error:` line, not with a progress line
            self.stage("done")
            self.emit()
