"""LanceDB's tables: connect (a folder or gs://), open and create them, and write with retries
when another writer committed first."""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import pyarrow as pa

from thoth.config import Settings
from thoth.errors import ServerFault
from thoth.store.lance import lancedb, session
from thoth.store.schema import ALL_TABLES, schema_for

COMMIT_ATTEMPTS = 8

log = logging.getLogger("thoth.store")
T = TypeVar("T")


class StoreError(ServerFault):
    """The index cannot be read or written; the message says why."""


class IndexMissing(StoreError):
    """There is no index at the configured URI yet."""


class ModelMismatch(StoreError):
    """The index was built with another embedding model than the one loaded."""


def lance_message(exc: Exception) -> str:
    # Lance's messages end in the Rust source path that raised them: of no use to an operator.
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return re.sub(r",\s*/\S+\.rs:\d+:\d+\s*$", "", first).strip() or type(exc).__name__


def _is_conflict(exc: Exception) -> bool:
    message = str(exc).lower()
    return "conflict" in message or "concurrent" in message or "retryable" in message


def retry_on_conflict(fn: Callable[[], T], what: str) -> T:
    """Run one write, retrying when another writer committed first (parallel ingest tasks).

    Lance retries compatible commits itself; what is left (e.g. two deletes of the same
    fragment) surfaces as a commit-conflict error, and the write is simply tried again.
    """
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == COMMIT_ATTEMPTS or not _is_conflict(exc):
                raise
            delay = min(2.0, 0.05 * 2**attempt) * (0.5 + random.random())
            log.info("commit conflict on %s (attempt %d), retrying in %.2fs: %s", what, attempt, delay, exc)
            time.sleep(delay)
    raise AssertionError("unreachable")


class Tables:
    """One LanceDB database and its open table handles (opened once, refreshed by lancedb)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.uri = settings.db_uri
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._readable: dict[str, int] = {}  # table -> the latest version read whole (check_readable)

    @property
    def db(self) -> Any:
        if self._db is None:
            with self._lock:
                if self._db is None:
                    interval = self.settings.read_consistency_seconds
                    for name, value in self.settings.storage_env().items():
                        os.environ.setdefault(name, value)  # read by Lance's Rust code, not by Thoth
                    try:
                        self._db = lancedb().connect(
                            self.uri,
                            read_consistency_interval=timedelta(seconds=interval) if interval >= 0 else None,
                            storage_options=self.settings.storage_options() or None,
                            session=session(self.settings.lance_cache_mb, self.uri),
                        )
                    except Exception as exc:
                        raise self._unusable(exc, "cannot connect to") from exc
        return self._db

    def _unusable(self, exc: Exception, doing: str) -> StoreError:
        """A storage failure as one sentence: on gs://, why the bucket cannot be used and what to do."""
        if self.uri.startswith("gs://"):
            from thoth.gcs import bucket_problem

            problem = bucket_problem(self.settings, self.uri)
            if problem:
                return StoreError(problem)
        return StoreError(f"{doing} the index at {self.uri}: {lance_message(exc)}")

    def names(self) -> list[str]:
        """Thoth's tables that exist."""
        return [n for n in self.listed() if n in ALL_TABLES]

    def listed(self) -> list[str]:
        """Every table of the database, Thoth's and others (a re-embedding's staging)."""
        try:
            result = self.db.list_tables()
        except StoreError:
            raise
        except Exception as exc:  # Lance raises RuntimeError/OSError when the storage is not there
            raise self._unusable(exc, "cannot list the tables of") from exc
        return list(getattr(result, "tables", result))

    def table(self, name: str) -> Any:
        table = self._tables.get(name)  # one lookup: ensure() may clear the cache from another thread
        if table is None:
            with self._lock:
                table = self._tables.get(name)
                if table is None:
                    try:
                        table = self._tables[name] = self.db.open_table(name)
                    except (ValueError, FileNotFoundError) as exc:
                        raise IndexMissing(
                            f"table {name!r} does not exist in {self.uri}; run `python -m ingest` first"
                        ) from exc
                    except StoreError:
                        raise
                    except Exception as exc:  # Lance raises RuntimeError/OSError for unreadable tables
                        raise self._unusable(exc, f"cannot open table {name!r} in") from exc
        return table

    def forget(self, name: str) -> None:
        """Drop the open handle of a table that was dropped (a re-embedding's staging)."""
        with self._lock:
            self._tables.pop(name, None)

    def ensure(self, dim: int) -> None:
        """Create any missing table (the chunk table with `dim`-wide vectors).

        Several ingest tasks may call this at once: creating is `exist_ok`, and a lost race is retried.
        """
        existing = set(self.names())
        for name in ALL_TABLES:
            if name not in existing:
                try:
                    self.db.create_table(name, schema=schema_for(name, dim), exist_ok=True)
                except Exception:
                    if name not in self.names():  # not a lost race with another task: a real failure
                        raise
        self._tables.clear()

    def check_readable(self, versions: dict[str, int]) -> None:
        """Read every data file of each table's latest version (one column, so every fragment is opened);
        raise StoreError naming the table when one is missing or truncated. A version read once is not
        read again, so a health probe costs this only after a write."""
        for name, version in versions.items():
            if self._readable.get(name) == version:
                continue
            table = self.table(name)
            column = table.schema.names[0]
            try:
                table.count_rows(f"{column} IS NOT NULL OR {column} IS NULL")
            except Exception as exc:
                raise StoreError(f"table {name!r} (version {version}) cannot be read: {exc}") from exc
            self._readable[name] = version

    # -- writes: each retried when another writer committed first ------------------------------

    def add(self, name: str, rows: list[dict] | pa.Table) -> None:
        if isinstance(rows, list):
            if not rows:
                return
            rows = pa.Table.from_pylist(rows, schema=self.table(name).schema)
        retry_on_conflict(lambda: self.table(name).add(rows), f"add to {name}")

    def delete(self, name: str, where: str) -> None:
        retry_on_conflict(lambda: self.table(name).delete(where), f"delete from {name}")

    def update(self, name: str, where: str, values: dict | None = None, values_sql: dict | None = None) -> None:
        """Set columns of matching rows: `values` literal, `values_sql` SQL expressions built by this package."""
        retry_on_conflict(
            lambda: self.table(name).update(where=where, values=values, values_sql=values_sql), f"update {name}"
        )

    def merge(self, name: str, key: str | list[str], rows: list[dict], what: str) -> None:
        """Insert `rows`, or update the rows with their `key` (columns), in one commit: under concurrent
        writers, a merge that lost the race to insert a key is retried by Lance as an update."""
        data = pa.Table.from_pylist(rows, schema=self.table(name).schema)
        retry_on_conflict(
            lambda: (
                self.table(name).merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data)
            ),
            what,
        )
