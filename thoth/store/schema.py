"""Table names and Arrow schemas: the one place the shape of the index is written down."""

from __future__ import annotations

import pyarrow as pa

SOURCES = "sources"
DOCUMENTS = "documents"
PARTITIONS = "partitions"
CHUNKS = "chunks"
SETTINGS = "settings"
TREE_NODES = "tree_nodes"
SESSIONS = "sessions"
ALL_TABLES = (SOURCES, DOCUMENTS, PARTITIONS, CHUNKS, SETTINGS, TREE_NODES, SESSIONS)
# History, not index content: one row per write to the index (thoth.store.runs). Kept out of ALL_TABLES, so
# the index's table listing, versions and snapshots describe the searchable index alone.
INGEST_RUNS = "ingest_runs"
# Sign-in state shared by every instance (thoth.store.oauth_state): used codes, refresh-token families.
OAUTH_STATE = "oauth_state"

# The layout of the tables this code writes (thoth.store.migration). A change to a table's columns or keys
# comes with a new format, which the migration brings older indexes to.
INDEX_FORMAT = 1

# Keys in the `settings` table that describe the index as a whole.
META_INDEX_FORMAT = "index.format"
META_EMBED_MODEL = "index.embed_model"
META_EMBED_DIM = "index.embed_dim"
# JSON {"query", "document"}: the prompts the index's vectors were made with; absent: none
META_EMBED_PROMPTS = "index.embed_prompts"
# JSON Floor (thoth/store/calibration.py): the model's cosine floor measured on this index, for hybrid search
META_EMBED_FLOOR = "index.embed_floor"
DEFAULT_COLLECTION = "research.default_collection"
# Key prefix of a source's tree pointer: `tree.{source_id}` -> JSON {"version", "fingerprint", ...}.
# Readers follow the pointer, so switching it is the one write that makes a new tree visible.
META_TREE_PREFIX = "tree."
# JSON {model settings rows}: the model a `python -m ingest --reembed` is staging vectors for (empty: none)
META_REEMBED = "reembed.target"
# Staged vectors of a re-embedding, per table re-embedded: (staging table, the live table's key column)
REEMBED_STAGES = {CHUNKS: ("reembed_chunks", "chunk_id"), TREE_NODES: ("reembed_tree_nodes", "node_id")}
META_VECTOR_INDEX_ROWS = "index.vector_trained_rows"  # chunk rows the ANN index was trained on
META_MAINTENANCE = "index.maintained"  # JSON: table -> ISO time of the last maintenance run
META_ORPHANS = "index.orphans"  # JSON: "source\ndoc_id" -> when maintenance first saw its rows owned by no document

# Field metadata that makes a column the row identity. Lance then checks the keys a concurrent
# merge_insert inserted: of two writers inserting one key, the later one retries and updates, so
# parallel ingest tasks cannot leave a key (or a source) twice (issue 21). A key column must not be
# nullable.
PRIMARY_KEY_METADATA = {b"lance-schema:unenforced-primary-key": b"true"}
PRIMARY_KEYS = {SETTINGS: "key", SOURCES: "source_id"}  # table -> its key column
# The chunk columns hybrid search ranks by (a document's identity and sections, for by_document): on a large
# table its searches read only these, held in memory by row id (thoth.store.chunks)
RANKING_COLUMNS = ("chunk_id", "source_id", "key", "partition_id")
# The short chunk columns held beside them (strings that repeat per document or partition are held once,
# dictionary-encoded), so that completing a kept hit reads only the long, per-chunk columns: each column
# taken is a read of its own on a large table (docs/benchmarks.md, "Latency").
HELD_COLUMNS = (
    "doc_id",
    "chunk_index",
    "title",
    "page_start",
    "page_end",
    "content_type",
    "language",
    "exercise_number",
    "step_number",
    "tags",
    "partition_hash",
    "figure",
    "figure_box",
)

# Chunk columns read only when a caller names them (`fields`): never by a search, never held in memory.
ON_DEMAND_COLUMNS = ("boxes",)

SOURCES_SCHEMA = pa.schema(
    [
        pa.field("source_id", pa.string(), nullable=False, metadata=PRIMARY_KEY_METADATA),
        ("name", pa.string()),
        ("kind", pa.string()),  # handbook | pdf | workshop | text
        ("uri", pa.string()),
        ("product", pa.string()),
        ("has_diffs", pa.bool_()),
        ("has_tree", pa.bool_()),
        ("document_count", pa.int64()),
        ("chunk_count", pa.int64()),
        ("embed_model", pa.string()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        # the scope every run of the source applies (thoth/source_spec.py); a git path is in `uri` (#ref:path)
        ("include", pa.list_(pa.string())),  # added: NULL (no scope) in older rows
        ("exclude", pa.list_(pa.string())),
    ]
)

DOCUMENTS_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),  # SHA-256 of the file's bytes
        ("source_id", pa.string()),  # the collection (a `sources` row)
        ("key", pa.string()),  # path inside the source, '/'-separated (the object name for gs://)
        ("uri", pa.string()),
        ("url", pa.string()),
        ("bucket", pa.string()),
        ("version", pa.string()),
        ("title", pa.string()),
        ("authors", pa.list_(pa.string())),
        ("year", pa.int32()),
        ("page_count", pa.int32()),
        ("byte_size", pa.int64()),
        ("status", pa.string()),  # ok | failed
        ("error", pa.string()),
        ("ingested_at", pa.timestamp("us", tz="UTC")),
        # SHA-1 of gs://{bucket}/{key}?version_id={version} (the research surface's `source_id`, docs/gcs.md)
        ("object_id", pa.string()),
        # cheap content identity known before download (sha256 locally, md5/crc32c from GCS): ingest
        # tasks split the work by it, so identical bytes under two keys land in the same task
        ("fingerprint", pa.string()),
        ("bibtex", pa.string()),
        ("bibtex_source", pa.string()),  # generated | sidecar ({key}.bib next to the file)
        ("sidecar", pa.string()),  # fingerprint of that .bib file ('' when there is none)
        ("parser", pa.string()),  # the parser version that read it (thoth.writes.parsers.parser_version)
        ("unmapped_glyphs", pa.int32()),  # glyphs without Unicode, kept as U+FFFD (added: NULL in older rows)
        # characters of hidden text left out, by reason (docs/security.md) (added: NULL in older rows)
        ("hidden_dropped", pa.map_(pa.string(), pa.int32())),
    ]
)

PARTITIONS_SCHEMA = pa.schema(
    [
        ("partition_id", pa.string()),
        ("doc_id", pa.string()),
        ("source_id", pa.string()),
        ("ordinal", pa.int32()),
        ("kind", pa.string()),  # page | section | a workshop section kind (see thoth/writes/parsers/workshop.py)
        ("heading_path", pa.string()),
        ("page_start", pa.int32()),
        ("page_end", pa.int32()),
        ("text", pa.string()),
        # Workshop sections: where they sit in the workshop, the file they show, whether they are a diff.
        ("exercise_number", pa.int32()),
        ("step_number", pa.int32()),
        ("path", pa.string()),
        ("is_diff", pa.bool_()),
        ("partition_hash", pa.string()),  # SHA-256 of (doc, ordinal, normalised text): the same in every collection
        ("ocr_confidence", pa.float64()),  # a page read by OCR: the recogniser's 0..1 (added: NULL in older rows)
    ]
)


def chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("chunk_id", pa.string()),
            ("doc_id", pa.string()),
            ("source_id", pa.string()),
            ("partition_id", pa.string()),
            ("chunk_index", pa.int32()),
            ("key", pa.string()),
            ("title", pa.string()),
            ("section", pa.string()),  # heading path, ' > '-joined
            ("text", pa.string()),
            ("search_text", pa.string()),  # what BM25 indexes: title, section and text
            ("vector", pa.list_(pa.float32(), dim)),
            ("page_start", pa.int32()),
            ("page_end", pa.int32()),
            ("content_type", pa.string()),  # text | code | table | diff
            ("language", pa.string()),
            ("exercise_number", pa.int32()),
            ("step_number", pa.int32()),
            ("tags", pa.list_(pa.string())),
            ("source_ref", pa.string()),
            ("chunk_hash", pa.string()),  # SHA-256 of (doc, position, normalised text); chunk_id is
            ("partition_hash", pa.string()),  # UUIDv5 of {collection}|{doc_id}|{chunk_hash}
            ("figure", pa.string()),  # a figure caption's picture (thoth.store.figures; added: NULL in older rows)
            ("figure_box", pa.list_(pa.float64())),  # its box on the page: left, bottom, right, top
            # PDFs: where the chunk's text is printed, (page, left, bottom, right, top) after each other
            ("boxes", pa.list_(pa.float32())),
        ]
    )


def tree_nodes_schema(dim: int) -> pa.Schema:
    """RAPTOR summary nodes (level >= 1); their leaves are the chunks (level 0), named by chunk_id."""
    return pa.schema(
        [
            ("node_id", pa.string()),  # hash of (source, level, children)
            ("source_id", pa.string()),
            ("tree_version", pa.string()),  # the build that wrote it; readers follow the source's pointer
            ("level", pa.int32()),
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("children", pa.list_(pa.string())),  # node ids one level down (chunk ids at level 1)
            ("parent", pa.string()),  # the node one level up this one belongs to most (None at the top)
            ("leaf_count", pa.int32()),  # distinct chunks below
            ("summariser", pa.string()),  # which summariser wrote `text`, e.g. extractive-v1
        ]
    )


SESSIONS_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("source_id", pa.string()),
        ("title", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("owner", pa.string()),  # the key of the verified caller who created it (thoth.mcp.roles)
    ]
)


INGEST_RUNS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source_id", pa.string()),
        ("trigger", pa.string()),  # job | event | document | reindex
        ("started_by", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("ended_at", pa.timestamp("us", tz="UTC")),
        ("added", pa.int64()),
        ("updated", pa.int64()),
        ("removed", pa.int64()),
        ("failed", pa.int64()),
        ("unchanged", pa.int64()),
        ("chunks_written", pa.int64()),
        ("tree", pa.string()),
        ("failures", pa.list_(pa.string())),  # "key: reason" per failed file
        ("error", pa.string()),
        ("interrupted", pa.bool_()),
        # runs started over MCP, recorded when they start (added: NULL in older rows)
        ("state", pa.string()),  # queued | running | done | failed | cancelled | interrupted
        ("uri", pa.string()),
        ("done_files", pa.int64()),
        ("total_files", pa.int64()),
        ("cancel", pa.bool_()),  # cancel_run asked it to stop
        ("heartbeat_at", pa.timestamp("us", tz="UTC")),
        ("execution", pa.string()),  # a local process id, or the Cloud Run execution
    ]
)


def is_primary_key(field: pa.Field) -> bool:
    return bool(field.metadata) and all(field.metadata.get(k) == v for k, v in PRIMARY_KEY_METADATA.items())


SETTINGS_SCHEMA = pa.schema(
    [pa.field("key", pa.string(), nullable=False, metadata=PRIMARY_KEY_METADATA), ("value", pa.string())]
)


OAUTH_STATE_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False, metadata=PRIMARY_KEY_METADATA),
        ("generation", pa.int64()),  # a refresh-token family's current generation; 0 for a used code
        ("revoked", pa.bool_()),
        ("expires_at", pa.float64()),  # epoch seconds: the row is pruned after this
    ]
)


def schema_for(table: str, dim: int) -> pa.Schema:
    return {
        SOURCES: SOURCES_SCHEMA,
        DOCUMENTS: DOCUMENTS_SCHEMA,
        PARTITIONS: PARTITIONS_SCHEMA,
        CHUNKS: chunks_schema(dim),
        SETTINGS: SETTINGS_SCHEMA,
        TREE_NODES: tree_nodes_schema(dim),
        SESSIONS: SESSIONS_SCHEMA,
        INGEST_RUNS: INGEST_RUNS_SCHEMA,
        OAUTH_STATE: OAUTH_STATE_SCHEMA,
    }[table]
