"""Google Cloud Storage clients and gs:// URIs, built from Settings.

Production uses Application Default Credentials (the Cloud Run service account).
With STORAGE_EMULATOR_HOST set (tests, local runs against fake-gcs-server) the
client talks to the emulator anonymously.
"""

from __future__ import annotations

import threading
from typing import Any

from thoth.config import Settings

_lock = threading.Lock()
_clients: dict[tuple[str, str], Any] = {}


class GcsUriError(ValueError):
    """A gs:// URI that names no bucket."""


def split_gs_uri(uri: str) -> tuple[str, str]:
    """gs://bucket/some/prefix -> ("bucket", "some/prefix")."""
    if not uri.startswith("gs://"):
        raise GcsUriError(f"not a gs:// URI: {uri!r}")
    bucket, _, prefix = uri[len("gs://") :].partition("/")
    if not bucket:
        raise GcsUriError(f"gs:// URI without a bucket: {uri!r}; use gs://BUCKET[/PREFIX]")
    return bucket, prefix.strip("/")


def storage_client(settings: Settings) -> Any:
    """A google-cloud-storage client (one per process and endpoint)."""
    from google.cloud import storage  # imported here: the local-only path never needs it

    key = (settings.storage_emulator_host, settings.gcp_project)
    with _lock:
        if key not in _clients:
            if settings.uses_emulator:
                from google.auth.credentials import AnonymousCredentials

                _clients[key] = storage.Client(
                    project=settings.gcp_project or "thoth-emulator",
                    credentials=AnonymousCredentials(),
                    client_options={"api_endpoint": settings.storage_emulator_host},
                )
            else:
                _clients[key] = storage.Client(project=settings.gcp_project or None)
        return _clients[key]
