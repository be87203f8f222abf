"""List and read the files of a source: a local folder (gs://bucket/prefix comes with the GCS work)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ingest.parsers import is_supported, workshop


class SourceError(RuntimeError):
    """The source cannot be listed (missing folder, no access)."""


@dataclass(frozen=True)
class SourceObject:
    key: str  # path inside the source, '/'-separated
    uri: str  # where it lives, e.g. file:///abs/path
    size: int
    read: Callable[[], bytes]
    version: str | None = None
    format: str = ""  # names the parser when the key's suffix does not (workshop units)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _local(root: Path) -> Iterator[SourceObject]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue  # hidden folders (.git, .thoth) and files are never content
        key = rel.as_posix()
        if is_supported(key):
            yield SourceObject(key, path.as_uri(), path.stat().st_size, path.read_bytes)


def _workshop(root: Path) -> Iterator[SourceObject]:
    for unit in workshop.units(root):
        size = sum((root / path).stat().st_size for path in unit.files)
        read = partial(workshop.bundle, root, unit)
        yield SourceObject(unit.key, (root / unit.anchor).as_uri(), size, read, format=workshop.FORMAT)


def list_objects(source: str) -> list[SourceObject]:
    """Every supported file under `source`, sorted by key; a workshop's units in reading order."""
    if source.startswith("gs://"):
        raise SourceError("gs:// sources are not supported yet; ingest a local folder")
    root = Path(source).expanduser()
    if not root.is_dir():
        raise SourceError(f"source folder {source!r} does not exist or is not a folder")
    root = root.resolve()
    if workshop.is_workshop(root):
        return list(_workshop(root))
    return list(_local(root))
