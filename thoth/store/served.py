"""Which chunks a search serves: those of a document version a `documents` row with status ok points at.

A write adds a new version's chunks (staged under the new content's doc_id) before it switches the
document's `documents` row to them, and deletes the old version's chunks after (thoth/writes/writer.py):
for a while the chunk table holds both. A search serves the hits of a (source_id, doc_id) that a
`documents` row points at, and where it dropped some, searches again without those versions, so its lists
stay as deep (thoth.retrieval.search).

The live pairs are held per version of the `documents` table and asked of LanceDB at most every
`trust_seconds` (thoth.store.chunks.FACTS_SECONDS): when nothing is staged, what a search pays is a set
lookup per hit. A set a second old can err only by dropping a version switched in since (or by serving
the one it replaced, as a search a second earlier would have); so a search that drops anything first
brings both tables to their latest version (another process may have written them) and reads the set
again, and decides on that.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from thoth.records import Hit
from thoth.store import filters

Pair = tuple[str | None, str | None]  # (source_id, doc_id): NULL in a row written without them


def pair_of(hit: Hit) -> Pair:
    return (hit.chunk.source_id, hit.chunk.doc_id)


def not_among(pairs: Iterable[Pair]) -> str:
    """A `where` clause: rows of none of `pairs` (each a source's document version)."""
    by_source: dict[str | None, list[str | None]] = {}
    for source_id, doc_id in pairs:
        by_source.setdefault(source_id, []).append(doc_id)
    ors = [f"({_one_of('source_id', [s])} AND {_one_of('doc_id', ds)})" for s, ds in by_source.items()]
    return f"NOT ({' OR '.join(sorted(ors))})" if ors else "true"


def _one_of(column: str, values: list[str | None]) -> str:
    """`column` is one of `values`, None among them meaning NULL (a row written without it)."""
    given = sorted(v for v in values if v is not None)
    parts = ([filters.is_in(column, given)] if given else []) + ([f"{column} IS NULL"] if None in values else [])
    return parts[0] if len(parts) == 1 else f"({' OR '.join(parts)})"


class LiveDocuments:
    """The (source_id, doc_id) pairs `documents` rows with status ok point at, held per table version."""

    def __init__(self, lance: Any, trust_seconds: float):
        self.lance, self.trust_seconds = lance, trust_seconds
        # (handle, version, when read, when last read at the latest version (or -inf), pairs)
        self._held: tuple[Any, int, float, float, frozenset[Pair]] | None = None

    def pairs(self, documents: Any, latest_since: float | None = None) -> frozenset[Pair]:
        """The live pairs of the `documents` table (its async handle). `latest_since` (a time.monotonic()):
        the latest version's, read after that moment; without it, the held set while it is recent."""
        held = self._held
        if held is not None and held[0] is documents:
            if latest_since is None and time.monotonic() - held[2] < self.trust_seconds:
                return held[4]
            if latest_since is not None and held[3] >= latest_since:
                return held[4]  # another search brought it to the latest version meanwhile
        return self.lance.run(self._read(documents, latest_since is not None))

    async def _read(self, documents: Any, latest: bool) -> frozenset[Pair]:
        asked = time.monotonic()
        if latest:
            await documents.checkout_latest()  # not waiting for the read-consistency interval
        version = await documents.version()
        held = self._held
        if held is not None and held[0] is documents and held[1] == version:
            pairs = held[4]
        else:
            query = documents.query().where(filters.eq("status", "ok")).select(["source_id", "doc_id"])
            rows = await query.to_arrow()
            pairs = frozenset(zip(rows.column("source_id").to_pylist(), rows.column("doc_id").to_pylist(), strict=True))
        # only a read that asked for the latest version answers a later `latest_since` (a read within the
        # trust interval may be of a version older than a switch that happened before the search began)
        self._held = (documents, version, asked, asked if latest else float("-inf"), pairs)
        return pairs


__all__ = ["LiveDocuments", "not_among", "pair_of"]
