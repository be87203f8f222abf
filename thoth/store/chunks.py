"""A search's steps over the chunk table (thoth.retrieval.search runs them in order): `reading` chooses how
the table is read from its size, `keyword` and `vector` give the candidate lists, `completed` reads the kept
hits whole, `unserved` names the document versions no `documents` row points at (thoth.store.served).
docs/architecture.md ("thoth/store") says how each size of table is read and why; the held copies are kept
by table version and read again beside the searches (thoth.store.held)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from thoth.records import Chunk, Collections, Hit, Match, field_names, from_row
from thoth.store import filters
from thoth.store.held import HeldCopy
from thoth.store.indexes import FTS_COLUMN, VECTOR_COLUMN
from thoth.store.lance import Lance
from thoth.store.schema import CHUNKS, DOCUMENTS, HELD_COLUMNS, ON_DEMAND_COLUMNS, RANKING_COLUMNS
from thoth.store.served import LiveDocuments, Pair, not_among, pair_of
from thoth.store.tables import Tables, lance_message

log = logging.getLogger("thoth.store")

# Up to this many chunks (and without an ANN index) an unfiltered vector search runs in memory, exact as
# LanceDB's brute force is there: held vectors cost memory in proportion to the table (0: never).
MEMORY_SEARCH_ROWS = 20_000
# From this many chunks searches read ids first and only the kept hits whole: every table too large to hold
# in memory, since a hit's columns are each a read of their own and a search keeps a few of its 80 candidates
# (docs/benchmarks.md, "Latency"). Tests lower it to try the whole-row reading.
LATE_READ_ROWS = MEMORY_SEARCH_ROWS + 1
# Up to this many chunks a large table's ranking columns are held in memory by row id (a few short columns:
# docs/performance.md gives the memory), so its searches read only row ids and scores (0: always read them).
RANKING_COPY_ROWS = 2_000_000
NPROBES = 8  # IVF partitions searched per query (one partition per 4,096 chunks: indexes.PARTITION_ROWS)
# ANN candidates re-ranked on the full vectors: REFINE_FACTOR x REFINE_BASE, whatever the search's depth,
# for recall@10 >= 0.97 at 1M chunks (docs/benchmarks.md). IVF_RQ's 4-bit codes need 40 candidates, which
# hybrid search's 40-deep list re-ranks anyway. An index of an older type is retrained at the next ingest.
REFINE_BASE = 10
REFINE_FACTOR = 4
# How long a search trusts what it asked lancedb about the chunk table (its size, its columns):
# asking on every search is a trip through lancedb's runtime that takes the GIL from its worker threads,
# and these change only with a write, which changes how a search reads, never what it finds.
FACTS_SECONDS = 1.0
ROW_ID = "_rowid"


def refine_candidates(factor: int, limit: int) -> int:
    """ANN candidates re-ranked on the full vectors: `factor` x REFINE_BASE, at least the limit. The top
    10 after re-ranking depend only on how many candidates were re-ranked, so a 40-deep list keeps the
    recall@10 of a 10-hit search without re-ranking four times as many."""
    return max(factor * REFINE_BASE, limit)


def present(record: type, names: list[str], fields: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """The columns to read for `record`: `fields` (default all its fields but those read only when asked,
    ON_DEMAND_COLUMNS), its id always and first, those that a table with columns `names` has."""
    have = set(names)
    every = [f for f in field_names(record) if f not in ON_DEMAND_COLUMNS]
    wanted = every if fields is None else (field_names(record)[0], *fields)
    return [c for c in dict.fromkeys(wanted) if c in have]


@dataclass(frozen=True)
class Reading:
    """How one search reads the chunk table, chosen once from its size (`ChunkSearch.reading`) and handed
    to each of its steps: the candidate lists, the completing read, the serve check."""

    table: Any  # the chunk table's async handle
    where: str | None  # the caller's match within the readable collections, less any versions left out
    readable: Collections
    started: float  # time.monotonic() at the search's start: the serve check reads no version older
    late: bool  # candidates carry row ids and the ranking columns; `completed` reads the kept ones whole
    held: tuple[int, Any] | None = None  # (version, RankingColumns) the candidates' columns are taken from
    memory: Any = None  # MemoryVectors: a small table's vector search unfiltered but for the readable collections

    def without(self, pairs: Iterable[Pair]) -> Reading:
        """This reading without the chunks of these document versions (a filter: not the held vectors)."""
        return replace(self, where=filters.both(self.where, not_among(pairs)), memory=None)


class ChunkSearch:
    """A search's steps, each a plain call (thoth.retrieval.search runs them): `reading`, the two candidate
    lists, `completed`, `unserved`."""

    def __init__(self, tables: Tables, lance: Lance):
        self.tables, self.lance = tables, lance
        self._memory = HeldCopy("the chunk table's vectors", lambda t: lance.run(self._read_small(t)))
        self._ranking = HeldCopy("the chunk table's ranking columns", lambda t: lance.run(self._read_ranking(t)))
        self._count: tuple[float, int] | None = None  # (when counted, the chunk table's rows)
        self._names: tuple[Any, float, list[str]] | None = None  # (table handle, when asked, its columns)
        self.live = LiveDocuments(lance, FACTS_SECONDS)

    def _chunks(self) -> Any:
        return self.lance.async_of(self.tables.table(CHUNKS))

    def _documents(self) -> Any:
        return self.lance.async_of(self.tables.table(DOCUMENTS))

    def reading(self, match: Match | None, readable: Collections, vector: bool) -> Reading:
        """How a search of the chunks that `match` within `readable` reads; `vector`: whether it has a
        vector list (a small table's vectors are then read into memory, the first time waited for)."""
        started, table = time.monotonic(), self._chunks()
        matched = filters.where(match or {})
        reading = Reading(table, filters.both(matched, filters.within(readable)), readable, started, late=False)
        if self._chunk_count() >= LATE_READ_ROWS:
            return replace(reading, late=True, held=self._held_ranking(table))
        if MEMORY_SEARCH_ROWS <= 0 or self._chunk_count() > MEMORY_SEARCH_ROWS:
            return reading
        memory = self._memory_vectors(table) if vector and not matched else None  # of the current version
        held = self._memory.current(table)  # any version: `_search_rows` checks it after the search
        rows = (held[0], held[1].by_row_id) if held is not None and held[1] is not None else None
        return replace(reading, held=rows, memory=memory)

    def keyword(self, reading: Reading, words: str, phrases: tuple[str, ...], depth: int) -> Future[list[Hit]]:
        """BM25's `depth` best chunks, started: its future answers while the caller embeds the query."""
        return self.lance.start(self._keyword_hits(reading, words, depth, phrases))

    def vector(self, reading: Reading, vector: Any, depth: int) -> list[Hit]:
        """The `depth` chunks nearest `vector` by cosine."""
        if reading.memory is not None:
            columns = present(Chunk, reading.memory.rows.column_names)
            return reading.memory.search(vector, depth, columns, reading.readable)
        return self.lance.run(self._vector_hits(reading, vector, depth))

    def completed(self, reading: Reading, hits: list[Hit]) -> list[Hit]:
        """`hits` (candidates of this reading) read whole: on a large table only these few are."""
        return self.lance.run(self._complete(reading.table, hits, reading.held)) if reading.late and hits else hits

    def unserved(self, reading: Reading, hits: list[Hit]) -> frozenset[Pair]:
        """The document versions of `hits` (read whole) that no `documents` row points at (thoth.store.served).
        Nothing staged (the common case): a set lookup per hit. Before it names any it reads both tables'
        latest versions: the pairs it holds may predate a switch."""
        live = self.live.pairs(self._documents())
        if all(pair_of(h) in live for h in hits):
            return frozenset()
        self.lance.run(reading.table.checkout_latest())  # the rows of a version the documents table now points at
        return frozenset(pair_of(h) for h in hits) - self.live.pairs(self._documents(), latest_since=reading.started)

    def warm(self, wait: bool = True) -> None:
        """Read the copies searches use (a small table's vectors, a large table's ranking columns) now, at
        start-up, so that the first searches find them held. A small table's vectors are waited for; a
        large table's ranking columns only with `wait`: over GCS they take seconds at 1M chunks."""
        table = self._chunks()
        self._memory_vectors(table, wait=True)
        if RANKING_COPY_ROWS > 0 and self._chunk_count() >= LATE_READ_ROWS:
            self._ranking.get(table, self.lance.run(table.version()), wait=wait)

    def _chunk_count(self) -> int:
        now = time.monotonic()
        counted = self._count
        if counted is None or now - counted[0] >= FACTS_SECONDS:
            counted = self._count = (now, self.tables.table(CHUNKS).count_rows())
        return counted[1]

    async def _names_of(self, table: Any) -> list[str]:
        """The table's columns, asked of lancedb again only after FACTS_SECONDS or for another handle
        (columns are only ever added: a second-old list holds them)."""
        now = time.monotonic()
        known = self._names
        if known is None or known[0] is not table or now - known[1] >= FACTS_SECONDS:
            known = self._names = (table, now, (await table.schema()).names)
        return known[2]

    def _memory_vectors(self, table: Any, wait: bool = False) -> Any:
        """The chunk table's current version in memory, or None: a table past MEMORY_SEARCH_ROWS or with an
        ANN index, and while a new version is being read (the first version is waited for)."""
        if MEMORY_SEARCH_ROWS <= 0 or self._chunk_count() > MEMORY_SEARCH_ROWS:
            return None  # known without asking lancedb for the table's version on every search
        return self._memory.get(table, self.lance.run(table.version()), wait=wait or not self._memory.holds(table))

    def _held_ranking(self, table: Any) -> tuple[int, Any] | None:
        """(version, RankingColumns) when a copy is held, taken as it is: `_search_rows` checks its version
        after the search, where asking costs no extra trip, and no search waits for a new one."""
        if RANKING_COPY_ROWS <= 0:
            return None
        held = self._ranking.current(table)
        if held is not None and held[1] is not None:
            return held
        version = self.lance.run(table.version())  # none held yet, or declined: read (again) for this version
        copy = self._ranking.get(table, version)
        return None if copy is None else (version, copy)

    async def _read_small(self, table: Any) -> Any:
        from thoth.store.memory import MemoryVectors  # numpy: not needed before the first search

        if await table.count_rows() > MEMORY_SEARCH_ROWS:
            return None
        if any(VECTOR_COLUMN in index.columns for index in await table.list_indices()):
            return None  # an ANN index answers as it was built to (a table past VECTOR_INDEX_MIN_ROWS)
        columns = [*present(Chunk, await self._names_of(table)), VECTOR_COLUMN]
        return MemoryVectors.of(await table.query().select(columns).with_row_id().to_arrow(), VECTOR_COLUMN)

    async def _read_ranking(self, table: Any) -> Any:
        from thoth.store.memory import RankingColumns

        if await table.count_rows() > RANKING_COPY_ROWS:
            return None
        names = await self._names_of(table)
        held = [c for c in (*RANKING_COLUMNS, *HELD_COLUMNS) if c in names]
        return RankingColumns.of(await table.query().select(held).with_row_id().to_arrow(), compact=HELD_COLUMNS)

    async def _search_rows(self, reading: Reading, search: Any, limit: int, score: str) -> list[dict]:
        """The first `limit` rows a lancedb query finds, with its `score` column and the row id: whole, or
        a late reading's ranking columns; taken from a held copy when the table is still at the copy's
        version after the search (a row id always names the same row of a version)."""
        table = reading.table
        names = await self._names_of(table)
        columns = [c for c in RANKING_COLUMNS if c in names] if reading.late else present(Chunk, names)

        async def read(selected: list[str]) -> list[dict]:
            return (await self.lance.arrow(search.select(selected).with_row_id().limit(limit), limit)).to_pylist()

        if reading.held is not None:
            version, copy = reading.held
            scored = await read([score])
            found = copy.rows_of([row[ROW_ID] for row in scored], columns)
            now = await table.version()
            if found is not None and now == version:
                return [{**row, **more} for row, more in zip(found, scored, strict=True)]
            if now != version:  # read the new version beside the searches
                (self._ranking if reading.late else self._memory).get(table, now)
        return await read([*columns, score])

    async def _vector_hits(self, reading: Reading, vector: Any, limit: int) -> list[Hit]:
        table, where = reading.table, reading.where
        factor = -(-refine_candidates(REFINE_FACTOR, limit) // limit)  # ceil: lancedb multiplies it by the limit
        query = table.query().nearest_to(vector).column(VECTOR_COLUMN).distance_type("cosine")
        query = query.nprobes(NPROBES).refine_factor(factor)  # ignored by a brute-force scan
        if where:
            query = query.where(where)  # a prefilter: applied inside the index search, not to its results
        # _distance named: Lance warns on every search whose columns leave it out
        rows = await self._search_rows(reading, query, limit, "_distance")
        return [Hit(from_row(Chunk, row), similarity=1.0 - float(row["_distance"]), row_id=row[ROW_ID]) for row in rows]

    async def _keyword_hits(self, reading: Reading, words: str, limit: int, phrases: tuple[str, ...]) -> list[Hit]:
        """BM25: any of `words` and every one of `phrases` (the index stores word positions: migration)."""
        from lancedb.query import BooleanQuery, MatchQuery, Occur, PhraseQuery

        query: Any = MatchQuery(words, FTS_COLUMN) if words else None
        if phrases:
            clauses = [(Occur.MUST, PhraseQuery(p, FTS_COLUMN)) for p in phrases]
            query = BooleanQuery(clauses + ([(Occur.SHOULD, query)] if query is not None else []))
        if query is None:
            return []
        search = reading.table.query().nearest_to_text(query)
        if reading.where:
            # a prefilter, as for vectors (a caller's readable collections too: the list stays full). Not a
            # mask over a deeper unfiltered list: LanceDB scores the rows its index has not taken in yet
            # otherwise with a filter, so the two orders differ (measured), and the prefilter is the reference
            search = search.where(reading.where)
        # _score named: Lance warns on every search whose columns leave it out
        rows = await self._search_rows(reading, search, limit, "_score")
        hits = [Hit(from_row(Chunk, row), bm25=float(row["_score"]), row_id=row[ROW_ID]) for row in rows]
        hits.sort(key=lambda h: (-(h.bm25 or 0.0), h.chunk_id))  # equal scores: one order, not storage order
        return hits

    async def _complete(self, table: Any, hits: list[Hit], held: tuple[int, Any] | None) -> list[Hit]:
        """`hits` read whole, by the row id the search saw; a hit whose row moved since (a write or a
        compaction in between) is read by its chunk id, and one deleted since is left out. Order is kept.
        The short columns come from the `held` copy when it holds every hit's row."""
        names = await self._names_of(table)
        # the ranking columns the search read are on the hits already: each column taken costs a read
        columns = [c for c in present(Chunk, names) if c not in RANKING_COLUMNS[1:]]
        short = _held_columns(hits, held, [c for c in HELD_COLUMNS if c in names])
        if short is not None:
            columns = [c for c in columns if c not in HELD_COLUMNS]
        rows: dict[str, dict] = {}
        row_ids = [h.row_id for h in hits if h.row_id is not None]
        if row_ids:
            try:
                taken = await self.lance.arrow(table.take_row_ids(row_ids).select(columns), len(row_ids))
            except (ValueError, OSError, RuntimeError) as exc:  # a row id of an older table version
                log.info("row ids moved since the search (%s): reading hits by chunk id", lance_message(exc))
            else:
                rows = {row["chunk_id"]: row for row in taken.to_pylist()}
        missing = [h.chunk_id for h in hits if h.chunk_id not in rows]
        if missing:
            found = table.query().where(filters.where({"chunk_id": missing})).select(columns)
            rows |= {row["chunk_id"]: row for row in (await found.to_arrow()).to_pylist()}
        if short is not None:
            rows = {chunk_id: {**short[chunk_id], **row} for chunk_id, row in rows.items()}
        return [replace(h, chunk=_with_row(h.chunk, rows[h.chunk_id])) for h in hits if h.chunk_id in rows]


def _held_columns(hits: list[Hit], held: tuple[int, Any] | None, columns: list[str]) -> dict[str, dict] | None:
    """`columns` of each hit by chunk id, from the held copy (RankingColumns); None unless it holds every
    hit's row id with that hit's chunk id (a row id names another row after a compaction)."""
    if held is None or not columns or any(h.row_id is None for h in hits):
        return None
    rows = held[1].rows_of([h.row_id for h in hits], ["chunk_id", *columns])
    if rows is None or any(row["chunk_id"] != h.chunk_id for row, h in zip(rows, hits, strict=True)):
        return None
    return {row.pop("chunk_id"): row for row in rows}


def _with_row(chunk: Chunk, row: dict) -> Chunk:
    """`chunk` with the fields `row` holds taken from it (converted as `from_row` does)."""
    read = from_row(Chunk, row)
    return replace(chunk, **{name: getattr(read, name) for name in row if name in _CHUNK_FIELDS})


_CHUNK_FIELDS = frozenset(field_names(Chunk))
