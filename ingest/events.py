"""Cloud Storage object events (Pub/Sub push) -> ingest or delete that one object.

A push request's body is `{"message": {"attributes": {...}, "data": base64(object JSON),
"messageId": ...}, "subscription": ...}`. The attributes name the event
(`eventType`), `bucketId`, `objectId` and `objectGeneration`.

Every event is idempotent: a finalize for an object whose generation is already
stored writes nothing, a delete for a generation that is not the stored one (the
old generation of an overwritten object, a redelivery after the delete) writes
nothing. Work that fails is logged; the next batch run finds the object again.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from dataclasses import dataclass

from ingest.parsers import is_supported
from ingest.pipeline import Ingestor, RunSummary, collection_name, slug
from ingest.sources import get_gcs_object, is_sidecar, sidecar_keys
from thoth.gcs import GcsUriError, split_gs_uri
from thoth.records import Document, Source
from thoth.store.schema import DOCUMENTS, SOURCES

log = logging.getLogger("thoth.events")

FINALIZE = "OBJECT_FINALIZE"
DELETE = "OBJECT_DELETE"
ARCHIVE = "OBJECT_ARCHIVE"  # versioned buckets: the live generation became noncurrent (deleted or replaced)
HANDLED = (FINALIZE, DELETE, ARCHIVE)


class EventError(ValueError):
    """The request is not a Cloud Storage Pub/Sub push message; the message says what is wrong."""


@dataclass(frozen=True)
class ObjectEvent:
    event_type: str
    bucket: str
    key: str
    generation: str | None
    message_id: str

    @property
    def is_delete(self) -> bool:
        return self.event_type in (DELETE, ARCHIVE)

    def describe(self) -> str:
        return f"{self.event_type} gs://{self.bucket}/{self.key}#{self.generation or '?'}"


def parse_push(body: object) -> ObjectEvent:
    """The object event in a Pub/Sub push body, or EventError."""
    if not isinstance(body, dict) or not isinstance(body.get("message"), dict):
        raise EventError('expected a Pub/Sub push body: {"message": {"attributes": {...}, "data": ...}}')
    message = body["message"]
    attributes = message.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise EventError("message.attributes must be an object")
    data: dict = {}
    if message.get("data"):
        try:
            data = json.loads(base64.b64decode(message["data"], validate=True))
        except (binascii.Error, ValueError, TypeError):
            raise EventError("message.data must be base64-encoded JSON (the object's metadata)") from None
        if not isinstance(data, dict):
            raise EventError("message.data must hold a JSON object")
    event_type = attributes.get("eventType")
    bucket = attributes.get("bucketId") or data.get("bucket")
    key = attributes.get("objectId") or data.get("name")
    generation = attributes.get("objectGeneration") or data.get("generation")
    if not event_type or not bucket or not key:
        raise EventError("message.attributes must name eventType, bucketId and objectId (Cloud Storage notification)")
    return ObjectEvent(
        str(event_type),
        str(bucket),
        str(key),
        str(generation) if generation else None,
        str(message.get("messageId", "")),
    )


def collection_for(ingestor: Ingestor, bucket: str, key: str) -> tuple[str, str, str]:
    """(collection id, name, uri) an object belongs to: the collection ingested from the longest gs:// prefix
    holding it, else the bucket's own collection (one per bucket, as the batch job makes by default)."""
    store = ingestor.store
    best: Source | None = None
    if SOURCES in store.table_names():
        for source in store.find(Source, fields=["name", "uri"]):
            try:
                source_bucket, prefix = split_gs_uri(source.uri)
            except GcsUriError:
                continue
            if source_bucket == bucket and (not prefix or key.startswith(prefix + "/")):
                if best is None or len(source.uri) > len(best.uri):
                    best = source
    if best is not None:
        return best.source_id, best.name, best.uri
    name = collection_name(f"gs://{bucket}")
    return slug(name), name, f"gs://{bucket}"


def _documents_with_sidecar(ingestor: Ingestor, source_id: str, bib_key: str) -> list[str]:
    if DOCUMENTS not in ingestor.store.table_names():
        return []
    keys = [document.key for document in ingestor.store.find(Document, {"source_id": source_id}, fields=["key"])]
    return sorted(k for k in keys if bib_key in sidecar_keys(k))


def _ingest_key(ingestor: Ingestor, event: ObjectEvent, key: str, target: tuple[str, str, str]) -> RunSummary:
    source_id, name, uri = target
    settings = ingestor.settings
    obj = get_gcs_object(settings, event.bucket, key)
    if obj is None:  # deleted since: its delete event (or the next batch run) removes it
        log.info("event %s: gs://%s/%s no longer exists; nothing to ingest", event.message_id, event.bucket, key)
        return RunSummary(source_id)
    sidecars = {k: o for k in sidecar_keys(key) if (o := get_gcs_object(settings, event.bucket, k)) is not None}
    return ingestor.ingest_object(source_id, obj, sidecars, name=name, uri=uri)


def apply_event(ingestor: Ingestor, event: ObjectEvent) -> list[RunSummary]:
    """Do what the event asks; an event that changes nothing (a redelivery) writes nothing."""
    if event.event_type not in HANDLED:
        return []
    target = collection_for(ingestor, event.bucket, event.key)
    source_id, name, uri = target
    if is_sidecar(event.key):  # an edited (or removed) BibTeX file: rewrite its documents' rows
        keys = _documents_with_sidecar(ingestor, source_id, event.key)
        return _with_tree(ingestor, source_id, [_ingest_key(ingestor, event, key, target) for key in keys])
    if not is_supported(event.key):
        return []
    if event.is_delete:
        summaries = [ingestor.delete_object(source_id, event.key, event.generation, name=name, uri=uri)]
    else:
        summaries = [_ingest_key(ingestor, event, event.key, target)]
    return _with_tree(ingestor, source_id, summaries)


def _with_tree(ingestor: Ingestor, source_id: str, summaries: list[RunSummary]) -> list[RunSummary]:
    """Update the collection's tree in place after a change (only that object's path in it changes);
    a tree that cannot be updated in place is marked stale, so no summary of deleted text is served."""
    if summaries and any(s.changed for s in summaries):
        summaries[-1].tree = ingestor.update_tree(source_id, policy="event")
    return summaries
