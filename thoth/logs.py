"""Logging: plain text locally, one JSON object per line on Cloud Run (K_SERVICE set), with the request's
fields (trace, correlation id) that `thoth.mcp.context` sets per request (docs/deploy.md, "Logs").

What is never logged: tokens and Authorization headers, queries and document text.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from thoth.config import Settings

request_context: contextvars.ContextVar[dict] = contextvars.ContextVar("thoth_request", default={})  # noqa: B039

TRACE_KEY = "logging.googleapis.com/trace"
SPAN_KEY = "logging.googleapis.com/spanId"
SAMPLED_KEY = "logging.googleapis.com/trace_sampled"
_EXTRA_FIELDS = ("tool", "latency_ms", "http", "event")  # "http", not "httpRequest": Cloud Run logs requests itself


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "severity": record.levelname,
            "message": record.getMessage(),
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "logger": record.name,
        }
        entry.update(request_context.get())
        for key in _EXTRA_FIELDS:
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """The local format, with the correlation id when a request set one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        correlation = request_context.get().get("correlationId")
        return f"{line} [{correlation}]" if correlation else line


class CurrentStderr(logging.StreamHandler):
    """Writes to sys.stderr as it is when a line is written, not as it was when logging was set up:
    where sys.stderr is swapped (pytest captures each test's), a server thread that outlives the swap
    writes to the current stream, never to a closed one."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass  # StreamHandler.__init__ assigns it; the current sys.stderr is always used


def setup_logging(settings: Settings) -> None:
    handler = CurrentStderr()  # stderr: stdout stays clean for stdio MCP and CLI output
    handler.setFormatter(JsonFormatter() if settings.log_json else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    for noisy in ("httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # uvicorn's own lines go through our handler too
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
