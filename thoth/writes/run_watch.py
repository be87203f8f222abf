"""A run started over MCP, seen from inside (`thoth ingest … --run-id ID`): it marks its record `running`,
writes its progress and a heartbeat every RUN_WATCH_SECONDS, and reads whether cancel_run asked it to stop,
which then stops it as SIGTERM does: after the batch being written (thoth/writes/source_runs.py).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import replace
from datetime import UTC, datetime

from thoth.records import IngestRun
from thoth.store import Store
from thoth.writes.run_records import RUN_WATCH_SECONDS, RUNS_KEPT

log = logging.getLogger("thoth.ingest")


class RunWatch:
    def __init__(self, store: Store, run: IngestRun, stop: threading.Event):
        """`run`: the run as this process knows it, recorded here if the server did not (Cloud Run)."""
        self.store, self.run_id, self.stop = store, run.run_id, stop
        self._run = run
        self.cancelled = False
        self.done = self.total = 0
        self._written = (-1, -1)
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="thoth-run-watch", daemon=True)

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def __enter__(self) -> RunWatch:
        run = self.store.runs.get(self.run_id)
        if run is None:  # started by a server that only reads the index: recorded by the run itself
            self.store.record_run(replace(self._run, state="queued"), RUNS_KEPT)
        values: dict[str, object] = {"state": "running", "heartbeat_at": datetime.now(UTC)}
        if run is not None and not run.execution:
            values["execution"] = f"process {os.getpid()}"
        self.store.runs.update(self.run_id, values)
        self._check()  # cancelled while queued: stop before listing anything
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ended.set()
        if self._thread.ident is None:  # never started
            return
        self._thread.join(timeout=30)
        try:  # the files done at the end, not at the last beat
            self.store.runs.update(self.run_id, {"done_files": self.done, "total_files": self.total})
        except Exception as exc:
            log.warning("run %s: could not update its record: %s", self.run_id, exc)

    def _check(self) -> None:
        run = self.store.runs.get(self.run_id)
        if run is not None and run.cancel and not self.cancelled:
            log.warning("run %s: cancel_run asked it to stop: stopping after the current batch", self.run_id)
            self.cancelled = True
            self.stop.set()

    def _loop(self) -> None:
        while not self._ended.wait(RUN_WATCH_SECONDS):
            try:
                values: dict[str, object] = {"heartbeat_at": datetime.now(UTC)}
                if (self.done, self.total) != self._written:
                    values |= {"done_files": self.done, "total_files": self.total}
                    self._written = (self.done, self.total)
                self.store.runs.update(self.run_id, values)
                self._check()
            except Exception as exc:  # a report, never the run's failure
                log.warning("run %s: could not update its record: %s", self.run_id, exc)
