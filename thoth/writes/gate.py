"""The server's writes, one at a time (`Busy` for a tool call that cannot wait, `ShuttingDown` after SIGTERM),
and its index maintained in the background every MAINTAIN_AFTER_WRITES writes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from thoth.errors import ClientError
from thoth.freed import give_back_memory

if TYPE_CHECKING:
    from thoth.store import Store

log = logging.getLogger("thoth.writes")


# At SIGTERM a write in flight has the shutdown grace less this to finish; then it stops at its next safe
# point (before its rows are written) and answers ShuttingDown, in time for the answer to reach the client.
ABANDON_MARGIN_SECONDS = 3.0
# Compacting after this many writes keeps a busy index's fragments and versions few without compacting
# after each small write (`python -m ingest maintain` does it on demand)
MAINTAIN_AFTER_WRITES = 50
WRITE_WAIT_SECONDS = 30.0  # a write tool call waits this long for another write to end, then: busy, retry
SLOT_POLL_SECONDS = 0.1  # how often a write waiting for the slot looks whether the server is shutting down


class Busy(ClientError):
    """Another write holds the instance's write slot; the same call succeeds when retried later."""


class ShuttingDown(Busy):
    """The instance is shutting down: a write not started, or stopped before it wrote anything; retry it
    (another instance takes it)."""

    def __init__(self) -> None:
        super().__init__("the server is shutting down; nothing was written: retry the write")


class WriteGate:
    def __init__(self, store: Store):
        self.store = store
        self._slot = threading.Lock()
        self._count = threading.Lock()
        self.writes_since_maintenance = 0
        self.maintenance: threading.Thread | None = None
        self.closing = threading.Event()  # SIGTERM: no write starts any more
        self.abandon = threading.Event()  # the write in flight stops at its next safe point (Writer.abandon)

    def close(self, grace: float) -> None:
        """Shutdown began (SIGTERM): refuse new writes; the one in flight may finish within `grace` less
        ABANDON_MARGIN_SECONDS, and is stopped before writing anything after that."""
        self.closing.set()
        timer = threading.Timer(max(0.0, grace - ABANDON_MARGIN_SECONDS), self.abandon.set)
        timer.daemon = True
        timer.start()

    def _acquire(self, wait: bool) -> bool:
        deadline = None if wait else time.monotonic() + WRITE_WAIT_SECONDS
        while not self.closing.is_set():
            left = SLOT_POLL_SECONDS if deadline is None else min(SLOT_POLL_SECONDS, deadline - time.monotonic())
            if self._slot.acquire(timeout=max(0.0, left)):  # 0: one try (WRITE_WAIT_SECONDS=0)
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
        raise ShuttingDown

    @contextmanager
    def hold(self, wait: bool = False) -> Iterator[None]:
        """Run one write; `wait` for the slot however long (events), else give up with Busy (tool calls).
        Once shutdown began, ShuttingDown instead."""
        if not self._acquire(wait):
            raise Busy(
                f"the server is busy with another write (waited {WRITE_WAIT_SECONDS:g} s); retry later, "
                "or ingest large batches with the ingest job"
            )
        if self.closing.is_set():
            self._slot.release()
            raise ShuttingDown
        try:
            yield
        finally:
            give_back_memory()
            self._slot.release()
        self._written()

    def _written(self) -> None:
        with self._count:
            self.writes_since_maintenance += 1
            due = MAINTAIN_AFTER_WRITES <= self.writes_since_maintenance and not self.closing.is_set()
            if not due or (self.maintenance is not None and self.maintenance.is_alive()):
                return
            self.writes_since_maintenance = 0
            self.maintenance = threading.Thread(target=self._maintain, name="thoth-maintenance", daemon=True)
            self.maintenance.start()

    def _maintain(self) -> None:
        from thoth.store.maintenance import maintain  # loaded with the first maintenance, not at start

        try:
            maintain(self.store)
        except Exception:  # logged; the next due run tries again, and the index stays searchable meanwhile
            log.exception("background maintenance failed")
