"""List and read the files of a source: a local folder or gs://bucket/prefix, with BibTeX sidecars. A bucket's
objects carry their generation and a fingerprint from the listing (MD5, or CRC32C), so planning downloads nothing."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from thoth.config import Settings
from thoth.gcs import GcsUriError, split_gs_uri, storage_client
from thoth.writes.objects import SourceError, SourceObject, is_sidecar
from thoth.writes.parsers import WORKSHOP_FORMAT, is_supported, workshop


def _wanted(key: str) -> bool:
    return is_supported(key) or is_sidecar(key)


def _local(root: Path) -> Iterator[SourceObject]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue  # hidden folders (.git, .thoth) and files are never content
        key = rel.as_posix()
        if _wanted(key):
            yield SourceObject(key, path.as_uri(), path.stat().st_size, path.read_bytes)


def _workshop(root: Path) -> Iterator[SourceObject]:
    for unit in workshop.units(root):
        size = sum((root / path).stat().st_size for path in unit.files)
        read = partial(workshop.bundle, root, unit)
        yield SourceObject(unit.key, (root / unit.anchor).as_uri(), size, read, format=WORKSHOP_FORMAT)


# -- Cloud Storage ---------------------------------------------------------------------


def _blob_fingerprint(blob: Any) -> str | None:
    if blob.md5_hash:
        return f"md5:{blob.md5_hash}"
    return f"crc32c:{blob.crc32c}:{blob.size}" if blob.crc32c else None


def _download(client: Any, bucket: str, key: str, generation: int | None) -> bytes:
    from google.api_core import exceptions

    try:  # exactly the listed generation: a newer upload is the next run's (or event's) business
        return client.bucket(bucket).blob(key, generation=generation).download_as_bytes()
    except exceptions.NotFound:
        raise SourceError(f"gs://{bucket}/{key} (generation {generation}) is gone") from None
    except exceptions.GoogleAPIError as exc:
        raise SourceError(f"cannot read gs://{bucket}/{key}: {exc}") from None


def _gcs_object(client: Any, bucket: str, blob: Any) -> SourceObject:
    return SourceObject(
        key=blob.name,
        uri=f"gs://{bucket}/{blob.name}",
        size=int(blob.size or 0),
        read=partial(_download, client, bucket, blob.name, blob.generation),
        version=str(blob.generation),
        bucket=bucket,
        fingerprint=_blob_fingerprint(blob),
    )


def list_bucket(source: str, settings: Settings) -> list[SourceObject]:
    """Every parseable file and BibTeX sidecar under gs://bucket/prefix, sorted by key."""
    from google.api_core import exceptions

    try:
        bucket, prefix = split_gs_uri(source)
    except GcsUriError as exc:
        raise SourceError(str(exc)) from None
    client = storage_client(settings)
    try:
        blobs = list(client.list_blobs(bucket, prefix=f"{prefix}/" if prefix else None))
    except exceptions.NotFound:
        raise SourceError(f"bucket {bucket!r} does not exist") from None
    except exceptions.GoogleAPIError as exc:
        raise SourceError(f"cannot list {source}: {exc}") from None
    objects = [_gcs_object(client, bucket, b) for b in blobs if not b.name.endswith("/") and _wanted(b.name)]
    return sorted(objects, key=lambda o: o.key)


def get_gcs_object(settings: Settings, bucket: str, key: str) -> SourceObject | None:
    """The current generation of one object, or None when it does not exist (any more)."""
    from google.api_core import exceptions

    client = storage_client(settings)
    try:
        blob = client.bucket(bucket).get_blob(key)
    except exceptions.GoogleAPIError as exc:
        raise SourceError(f"cannot read gs://{bucket}/{key}: {exc}") from None
    return _gcs_object(client, bucket, blob) if blob is not None else None


def list_folder(source: str) -> list[SourceObject]:
    """Every parseable file and BibTeX sidecar in a folder, sorted by key; a workshop's units in reading order."""
    root = Path(source).expanduser()
    if not root.is_dir():
        raise SourceError(f"source folder {source!r} does not exist or is not a folder")
    root = root.resolve()
    if workshop.is_workshop(root):
        return list(_workshop(root))
    return list(_local(root))
