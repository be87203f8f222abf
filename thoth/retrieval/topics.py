"""Topics of a source: chunk and file counts per top-level folder, streamed from the chunk table."""

from __future__ import annotations

from collections import Counter, defaultdict

from thoth.store import Store
from thoth.store.schema import CHUNKS


def topic_of(key: str) -> str:
    """The top-level folder of a file's key ('(top level)' for files at the root)."""
    return key.split("/", 1)[0] if "/" in key else "(top level)"


def list_topics(store: Store, where: str | None = None) -> dict:
    chunks_per_topic: Counter[str] = Counter()
    files_per_topic: defaultdict[str, set[str]] = defaultdict(set)
    total = 0
    for batch in store.scan(CHUNKS, ["key"], where):
        for key in batch.column("key").to_pylist():
            topic = topic_of(key)
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
