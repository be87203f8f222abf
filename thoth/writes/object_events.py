"""Cloud Storage object events -> ingest or delete that one object. Idempotent: a finalize of the stored
generation, or a delete of another generation than the stored one, writes nothing."""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime

from thoth.gcs import GcsUriError, split_gs_uri
from thoth.records import Document, Source
from thoth.source_spec import SourceSpec, slug
from thoth.store import Store
from thoth.writes.objects import is_sidecar, sidecar_keys
from thoth.writes.parsers import is_supported
from thoth.writes.pubsub_push import HANDLED, ObjectEvent
from thoth.writes.run_records import RunSummary, record_run, summarise
from thoth.writes.source_files import get_gcs_object
from thoth.writes.writer import Writer

log = logging.getLogger("thoth.events")


def collection_for(writer: Writer, bucket: str, key: str) -> tuple[str, str, str] | None:
    """(collection id, name, uri) an object belongs to: the collection ingested from the longest gs:// prefix
    holding it, else the bucket's own collection (one per bucket, as the batch job makes by default); None
    when that collection's scope (its include and exclude globs) leaves the object out."""
    store = writer.store
    best: Source | None = None
    if store.has(Source):
        for source in store.find(Source, fields=["name", "uri", "include", "exclude"]):
            try:
                source_bucket, prefix = split_gs_uri(source.uri)
            except GcsUriError:
                continue
            if source_bucket == bucket and (not prefix or key.startswith(prefix + "/")):
                if best is None or len(source.uri) > len(best.uri):
                    best = source
    if best is not None:
        return (best.source_id, best.name, best.uri) if SourceSpec.of(best).wants(key) else None
    return slug(bucket), bucket, f"gs://{bucket}"


def _documents_with_sidecar(writer: Writer, source_id: str, bib_key: str) -> list[str]:
    if not writer.store.has(Document):
        return []
    keys = [document.key for document in writer.store.find(Document, {"source_id": source_id}, fields=["key"])]
    return sorted(k for k in keys if bib_key in sidecar_keys(k))


def _ingest_key(writer: Writer, event: ObjectEvent, key: str, target: tuple[str, str, str]) -> RunSummary:
    source_id, name, uri = target
    settings = writer.settings
    obj = get_gcs_object(settings, event.bucket, key)
    if obj is None:  # deleted since: its delete event (or the next batch run) removes it
        log.info("event %s: gs://%s/%s no longer exists; nothing to ingest", event.message_id, event.bucket, key)
        return RunSummary(source_id)
    sidecars = {k: o for k in sidecar_keys(key) if (o := get_gcs_object(settings, event.bucket, k)) is not None}
    return writer.write_keys(source_id, [obj, *sidecars.values()], {key}, name=name, uri=uri)


def _delete_key(writer: Writer, event: ObjectEvent, target: tuple[str, str, str]) -> RunSummary:
    """Remove the object's rows, unless the stored one is another generation than the one deleted (the old
    generation of an overwritten object): then nothing changes."""
    source_id, name, uri = target
    match = {"source_id": source_id, "key": event.key}
    stored = writer.store.first(Document, match, fields=["version"]) if writer.store.has(Document) else None
    other = stored is not None and bool(event.generation and stored.version and stored.version != event.generation)
    return writer.write_keys(source_id, [], set() if other else {event.key}, name=name, uri=uri)


def apply_event(writer: Writer, event: ObjectEvent) -> list[RunSummary]:
    """Do what the event asks; an event that changes nothing (a redelivery) writes nothing."""
    if event.event_type not in HANDLED:
        return []
    target = collection_for(writer, event.bucket, event.key)
    if target is None:
        log.info("event %s: gs://%s/%s is outside its collection's scope", event.message_id, event.bucket, event.key)
        return []
    source_id, name, uri = target
    if is_sidecar(event.key):  # an edited (or removed) BibTeX file: rewrite its documents' rows
        keys = _documents_with_sidecar(writer, source_id, event.key)
        return _with_tree(writer, source_id, [_ingest_key(writer, event, key, target) for key in keys])
    if not is_supported(event.key):
        return []
    summary = _delete_key(writer, event, target) if event.is_delete else _ingest_key(writer, event, event.key, target)
    return _with_tree(writer, source_id, [summary])


def _with_tree(writer: Writer, source_id: str, summaries: list[RunSummary]) -> list[RunSummary]:
    """Update the collection's tree in place after a change (only that object's path in it changes);
    a tree that cannot be updated in place is marked stale, so no summary of deleted text is served."""
    if summaries and any(s.changed for s in summaries):
        summaries[-1].tree = writer.update_tree(source_id, policy="event")
    return summaries


def record_event(store: Store, event: ObjectEvent, summaries: list[RunSummary], at: datetime, error: str) -> None:
    """The event's run in the ingest history: one that changed something or failed (a redelivered
    event, which writes nothing, is not recorded either)."""
    if not error and not any(s.changed for s in summaries):
        return
    started_by = f"{event.describe()} (message {event.message_id})"
    run = summarise(summaries, trigger="event", started_by=started_by, started_at=at, error=error)
    if not run.source_id:  # failed before its collection was known: the bucket's own one
        run = dataclasses.replace(run, source_id=slug(event.bucket))
    record_run(store, run, existing=bool(error))
