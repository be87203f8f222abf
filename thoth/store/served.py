"""Which chunks a search serves: those of a document version a `documents` row with status ok points at.

A write stages a new version's chunks before it switches the document's row, and deletes the old ones after
(thoth/writes/writer.py), so for a while the chunk table holds both. The live pairs are held per version of
the `documents` table and asked of LanceDB at most every `trust_seconds`: a set a second old can err only
by dropping a version switched in since, so a search that drops anything first brings both tables to their
latest version and decides on the set read then.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from thoth.records import Hit
from thoth.store import filters

Pair = tuple[str, str]  # (source_id, doc_id)


def pair_of(hit: Hit) -> Pair:
    return (hit.chunk.source_id, hit.chunk.doc_id)


def not_among(pairs: Iterable[Pair]) -> str:
    """A `where` clause: rows of none of `pairs` (each a source's document version)."""
    by_source: dict[str, list[str]] = {}
    for source_id, doc_id in pairs:
        by_source.setdefault(source_id, []).append(doc_id)
    ors = [f"({filters.eq('source_id', s)} AND {filters.is_in('doc_id', sorted(ds))})" for s, ds in by_source.items()]
    return f"NOT ({' OR '.join(sorted(ors))})" if ors else "true"


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
