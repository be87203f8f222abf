"""Topics of a source: chunk and file counts per top-level folder, streamed from the chunk table.

A topic is the first folder below the source's root: for a local folder that is the key's first
part; for `gs://bucket/prefix` the keys are whole object names, so the prefix is taken off first
(`gs://library/handbook` with key `handbook/engineering/deploy.md` -> topic `engineering`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from thoth.gcs import split_gs_uri
from thoth.records import Chunk, Source
from thoth.source_spec import SourceSpec
from thoth.store import Store

TOP_LEVEL = "(top level)"


@dataclass(frozen=True)
class Topic:
    topic: str
    chunk_count: int
    file_count: int


@dataclass(frozen=True)
class Topics:
    """Every topic, largest first, and the totals over them."""

    chunk_count: int
    file_count: int
    topics: tuple[Topic, ...]


def topic_of(key: str, prefix: str = "") -> str:
    """The first folder of a file's key below `prefix` ('(top level)' for files directly in it)."""
    if prefix and key.startswith(f"{prefix}/"):
        key = key[len(prefix) + 1 :]
    return key.split("/", 1)[0] if "/" in key else TOP_LEVEL


def source_prefixes(store: Store) -> dict[str, str]:
    """source_id -> the object-name prefix its keys start with ('' for folders and whole buckets)."""
    sources = store.find(Source, fields=["uri"])
    return {s.source_id: split_gs_uri(s.uri)[1] for s in sources if SourceSpec.of(s).kind == "bucket"}


def list_topics(store: Store) -> Topics:
    prefixes = source_prefixes(store)
    chunks_per_topic: Counter[str] = Counter()
    files_per_topic: defaultdict[str, set[str]] = defaultdict(set)
    total = 0
    for batch in store.scan_of(Chunk, ["key", "source_id"]):
        for key, source_id in zip(batch.column("key").to_pylist(), batch.column("source_id").to_pylist(), strict=True):
            topic = topic_of(key, prefixes.get(source_id, ""))
            chunks_per_topic[topic] += 1
            files_per_topic[topic].add(key)
            total += 1
    topics = tuple(
        Topic(topic, count, len(files_per_topic[topic]))
        for topic, count in sorted(chunks_per_topic.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return Topics(total, sum(len(files) for files in files_per_topic.values()), topics)
