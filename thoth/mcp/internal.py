"""The `/internal/*` routes (docs/gcs.md, docs/workshops.md "Reindex"), each served when its toolset is and
each behind `admin_refusal`. A GCS event is answered at once and applied after the response, one at a time."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from datetime import UTC, datetime

import anyio.to_thread
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from thoth.app import Thoth
from thoth.embed import EmbedderUnavailable
from thoth.errors import ClientError
from thoth.mcp.auth import admin_refusal
from thoth.store import StoreError
from thoth.writes.pubsub_push import HANDLED, ObjectEvent, parse_push

log = logging.getLogger("thoth.internal")

EVENTS_PATH = "/internal/gcs-events"
REINDEX_PATH = "/internal/workshop-index/reindex"


def internal_routes(app: Thoth) -> list[BaseRoute]:
    """The /internal routes of the toolsets this server serves."""
    routes: list[BaseRoute] = []
    if "research" in app.settings.toolsets:
        routes += event_routes(app)
    if "workshop" in app.settings.toolsets:
        routes += reindex_routes(app)
    return routes


class EventWorker:
    """Applies object events one at a time (writes from one instance never race each other)."""

    def __init__(self, app: Thoth):
        self.app = app
        self._stats = threading.Lock()
        self.counts = {"accepted": 0, "processed": 0, "failed": 0, "ignored": 0}
        self.recent: deque[dict] = deque(maxlen=50)

    def process(self, event: ObjectEvent) -> None:
        started = time.perf_counter()
        entry = {"message_id": event.message_id, "event": event.describe()}
        with self.app.writes.hold(wait=True):  # events wait their turn behind other writes
            # the writer's modules load with the first event
            from thoth.writes.object_events import apply_event, record_event

            summaries = []
            at = datetime.now(UTC)
            try:
                from thoth.writes.writer import Writer

                writer = Writer(self.app.settings, store=self.app.index, embedder=self.app.embedder())
                summaries = apply_event(writer, event)
                entry["result"] = "; ".join(s.render() for s in summaries) or "nothing to do"
                outcome = "processed"
                log.info("event %s %s: %s", event.message_id, event.describe(), entry["result"])
            except Exception as exc:  # logged, counted; the next batch run retries the object
                entry["error"] = f"{type(exc).__name__}: {exc}"
                outcome = "failed"
                log.exception("event %s %s failed", event.message_id, event.describe())
            record_event(self.app.index, event, summaries, at, entry.get("error", ""))
        entry["seconds"] = round(time.perf_counter() - started, 3)
        self.count(outcome, entry)

    def count(self, outcome: str, entry: dict | None = None) -> None:
        with self._stats:
            self.counts[outcome] += 1
            if entry is not None:
                self.recent.append(entry)

    def status(self) -> dict:
        with self._stats:
            done = self.counts["processed"] + self.counts["failed"]
            return {**self.counts, "pending": self.counts["accepted"] - done, "recent": list(self.recent)}


def event_routes(app: Thoth) -> list[BaseRoute]:
    worker = EventWorker(app)

    async def receive(request: Request) -> JSONResponse:
        if (refusal := admin_refusal(request, app.settings)) is not None:
            return refusal
        try:
            body = json.loads(await request.body())
            event = parse_push(body)
        except ValueError as exc:  # a ClientError from parse_push, or a body that is not JSON
            message = str(exc) if isinstance(exc, ClientError) else "the body is not JSON"
            return JSONResponse({"error": f"bad push message: {message}"}, status_code=400)
        if event.event_type not in HANDLED:
            worker.count("ignored")
            return JSONResponse({"status": "ignored", "reason": f"{event.event_type} events change nothing"})
        worker.count("accepted")
        return JSONResponse(
            {"status": "accepted", "event": event.describe(), "message_id": event.message_id},
            status_code=202,
            background=BackgroundTask(worker.process, event),
        )

    async def status(request: Request) -> JSONResponse:
        if (refusal := admin_refusal(request, app.settings)) is not None:
            return refusal
        return JSONResponse(worker.status())

    return [Route(EVENTS_PATH, receive, methods=["POST"]), Route(EVENTS_PATH, status, methods=["GET"])]


def reindex_routes(app: Thoth) -> list[BaseRoute]:
    busy = threading.Lock()

    def reindex_all() -> dict:
        started = time.perf_counter()
        from thoth.writes.runs import reingest  # the writer loads with the first reindex
        from thoth.writes.writer import Writer

        with app.writes.hold(wait=True):
            writer = Writer(app.settings, store=app.index, embedder=app.embedder())
            workshops = reingest(writer, "workshop", f"POST {REINDEX_PATH}")
        return {"status": "ok", "workshops": workshops, "seconds": round(time.perf_counter() - started, 3)}

    async def reindex(request: Request) -> JSONResponse:
        if (refusal := admin_refusal(request, app.settings)) is not None:
            return refusal
        if not busy.acquire(blocking=False):
            return JSONResponse({"error": "a reindex is already running; try again when it has finished"}, 409)
        try:
            body = await anyio.to_thread.run_sync(reindex_all)
        except (StoreError, EmbedderUnavailable) as exc:
            log.error("workshop reindex failed: %s", exc)
            return JSONResponse({"status": "failed", "error": str(exc)}, status_code=503)
        finally:
            busy.release()
        log.info("workshop reindex: %s", body)
        return JSONResponse(body)

    return [Route(REINDEX_PATH, reindex, methods=["POST"])]
