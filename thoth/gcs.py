"""Google Cloud Storage clients and gs:// URIs, built from Settings.

Production uses Application Default Credentials (the Cloud Run service account).
With STORAGE_EMULATOR_HOST set (tests, local runs against fake-gcs-server) the
client talks to the emulator anonymously.
"""

from __future__ import annotations

import threading
from typing import Any

from thoth.config import Settings
from thoth.errors import ServerFault, ThothError

_lock = threading.Lock()
_clients: dict[tuple[str, str], Any] = {}


class GcsUriError(ThothError, ValueError):
    """A gs:// URI that names no bucket."""


class StorageUnavailable(ServerFault):
    """No client can be made for Cloud Storage (no credentials); the message says what to do."""


NO_CREDENTIALS = (
    "no Google credentials to reach Cloud Storage: run `gcloud auth application-default login` "
    "(or set GOOGLE_APPLICATION_CREDENTIALS to a key file), or set STORAGE_EMULATOR_HOST for the emulator"
)


def split_gs_uri(uri: str) -> tuple[str, str]:
    """gs://bucket/some/prefix -> ("bucket", "some/prefix")."""
    if not uri.startswith("gs://"):
        raise GcsUriError(f"not a gs:// URI: {uri!r}")
    bucket, _, prefix = uri[len("gs://") :].partition("/")
    if not bucket:
        raise GcsUriError(f"gs:// URI without a bucket: {uri!r}; use gs://BUCKET[/PREFIX]")
    return bucket, prefix.strip("/")


def storage_client(settings: Settings) -> Any:
    """A google-cloud-storage client (one per process and endpoint); StorageUnavailable without credentials."""
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
                from google.auth.exceptions import DefaultCredentialsError

                try:
                    _clients[key] = storage.Client(project=settings.gcp_project or None)
                except DefaultCredentialsError:
                    raise StorageUnavailable(NO_CREDENTIALS) from None
        return _clients[key]


def bucket_problem(settings: Settings, uri: str) -> str | None:
    """Why the bucket of a gs:// URI cannot be used, in one sentence with what to do; None if it answers.

    Asked only after a storage call failed (Lance's own errors name no bucket): one listing request.
    """
    from google.api_core import exceptions
    from google.auth.exceptions import DefaultCredentialsError

    bucket, prefix = split_gs_uri(uri)
    try:
        blobs = storage_client(settings).bucket(bucket).list_blobs(prefix=prefix, max_results=1, timeout=10, retry=None)
        next(iter(blobs), None)
    except exceptions.NotFound:
        return (
            f"bucket gs://{bucket} does not exist (database {uri}): create it (terraform apply, or "
            f"`gcloud storage buckets create gs://{bucket}`) or point THOTH_DB_URI (--db) at an existing bucket"
        )
    except exceptions.Forbidden:
        return (
            f"no permission to list gs://{bucket} (database {uri}): grant this identity roles/storage.objectViewer "
            f"on the bucket (roles/storage.objectAdmin for the ingest job)"
        )
    except (DefaultCredentialsError, StorageUnavailable):
        return (
            f"no Google credentials to reach gs://{bucket} (database {uri}): run "
            f"`gcloud auth application-default login`, or set STORAGE_EMULATOR_HOST for the emulator"
        )
    except Exception as exc:  # connection refused, DNS, timeouts: the endpoint is not there
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"cannot reach the storage endpoint for gs://{bucket} (database {uri}): {first}"
    return None
