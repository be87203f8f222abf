"""A copy of one version of a table held in memory, keyed by the table handle and its version. A new version
is read in a thread of its own while LanceDB answers the searches, so no request waits for it (over GCS a
copy takes seconds); only `get(wait=True)` (warm-up) waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from thoth.freed import give_back_memory

log = logging.getLogger(__name__)


class HeldCopy:
    """`read(table)` makes the copy of a table's current version, or None when this table is not to be
    held (too large, say); `get` answers it for a given version of the table."""

    def __init__(self, name: str, read: Callable[[Any], Any]):
        self.name = name
        self._read = read
        self.held: tuple[tuple[Any, int], Any] | None = None  # ((table handle, version), copy or None)
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def holds(self, table: Any) -> bool:
        """Whether a copy of some version of this table handle is held (or was declined)."""
        return self.current(table) is not None

    def current(self, table: Any) -> tuple[int, Any] | None:
        """(version, copy) of whichever version of this table handle is held, without asking the table."""
        held = self.held
        return (held[0][1], held[1]) if held is not None and held[0][0] is table else None

    def get(self, table: Any, version: int, wait: bool = False) -> Any:
        """The copy of `version` of the table, or None. None while that version is being read (its read
        is started here if it is not), unless `wait`: then the read is waited for."""
        key = (table, version)  # a table opened again may count its versions anew
        held = self.held
        if held is not None and held[0] == key:
            return held[1]
        with self._lock:
            if self._reader is None or not self._reader.is_alive():
                self._reader = threading.Thread(target=self._hold, args=(table, key), name=self.name, daemon=True)
                self._reader.start()
            reader = self._reader
        if not wait:
            return None
        reader.join()
        held = self.held
        return held[1] if held is not None and held[0] == key else self.get(table, version, wait=True)

    def _hold(self, table: Any, key: tuple[Any, int]) -> None:
        try:
            self.held = (key, self._read(table))
        except Exception as exc:  # LanceDB answers this version's searches; the next version tries again
            log.warning("could not hold %s in memory: %s", self.name, exc)
            self.held = (key, None)
        give_back_memory(collect_cycles=False)  # the read's batches, and the copy it replaced
