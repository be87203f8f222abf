"""Figure pictures beside the index: PNG files named by their content's SHA-256, in `figures/` of the
database's folder or gs:// prefix (the same bucket as the tables). Written once (a name is its content),
read by the figure tools; a chunk of content type `figure` names its picture (`Chunk.figure`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from thoth.config import Settings
from thoth.errors import NotFound
from thoth.gcs import split_gs_uri, storage_client

FOLDER = "figures"
_NAME = re.compile(r"^[0-9a-f]{64}\.png$")


class Figures:
    """The pictures of one database (a folder or a gs:// prefix)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.root = settings.db_uri.rstrip("/")

    def _gs(self, name: str):
        bucket, prefix = split_gs_uri(f"{self.root}/{FOLDER}")
        return storage_client(self.settings).bucket(bucket).blob(f"{prefix}/{name}")

    def put(self, name: str, data: bytes) -> None:
        """Write a picture unless it is there (its name is its content: never rewritten)."""
        _check(name)
        if self.root.startswith("gs://"):
            blob = self._gs(name)
            if not blob.exists():
                blob.upload_from_string(data, content_type="image/png")
            return
        path = Path(self.root) / FOLDER / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".part")
            partial.write_bytes(data)
            partial.replace(path)  # whole or absent, never half a file

    def get(self, name: str) -> bytes:
        _check(name)
        if self.root.startswith("gs://"):
            from google.api_core import exceptions

            try:
                return self._gs(name).download_as_bytes()
            except exceptions.NotFound:
                raise NotFound(f"figure picture {name} is not in the index's {FOLDER}/ (ingest it again)") from None
        path = Path(self.root) / FOLDER / name
        if not path.exists():
            raise NotFound(f"figure picture {name} is not in the index's {FOLDER}/ (ingest it again)")
        return path.read_bytes()

    def listed(self) -> Iterator[tuple[str, datetime]]:
        """Every picture's name and when it was written."""
        if self.root.startswith("gs://"):
            bucket, prefix = split_gs_uri(f"{self.root}/{FOLDER}")
            for blob in storage_client(self.settings).list_blobs(bucket, prefix=f"{prefix}/"):
                name = blob.name.rsplit("/", 1)[-1]
                if _NAME.match(name):
                    yield name, blob.updated
            return
        folder = Path(self.root) / FOLDER
        for path in folder.glob("*.png") if folder.is_dir() else ():
            if _NAME.match(path.name):
                yield path.name, datetime.fromtimestamp(path.stat().st_mtime, UTC)

    def remove(self, name: str) -> None:
        _check(name)
        if self.root.startswith("gs://"):
            from google.api_core import exceptions

            try:
                self._gs(name).delete()
            except exceptions.NotFound:
                pass
            return
        (Path(self.root) / FOLDER / name).unlink(missing_ok=True)


def _check(name: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"not a figure picture's name: {name!r}")
