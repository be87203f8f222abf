"""Ingest one text document into a dataset (the `ingest_document` tool), through the same writer as the job.
Datasets synced from a folder are refused: the next folder run would remove anything added here."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from thoth import citation_urls
from thoth.errors import ClientError
from thoth.records import Source
from thoth.source_ref import SourceRef
from thoth.store import Store
from thoth.writes.objects import SourceObject
from thoth.writes.parsers import is_supported
from thoth.writes.run_records import RunSummary, record_run, summarise
from thoth.writes.writer import Writer

DATASET_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
TEXT_URI = "mcp://ingest_document"  # the `uri` of datasets created by this tool


def document_key(content: bytes, source: str | None) -> str:
    """The document's path inside the dataset: from `source` when given, else from its hash."""
    if not source or not source.strip():
        return f"documents/{hashlib.sha256(content).hexdigest()[:16]}.txt"
    key = re.sub(r"^[a-z][a-z0-9+.-]*://", "", source.strip(), flags=re.I)  # a URL: keep host and path
    key = "/".join(part for part in re.split(r"[/\\]+", key) if part not in ("", ".", ".."))
    key = re.sub(r"[^A-Za-z0-9._/ -]+", "_", key)[:200] or "document"
    return key if is_supported(key) else f"{key}.txt"


def ingest_text(
    writer: Writer,
    store: Store,
    dataset_id: str,
    content: str,
    source: str | None = None,
    tags: list[str] | None = None,
    *,
    started_by: str = "",
    record: bool = True,
) -> tuple[str, RunSummary]:
    """(the document's key, what the run did); a run that wrote something is recorded in the ingest history
    as started by `started_by` (the caller), unless `record` is off (a recorded run's own, thoth/writes/job.py)."""
    check_document(store, dataset_id, content)
    data = content.encode("utf-8")
    key = document_key(data, source)
    # a URL source is what citations show, so it must pass the citation URL rule; a bare path only names
    # the document, which is then cited by Thoth's own doc:// reference
    if source and citation_urls.is_url(source):
        uri = citation_urls.check(source.strip(), "source", writer.settings)
    else:
        uri = str(SourceRef(dataset_id, key))
    obj = SourceObject(key=key, uri=uri, size=len(data), read=lambda: data)
    started_at = datetime.now(UTC)
    summary = writer.add_document(dataset_id, obj, name=dataset_id, uri=TEXT_URI, tags=tags)
    if summary.changed and record:
        run = summarise([summary], trigger="document", started_by=started_by or "local", started_at=started_at)
        record_run(store, run)
    return key, summary


def check_document(store: Store, dataset_id: str, content: str) -> None:
    """Refuse a dataset id or text `ingest_document` cannot take, naming the argument."""
    if not DATASET_ID.match(dataset_id):
        raise ClientError(
            f"dataset_id must be 1-64 lowercase letters, digits and '-', starting with a letter or digit; "
            f"got {dataset_id!r}"
        )
    if not content.strip():
        raise ClientError("file_content is empty")
    existing = store.first(Source, {"source_id": dataset_id}) if store.has(Source) else None
    if existing is not None and existing.uri != TEXT_URI:
        raise ClientError(
            f"dataset {dataset_id!r} is synced from a folder or bucket by the ingest job; ingest_document "
            f"adds to datasets it created itself: choose a new dataset_id"
        )
