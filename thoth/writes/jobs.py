"""The ingest job's work the server hands over (a bucket event, a reindex), without importing the job.

The server's routes (`/internal/gcs-events` in thoth/mcp/internal.py, the workshop reindex route) need
the job's parsers and source listings. So the dependency runs the other way: the job describes its
entry points as `JobHooks` (ingest/hooks.py), and the server loads the module THOTH_INGEST_HOOKS
names (default `ingest.hooks`, the job in this image) the first time a route needs it. A server
without the job answers those routes with `JobUnavailable`'s reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from thoth.errors import ServerFault

if TYPE_CHECKING:  # only names in signatures: importing this module stays cheap for the server's routes
    from thoth.config import Settings
    from thoth.embed import Embedder
    from thoth.store import Store
    from thoth.writes.events import ObjectEvent
    from thoth.writes.writer import RunSummary


class JobUnavailable(ServerFault):
    """The ingest job's hooks cannot be loaded in this process; the message says which module and why."""


@dataclass(frozen=True)
class JobHooks:
    # Do what one bucket event asks (ingest or remove that object); a redelivered event writes nothing.
    apply_event: Callable[[Settings, Store, Embedder, ObjectEvent], list[RunSummary]]
    # Ingest again every source of a kind ("workshop") from where it was ingested: a summary (or error) each.
    reingest: Callable[[Settings, Store, Embedder, str], list[dict]]


def load_hooks(settings: Settings) -> JobHooks:
    """The `HOOKS` of the module THOTH_INGEST_HOOKS names, imported once per process."""
    return _load(settings.ingest_hooks)


@cache
def _load(module_name: str) -> JobHooks:
    if not module_name:
        raise JobUnavailable("THOTH_INGEST_HOOKS is empty: this server has no ingest job to hand the work to")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        message = f"the ingest job's hooks ({module_name}, THOTH_INGEST_HOOKS) cannot be loaded: {exc}"
        raise JobUnavailable(message) from exc
    hooks = getattr(module, "HOOKS", None)
    if not isinstance(hooks, JobHooks):
        raise JobUnavailable(f"{module_name} (THOTH_INGEST_HOOKS) has no HOOKS = JobHooks(...)")
    return hooks
