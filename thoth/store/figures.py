"""Figure pictures beside the index: PNG files named by their content's SHA-256, in `figures/` of the
database's folder or gs:// prefix (the same bucket as the tables). Written once (a name is its content),
read by the figure tools; a chunk of content type `figure` names its picture (`Chunk.figure`)."""

from __future__ import annotations

import re
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


def _check(name: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"not a figure picture's name: {name!r}")
