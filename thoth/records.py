"""The records that flow between the layers: store → retrieval → tool surfaces. Frozen dataclasses whose fields
are the index's column names (docs/architecture.md, "Records"); a `Match` says which rows, by field."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar


@dataclass(frozen=True)
class Source:
    """A collection of documents indexed together: a handbook, a folder of PDFs, a workshop."""

    source_id: str
    name: str = ""
    kind: str = ""  # handbook | pdf | workshop | text
    uri: str = ""
    product: str | None = None
    has_diffs: bool = False
    has_tree: bool = False
    document_count: int = 0
    chunk_count: int = 0
    embed_model: str | None = None
    updated_at: datetime | None = None
    include: tuple[str, ...] = ()  # the scope runs apply (thoth.source_spec.SourceSpec): globs of keys taken
    exclude: tuple[str, ...] = ()  # and of keys left out


@dataclass(frozen=True)
class Document:
    """One file of a source (a handbook page, a paper, a workshop's README), as ingest read it."""

    doc_id: str  # SHA-256 of the file's bytes
    source_id: str = ""
    key: str = ""  # path inside the source, '/'-separated
    uri: str = ""
    url: str | None = None
    bucket: str | None = None
    version: str | None = None
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    page_count: int | None = None
    byte_size: int | None = None
    status: str = "ok"  # ok | failed
    error: str | None = None
    ingested_at: datetime | None = None
    object_id: str | None = None  # SHA-1 of the object's gs:// URL and version (the research surface's id)
    fingerprint: str | None = None
    bibtex: str | None = None
    bibtex_source: str | None = None
    sidecar: str | None = None
    parser: str | None = None
    # glyphs the file draws that no table maps to Unicode (PDFs), kept in the text as U+FFFD; None: read
    # before this was counted
    unmapped_glyphs: int | None = None
    # characters of text a person never sees that the parser left out, (reason, count) in reason order
    # (docs/security.md); () none; None: read before this was counted
    hidden_dropped: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class Partition:
    """A page of a PDF, a section of a page, or a workshop step's section: what chunks are cut from."""

    partition_id: str
    doc_id: str = ""
    source_id: str = ""
    ordinal: int = 0
    kind: str = ""  # page | section | a workshop section kind
    heading_path: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    text: str = ""
    exercise_number: int | None = None
    step_number: int | None = None
    path: str | None = None
    is_diff: bool | None = None
    partition_hash: str | None = None
    # a PDF page read by OCR: the recogniser's confidence, 0..1 (its chunks are content_type `ocr`); None:
    # a text layer, or read before this was stored
    ocr_confidence: float | None = None


@dataclass(frozen=True)
class Chunk:
    """A passage: the unit that is embedded, searched and quoted back."""

    chunk_id: str
    doc_id: str = ""
    source_id: str = ""
    partition_id: str | None = None
    chunk_index: int = 0
    key: str = ""  # the document's key
    title: str | None = None
    section: str | None = None  # heading path, ' > '-joined
    text: str = ""
    page_start: int | None = None
    page_end: int | None = None
    content_type: str | None = None  # text | code | table | figure | diff | ...
    language: str | None = None
    exercise_number: int | None = None
    step_number: int | None = None
    tags: tuple[str, ...] = ()
    source_ref: str = ""
    chunk_hash: str | None = None
    partition_hash: str | None = None
    figure: str | None = None  # a figure's caption: its picture's name (thoth.store.figures), on page_start
    figure_box: tuple[float, ...] | None = None  # that figure's box on its page: left, bottom, right, top (points)
    # PDFs: where its text is printed: (page, left, bottom, right, top) after each other, in points; read only
    # when asked for (thoth.store.schema.ON_DEMAND_COLUMNS)
    boxes: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Hit:
    """A chunk a search found, with what each search saw of it."""

    chunk: Chunk
    score: float = 0.0  # fused, 0..1 (hybrid); the search's own measure otherwise
    similarity: float | None = None  # cosine of query and chunk, when vector search saw it
    bm25: float | None = None  # keyword score, when keyword search saw it
    document_score: float | None = None  # the document's score, when hits are ranked by document
    vector_rank: int | None = None  # 1-based, when asked to explain the ranking
    keyword_rank: int | None = None
    # Where the search read the row (LanceDB's _rowid, valid for that table version): on a large table
    # the store reads the rest of a hit's fields by it, for the few hits a ranking keeps.
    row_id: int | None = None

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id


def _of_chunk(name: str) -> Any:
    """A property of a tree node: that field of its chunk, for a chunk node (level 0); None otherwise."""
    return property(lambda node: getattr(node.chunk, name) if node.chunk is not None else None)


@dataclass(frozen=True)
class TreeNode:
    """A node of a source's RAPTOR tree: a summary (level >= 1) over the nodes one level down, whose
    leaves (level 0) are chunks."""

    node_id: str
    source_id: str = ""
    level: int = 0
    text: str = ""
    children: tuple[str, ...] = ()  # node ids one level down (chunk ids at level 1)
    parent: str | None = None
    leaf_count: int = 1
    summariser: str | None = None
    tree_version: str | None = None
    similarity: float | None = None  # cosine with the query, when a search found it
    chunk: Chunk | None = None  # level 0: the chunk this node is (not a column: its page and citation)

    # A chunk node's page and citation, from its chunk (None for a summary node: it has no one page).
    chunk_id = _of_chunk("chunk_id")
    doc_id = _of_chunk("doc_id")
    key = _of_chunk("key")
    title = _of_chunk("title")
    section = _of_chunk("section")
    source_ref = _of_chunk("source_ref")
    page_start = _of_chunk("page_start")
    page_end = _of_chunk("page_end")


@dataclass(frozen=True)
class NodeWithVector(TreeNode):
    """A tree node with its embedding: what the tree writer builds, writes and reads back to update a tree in
    place. Searches read plain `TreeNode`s, whose fields name the columns they read, so no vector is read."""

    vector: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Session:
    """A chat session over one source (the RAPTOR surface's create_session)."""

    session_id: str
    source_id: str
    title: str = ""
    created_at: datetime | None = None
    owner: str | None = None  # the key of the verified caller who created it


@dataclass(frozen=True)
class IngestRun:
    """One write to the index as it happened: a job run (or one task of it), a bucket event, an
    `ingest_document` call or a workshop reindex; who started it, what it changed, what failed and why."""

    run_id: str
    source_id: str
    trigger: str = ""  # job | event | document | reindex
    started_by: str = ""  # the job task, the event (its message id and object), the caller's identity
    started_at: datetime | None = None
    ended_at: datetime | None = None
    added: int = 0  # documents new to the source
    updated: int = 0  # documents whose content (or BibTeX) changed
    removed: int = 0
    failed: int = 0
    unchanged: int = 0
    chunks_written: int = 0
    tree: str = ""  # what the tree update did ("" when there was none)
    failures: tuple[str, ...] = ()  # "key: reason", one per failed file
    error: str = ""  # why the run could not finish ("" when it did)
    interrupted: bool = False  # stopped by a signal after a written batch; the next run finishes
    # A run a writer started over MCP (add_source, refresh_source) is recorded when it starts and updated
    # as it goes, so any server instance can report it: its state, progress and a cancel request.
    state: str = ""  # queued | running | done | failed | cancelled | interrupted ("": an older row, ended)
    uri: str = ""  # the source it reads (thoth.source_spec.SourceSpec.uri)
    done_files: int = 0  # files of the plan handled so far
    total_files: int = 0  # files the plan has to handle (0 until planned)
    cancel: bool = False  # cancel_run asked the run to stop after its current batch
    heartbeat_at: datetime | None = None  # the run's last sign of life, while it runs
    execution: str = ""  # where it runs: a local process id, or the Cloud Run execution


R = TypeVar("R")


@dataclass(frozen=True)
class Collections:
    """A set of collections (source ids): those in `ids`, or with `all_but`, every one except those.

    What a caller may read (or write), from THOTH_ACCESS_FILE (thoth.access); the store filters every read
    by it (`Store.reading`). `all_but` keeps the set finite when a default grant covers the collections the
    file does not name."""

    ids: frozenset[str] = frozenset()
    all_but: bool = True

    def __contains__(self, source_id: object) -> bool:
        return (source_id in self.ids) != self.all_but

    @property
    def every(self) -> bool:
        return self.all_but and not self.ids


EVERY_COLLECTION = Collections()

# A Match names rows by their record's fields: a value means equal, a list/tuple/set means one of,
# None means any, and the classes below say the rest. `thoth.store` turns it into the table's filter.
Match = Mapping[str, object]


@dataclass(frozen=True)
class AtLeast:
    value: int


@dataclass(frozen=True)
class AtMost:
    value: int


@dataclass(frozen=True)
class Contains:
    """A list field (a node's children, a chunk's tags) has this member."""

    value: str


@dataclass(frozen=True)
class Excluding:
    """None of these values (a field that is not set passes): a search that leaves references out."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Present:
    """The field is set (not NULL)."""


@functools.cache
def field_names(record: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(record))


@functools.cache
def _not_null(record: type[Any]) -> frozenset[str]:
    """Fields whose default is a value, not None: a NULL in the table reads as that default."""
    return frozenset(
        f.name for f in dataclasses.fields(record) if f.default is not dataclasses.MISSING and f.default is not None
    ) | frozenset(f.name for f in dataclasses.fields(record) if f.default_factory is not dataclasses.MISSING)


def from_row(record: type[R], row: Mapping[str, Any]) -> R:
    """The record of a table row: its fields that the row has (lists become tuples, NULL a default)."""
    defaults = _not_null(record)
    values = {}
    for name in field_names(record):
        if name in row:
            value = row[name]
            if isinstance(value, list):
                value = tuple(value)
            elif value is None and name in defaults:
                continue  # NULL in the table: the record's default ("" for text, () for lists)
            values[name] = value
    return record(**values)


def to_row(record: Any) -> dict[str, Any]:
    """A record as a table row (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(record).items()}


# -- the store's own records: what it says about a source's tree and the chunk table's vector index --


@dataclass(frozen=True)
class TreePointer:
    """Which tree version of a source readers follow, and what it was built from and with."""

    version: str
    fingerprint: str = ""  # of the chunks, parameters, summariser and model: unchanged means up to date
    config: str = ""  # of the parameters, summariser and model: an update in place continues the same config
    levels: int = 0
    nodes: int = 0
    chunks: int = 0
    layer_sizes: tuple[int, ...] = ()
    summariser: str | None = None
    reducer: str | None = None
    built_at: str | None = None
    updated_at: str | None = None
    build_chunks: int = 0  # chunks at the last full build
    drift_chunks: int = 0  # chunks inserted or deleted in place since then
    drift: float = 0.0
    stale: str | None = None  # why readers skip this tree until the next run rebuilds it


@dataclass(frozen=True)
class VectorIndex:
    """The ANN index on the chunk vectors."""

    name: str
    type: str  # lancedb's name for its type ("IvfRq")
    indexed_rows: int = 0
    unindexed_rows: int = 0


@dataclass(frozen=True)
class VectorIndexBuild:
    """What `Indexes.ensure_vector` did: built, retrained or updated (new rows folded in) the index."""

    action: str
    rows: int
    seconds: float
    index: VectorIndex | None
