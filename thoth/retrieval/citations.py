"""resolve_citation: a source_ref (or bucket + key) -> a URL a person can open, at the page.

Modes: `signed`, a V4 signed URL for the cited generation of the gs:// object, signed with the
application default credentials (a service-account key named by GOOGLE_APPLICATION_CREDENTIALS; on
Cloud Run, with no private key, IAM signBlob as the service account); when that generation is gone the
citation says so and the URL opens the object as it is now. `gs`, the gs:// URI. `portal`,
THOTH_PORTAL_BASE_URL/{bucket}/{key} with version, page and highlight as parameters. `file`, the local
file's file:// URL. The signed and file modes carry the page and highlight as `#page=N&search=…`, which
PDF viewers honour.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from thoth.config import CITATION_MODES, Settings
from thoth.errors import ClientError, NotFound, check_choice
from thoth.records import Document
from thoth.retrieval.documents import document_at
from thoth.source_ref import SourceRef, parse_ref
from thoth.store import Store

GCS_ENDPOINT = "https://storage.googleapis.com"
SIGNED_URL_SECONDS = 900  # a signed citation URL's lifetime: long enough to open, short if it leaks
_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


@dataclass(frozen=True)
class Citation:
    """A citation resolved to a URL: the document record it names (its key, bucket, indexed version)
    and the version and pages cited."""

    document: Document
    mode: str
    source_ref: str
    version: str | None  # the cited generation (the indexed one when the citation names none)
    page_start: int | None
    page_end: int | None
    highlight: str | None
    url: str = ""
    highlight_applied: bool = False
    expires_at: datetime | None = None
    version_available: bool | None = None  # checked in the signed mode: False when the cited generation is gone
    note: str | None = None


# -- signing ------------------------------------------------------------------------------------


_loading = threading.Lock()  # functools.cache alone lets two first callers both load


@functools.cache
def _signer(gcp_project: str) -> tuple[Any, Any]:
    """(storage client, credentials), loaded once per process (under `_loading`)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import storage

    try:
        credentials, project = google.auth.default(scopes=_SCOPES)
    except DefaultCredentialsError:
        raise ClientError(
            "no credentials to sign URLs with: set GOOGLE_APPLICATION_CREDENTIALS to a service-account key or "
            "run as a service account (Cloud Run), or ask for mode 'gs' or 'portal'"
        ) from None
    return storage.Client(project=gcp_project or project, credentials=credentials), credentials


def signed_url(settings: Settings, bucket: str, key: str, generation: str | None = None) -> tuple[str, datetime]:
    """A V4 signed GET URL for gs://bucket/key (that generation of it, if given) and when it expires."""
    from google.auth.credentials import Signing
    from google.auth.transport.requests import Request

    with _loading:
        client, credentials = _signer(settings.gcp_project)
    lifetime = timedelta(seconds=SIGNED_URL_SECONDS)
    extra: dict[str, Any] = {}
    if not isinstance(credentials, Signing):
        # no private key here (Cloud Run, Compute): sign through IAM signBlob as the service account
        try:
            if not credentials.valid:
                credentials.refresh(Request())
        except Exception as exc:
            raise ClientError(f"cannot get an access token to sign URLs with: {exc}") from None
        email = getattr(credentials, "service_account_email", None)
        if not email:  # a person's credentials: impersonating a service account gives signing ones
            raise ClientError("the application default credentials name no service account to sign URLs as")
        extra = {"service_account_email": email, "access_token": credentials.token}
    blob = client.bucket(bucket).blob(key)
    url = blob.generate_signed_url(
        version="v4",
        expiration=lifetime,
        method="GET",
        credentials=credentials,
        api_access_endpoint=GCS_ENDPOINT,
        generation=int(generation) if generation else None,
        **extra,
    )
    return url, datetime.now(UTC) + lifetime


def current_generation(settings: Settings, bucket: str, key: str, generation: str | None) -> tuple[bool, str | None]:
    """(whether `generation` of gs://bucket/key can still be read; the generation a URL should open:
    that one, else the live one, else None when the object is gone).

    One metadata request with the server's own storage client (reading needs no signing rights).
    """
    from google.api_core import exceptions

    from thoth.gcs import storage_client

    blob_in = storage_client(settings).bucket(bucket)
    try:
        if generation and generation.isdigit() and blob_in.get_blob(key, generation=int(generation)) is not None:
            return True, generation
        live = blob_in.get_blob(key)
    except exceptions.GoogleAPICallError as exc:
        raise ClientError(f"cannot look up gs://{bucket}/{key}: {exc.message}") from None
    return False, str(live.generation) if live is not None else None


# -- resolving ----------------------------------------------------------------------------------


def _mode(settings: Settings, asked: str | None, in_bucket: bool) -> str:
    if asked:
        check_choice("mode", asked, CITATION_MODES)
        return asked
    if settings.portal_base_url:
        return "portal"
    return "signed" if in_bucket else "file"


def _pages(page: int | None, page_start: int | None, page_end: int | None, page_count: int | None) -> tuple:
    if page is not None and (page_start is not None or page_end is not None):
        raise ClientError("give page, or page_start/page_end, not both")
    start = page if page is not None else page_start
    end = page if page is not None else (page_end if page_end is not None else page_start)
    if start is None and end is not None:
        raise ClientError("page_end needs page_start")
    for name, value in (("page", page), ("page_start", page_start), ("page_end", page_end)):
        if value is not None and value < 1:
            raise ClientError(f"{name} must be 1 or more, got {value}")
    if start is not None and end is not None and end < start:
        raise ClientError(f"page_end ({end}) must not be before page_start ({start})")
    if page_count and end is not None and end > page_count:
        raise ClientError(f"the document has {page_count} pages; page {end} is out of range (1-{page_count})")
    return start, end


def _fragment(page: int | None, highlight: str | None) -> str:
    parts = ([f"page={page}"] if page else []) + ([f"search={quote(highlight)}"] if highlight else [])
    return "#" + "&".join(parts) if parts else ""


def resolve_citation(
    store: Store,
    settings: Settings,
    *,
    source_ref: str | None = None,
    bucket: str | None = None,
    key: str | None = None,
    version_id: str | None = None,
    page: int | None = None,
    page_start: int | None = None,
    page_end: int | None = None,
    highlight: str | None = None,
    mode: str | None = None,
) -> Citation:
    if source_ref:
        if bucket or key or version_id:
            raise ClientError("give source_ref, or bucket and key (with version_id), not both")
        ref = parse_ref(source_ref)
        if ref.page is not None and page is None and page_start is None:
            page = ref.page
    elif bucket and key:
        ref = SourceRef(bucket, key, version_id)
    else:
        raise ClientError("give source_ref (doc://bucket/key[?version_id=…][#page=N]), or bucket and key")
    try:
        document = document_at(store, ref.container, ref.key)
    except NotFound:
        raise NotFound(f"no ingested document at {ref.base}") from None
    start, end = _pages(page, page_start, page_end, document.page_count)
    in_bucket = bool(document.bucket)
    chosen = _mode(settings, mode, in_bucket)
    highlight = highlight.strip() if highlight and highlight.strip() else None
    version = ref.version or document.version
    citation = Citation(
        document=document,
        mode=chosen,
        source_ref=str(SourceRef(ref.container, ref.key, version, start)),
        version=version,
        page_start=start,
        page_end=end,
        highlight=highlight,
    )
    if chosen in ("signed", "gs") and not in_bucket:
        raise ClientError(f"mode {chosen!r} needs a gs:// document; {ref.base} is a local file (use 'file')")
    bucket, key = document.bucket or "", document.key
    if chosen == "signed":
        available, live = current_generation(settings, bucket, key, version)
        where = f"gs://{bucket}/{key}"
        if live is None:
            cited = f" (cited: generation {version})" if version else ""
            raise NotFound(f"{where} is no longer in the bucket{cited}")
        note = None
        if version and not available:
            note = (
                f"generation {version} of {where} is gone (replaced or deleted, and the bucket keeps no old "
                f"versions); the URL opens the current object (generation {live}), which may differ from the quote"
            )
        url, expires = signed_url(settings, bucket, key, generation=live)
        return dataclasses.replace(
            citation,
            url=url + _fragment(start, highlight),
            expires_at=expires,
            highlight_applied=bool(highlight),
            version_available=available if version else None,
            note=note,
        )
    if chosen == "gs":
        return dataclasses.replace(citation, url=f"gs://{bucket}/{key}")
    if chosen == "portal":
        if not settings.portal_base_url:
            raise ClientError("mode 'portal' needs THOTH_PORTAL_BASE_URL")
        params = {"version_id": version, "page": start, "page_end": end if end != start else None,
                  "highlight": highlight}  # fmt: skip
        query = urlencode({k: v for k, v in params.items() if v is not None})
        path = f"{quote(ref.container, safe='')}/{quote(key, safe='/')}"
        url = f"{settings.portal_base_url}/{path}" + (f"?{query}" if query else "") + _fragment(start, None)
        return dataclasses.replace(citation, url=url, highlight_applied=bool(highlight))
    # file
    if in_bucket:
        raise ClientError(f"mode 'file' is for local folders; {ref.base} is in a bucket (use 'signed')")
    if not document.uri:  # find_document hides a URL the citation rule refuses (citation_urls)
        raise ClientError(
            f"{ref.base} has no URL this server may show: file: URLs only on a local laptop index "
            "(a folder database with THOTH_AUTH=off); cite it by its source_ref"
        )
    url = document.uri + _fragment(start, highlight)
    return dataclasses.replace(citation, url=url, highlight_applied=bool(highlight))
