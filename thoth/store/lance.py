"""The one place that touches lancedb's private attributes, with the public-API path beside each.

Searches run as coroutines of lancedb's async API, from synchronous code. The private path (the
default) reaches three things lancedb does not publish:
- the `AsyncTable` inside a synchronous `LanceTable` (`table._table`): the same handle, so a search
  sees the version the store's writes and refreshes see, with no second connection;
- lancedb's own event loop (`lancedb.background_loop.LOOP`), which that handle is bound to;
- a query's inner stream (`query._inner.execute()`): lancedb's `to_arrow()` first asks for the
  table's schema (to find blob columns, which Thoth's tables have none of) and waits for the end of
  the stream, each a trip through lancedb's runtime that takes the GIL from its worker threads.

The public path does the same through `lancedb.connect_async`, an event loop of its own and
`await query.to_arrow()`. It finds the same hits (tests/test_store_lance.py), only less cheaply; it is
what to switch to if a lancedb release moves the private attributes (lancedb is pinned below 0.41).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import threading
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

import pyarrow as pa

from thoth._imports import LANCEDB_REST_CLIENT, deferred_packages
from thoth.freed import allocate_through_glibc, lance_cache_bytes

_import_lock = threading.Lock()


def lancedb() -> Any:
    """Import lancedb on first use (a server does it in its warm-up thread), without running the
    `__init__` of its REST-namespace client, which Thoth never calls (thoth/_imports.py)."""
    with _import_lock:  # a second thread waits here for the whole import, never sees it half done
        if "lancedb" not in sys.modules:
            os.environ.setdefault("LANCEDB_LOG", "error")  # Lance's Rust warnings (deprecations, "creating dataset")
            deferred_packages(LANCEDB_REST_CLIENT)
            allocate_through_glibc()  # before the first table is read (thoth/freed.py)
            import lancedb
        import lancedb

    return lancedb


_sessions: dict[tuple[str, int], Any] = {}
_session_lock = threading.Lock()


def session(cache_mb: int, uri: str) -> Any:
    """The LanceDB session (its index and metadata caches) of this process for the database at `uri`, shared
    by every connection to it: unsized, LanceDB's caches grow to gigabytes under writes, each new version's
    metadata and index pages cached beside the last's (docs/operations.md, "Memory"). One per database: a
    session also keeps the object stores it opened, and a second database in the same bucket was handed
    the first one's, prefix and all (on the GCS emulator its tables went under the first one's folder)."""
    with _session_lock:
        key = (uri, cache_mb)
        if key not in _sessions:
            index, metadata = lance_cache_bytes(cache_mb)
            _sessions[key] = lancedb().Session(index_cache_size_bytes=index, metadata_cache_size_bytes=metadata)
        return _sessions[key]


class Lance:
    """How the store reaches lancedb's async API: `public` picks lancedb's published API over its
    private attributes. `uri`, `consistency` and `options` open the public path's own connection."""

    def __init__(self, public: bool, uri: str, consistency: float, options: dict[str, str], cache_mb: int):
        self.public = public
        self._uri, self._consistency, self._options, self._cache_mb = uri, consistency, options, cache_mb
        self._own: asyncio.AbstractEventLoop | None = None  # the public path's loop, in a daemon thread
        self._connection: Any = None
        self._opened: dict[str, tuple[Any, Any]] = {}  # name -> (the sync handle, its async twin)
        self._lock = threading.Lock()

    def _loop(self) -> asyncio.AbstractEventLoop:
        if not self.public:
            from lancedb.background_loop import LOOP

            return LOOP.loop
        with self._lock:
            if self._own is None:
                self._own = asyncio.new_event_loop()
                threading.Thread(target=self._own.run_forever, name="thoth-lance-loop", daemon=True).start()
        return self._own

    def start(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        """Run a coroutine of lancedb calls on the loop its tables belong to; its future."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop())

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        future = self.start(coro)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def async_of(self, table: Any) -> Any:
        """The async handle of a synchronous lancedb table."""
        if not self.public:
            return table._table
        opened = self._opened.get(table.name)
        if opened is None or opened[0] is not table:  # the store opened the table again: so do we
            opened = self._opened[table.name] = (table, self.run(self._open(table.name)))
        return opened[1]

    async def _open(self, name: str) -> Any:
        if self._connection is None:
            interval = timedelta(seconds=self._consistency) if self._consistency >= 0 else None
            self._connection = await lancedb().connect_async(
                self._uri,
                read_consistency_interval=interval,
                storage_options=self._options or None,
                session=session(self._cache_mb, self._uri),
            )
        return await self._connection.open_table(name)

    async def arrow(self, query: Any, most: int) -> pa.Table:
        """The rows of a search or a take (at most `most`) as an Arrow table."""
        if self.public:
            return await query.to_arrow()
        stream = await query._inner.execute()
        batches, rows = [], 0
        async for batch in stream:
            batches.append(batch)
            rows += batch.num_rows
            if rows >= most:  # all the rows it can give: not waiting for the stream's end
                break
        return pa.Table.from_batches(batches, schema=stream.schema)
