"""What every instance must agree on during sign-in (THOTH_AUTH=oauth), kept in the index's storage.

Codes, tokens and registrations are self-contained blobs (thoth.mcp.oauth); only three facts need shared
state, one row each in `oauth_state`, keyed by an id the blob carries:
- a code was redeemed (`claim`): a code works once, whichever instance redeems it;
- a refresh-token family's generation (`advance`): each refresh rotates the token, and presenting an older
  generation again (a stolen, replayed token) revokes the whole family;
- a family was revoked (`revoke`), which its access tokens are checked against (`live`).
Like the ingest history, the table is not index content (not in ALL_TABLES); it is created on first use and
rows past their expiry are pruned when a family starts. Writes that decide (claim, advance) read the latest
version first; `live` may lag another instance's revocation by Settings.read_consistency_seconds.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from thoth.store import filters
from thoth.store.schema import OAUTH_STATE, schema_for
from thoth.store.tables import Tables, retry_on_conflict


class OAuthState:
    def __init__(self, tables: Tables):
        self.tables = tables
        self._found = False

    def _table(self) -> Any:
        if not self._found:
            if OAUTH_STATE not in self.tables.listed():
                self.tables.db.create_table(OAUTH_STATE, schema=schema_for(OAUTH_STATE, 0), exist_ok=True)
            self._found = True
        return self.tables.table(OAUTH_STATE)

    def _latest(self) -> Any:
        table = self._table()
        table.checkout_latest()  # a decision on another instance's latest write, not the consistency window's
        return table

    def claim(self, key: str, expires_at: float) -> bool:
        """Insert `key` unless it exists; whether this call inserted it (a second redemption gets False)."""
        row = pa.Table.from_pylist(
            [{"key": key, "generation": 0, "revoked": False, "expires_at": expires_at}],
            schema=schema_for(OAUTH_STATE, 0),
        )
        table = self._latest()
        result = retry_on_conflict(
            lambda: table.merge_insert("key").when_not_matched_insert_all().execute(row), f"claim in {OAUTH_STATE}"
        )
        return getattr(result, "num_inserted_rows", 0) == 1

    def start(self, key: str, expires_at: float) -> None:
        """A new refresh-token family at generation 0; expired rows go."""
        table = self._latest()
        retry_on_conflict(lambda: table.delete(f"expires_at < {time.time():.3f}"), f"prune {OAUTH_STATE}")
        self.claim(key, expires_at)

    def advance(self, key: str, generation: int, expires_at: float) -> bool:
        """Move a live family from `generation` to the next; False (and the family revoked) when `generation`
        is not its current one: an older refresh token was presented again."""
        table = self._latest()
        where = f"{filters.eq('key', key)} AND generation = {int(generation)} AND NOT revoked"
        values = {"generation": int(generation) + 1, "expires_at": float(expires_at)}
        result = retry_on_conflict(lambda: table.update(where=where, values=values), f"rotate in {OAUTH_STATE}")
        if getattr(result, "rows_updated", 0) == 1:
            return True
        self.revoke(key)
        return False

    def revoke(self, key: str) -> None:
        table = self._latest()
        retry_on_conflict(
            lambda: table.update(where=filters.eq("key", key), values={"revoked": True}), f"revoke in {OAUTH_STATE}"
        )

    def live(self, key: str) -> bool:
        """Whether the family exists and is not revoked (a revocation as of the read-consistency window)."""
        rows = self._read(self._table(), key)
        if not rows:  # a family another instance started since this one last read: never a revoked one
            rows = self._read(self._latest(), key)
        return bool(rows) and not rows[0]["revoked"]

    def _read(self, table: Any, key: str) -> list[dict]:
        return table.search().where(filters.eq("key", key)).select(["revoked"]).limit(1).to_list()
