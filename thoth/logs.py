"""Logging: plain text locally, one JSON object per line on Cloud Run (K_SERVICE set).

Request-scoped fields (trace, correlation id) ride on a context variable that the
server sets per request; the JSON formatter adds them to every line.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys

from thoth.config import Settings

request_context: contextvars.ContextVar[dict] = contextvars.ContextVar("thoth_request", default={})  # noqa: B039


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"severity": record.levelname, "message": record.getMessage(), "logger": record.name}
        entry.update(request_context.get())
        for key in ("tool", "latency_ms"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)  # stdout stays clean for stdio MCP and CLI output
    if settings.log_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    for noisy in ("httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
