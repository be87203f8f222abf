"""Topics of a source: chunk and file counts per top-level folder, streamed from the chunk table.

A topic is the first folder below the source's root: for a local folder that is the key's first
part; for `gs://bucket/prefix` the keys are whole object names, so the prefix is taken off first
(`gs://library/handbook` with key `handbook/engineering/deploy.md` -> topic `engineering`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from thoth.gcs import split_gs_uri
from thoth.store import IndexMissing, Store
from thoth.store.schema import CHUNKS

TOP_LEVEL = "(top level)"


def topic_of(key: str, prefix: str = "") -> str:
    """The first folder of a file's key below `prefix` ('(top level)' for files directly in it)."""
    if prefix and key.startswith(f"{prefix}/"):
        key = key[len(prefix) + 1 :]
    return key.split("/", 1)[0] if "/" in key else TOP_LEVEL


def source_prefixes(store: Store) -> dict[str, str]:
    """source_id -> the object-name prefix its keys start with ('' for folders and whole buckets)."""
    try:
        sources = store.list_sources()
    except IndexMissing:  # an index from before the sources table: keys are relative
        return {}
    return {
        row["source_id"]: split_gs_uri(row["uri"])[1]
        for row in sources
        if (row.get("uri") or "").startswith("gs://") and len(row["uri"]) > len("gs://")
    }


def list_topics(store: Store, where: str | None = None) -> dict:
    prefixes = source_prefixes(store)
    chunks_per_topic: Counter[str] = Counter()
    files_per_topic: defaultdict[str, set[str]] = defaultdict(set)
    total = 0
    for batch in store.scan(CHUNKS, ["key", "source_id"], where):
        for key, source_id in zip(batch.column("key").to_pylist(), batch.column("source_id").to_pylist(), strict=True):
            topic = topic_of(key, prefixes.get(source_id, ""))
            chunks_per_topic[topic] += 1
            files_per_topic[topic].add(key)
            total += 1
    topics = [
        {"topic": topic, "chunks": count, "files": len(files_per_topic[topic])}
        for topic, count in sorted(chunks_per_topic.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return {
        "total_chunks": total,
        "unique_files": sum(len(files) for files in files_per_topic.values()),
        "topics": topics,
    }
