"""What the ingest job does for the server: the `JobHooks` that thoth/writes/jobs.py loads by name.

The server never imports this package; it loads this module (THOTH_INGEST_HOOKS, default
`ingest.hooks`) when a bucket event or a reindex request arrives.
"""

from __future__ import annotations

from ingest.events import apply_event
from ingest.pipeline import Ingestor, reingest
from thoth.config import Settings
from thoth.embed import Embedder
from thoth.store import Store
from thoth.writes.events import ObjectEvent
from thoth.writes.jobs import JobHooks
from thoth.writes.writer import RunSummary


def _apply_event(settings: Settings, store: Store, embedder: Embedder, event: ObjectEvent) -> list[RunSummary]:
    return apply_event(Ingestor(settings, store=store, embedder=embedder), event)


def _reingest(settings: Settings, store: Store, embedder: Embedder, kind: str) -> list[dict]:
    return reingest(Ingestor(settings, store=store, embedder=embedder), kind)


HOOKS = JobHooks(apply_event=_apply_event, reingest=_reingest)
