"""One file to ingest, as a source lists it: its key, where it lives, how to read it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from thoth.errors import ServerFault

SIDECAR_SUFFIX = ".bib"


class SourceError(ServerFault):
    """The source cannot be listed or an object cannot be read (missing folder or bucket, no access)."""


@dataclass(frozen=True)
class SourceObject:
    key: str  # path inside the source, '/'-separated; for a bucket, the whole object name
    uri: str  # where it lives, e.g. file:///abs/path or gs://bucket/key
    size: int
    read: Callable[[], bytes]
    version: str | None = None  # the object generation in a bucket; None for local files
    bucket: str | None = None
    fingerprint: str | None = None  # content identity from the listing (None: hash the bytes)
    format: str = ""  # names the parser when the key's suffix does not (workshop units)


def in_shard(value: str, index: int, count: int) -> bool:
    """Whether `value` (a content fingerprint, or a key) is the share of parallel task `index` of `count`."""
    return count <= 1 or int(hashlib.sha256(value.encode()).hexdigest()[:12], 16) % count == index


def is_sidecar(key: str) -> bool:
    return key.lower().endswith(SIDECAR_SUFFIX)


def sidecar_keys(key: str) -> list[str]:
    """Where a document's BibTeX sidecar may be: `paper.pdf.bib`, then `paper.bib`."""
    path = PurePosixPath(key)
    return [f"{key}{SIDECAR_SUFFIX}", str(path.with_suffix(SIDECAR_SUFFIX))]
