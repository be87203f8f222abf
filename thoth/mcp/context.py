"""Per-request log context: the trace from Cloud Run's headers (or W3C `traceparent`), a correlation id echoed
in the response, and one access line (method, path, status, latency: never headers, query strings or bodies)."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoth.config import Settings
from thoth.logs import SAMPLED_KEY, SPAN_KEY, TRACE_KEY, request_context
from thoth.mcp.correlation import CORRELATION_FIELD, CORRELATION_HEADER, valid_correlation_id
from thoth.mcp.hosts import PROBE_PATHS

log = logging.getLogger("thoth.http")

_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/(\d+))?(?:;o=([01]))?")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def header(scope: Scope, name: bytes) -> str:
    """The request's first `name` header (lower-case bytes, as ASGI gives them), decoded and stripped; "" if none."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1").strip()
    return ""


def trace_fields(scope: Scope, project: str) -> dict[str, object]:
    """Cloud Logging's trace fields for this request ({} when it carries no trace header)."""
    trace = span = ""
    sampled = None
    match = _CLOUD_TRACE.match(header(scope, b"x-cloud-trace-context"))
    if match:
        trace, span = match.group(1).lower(), match.group(2) or ""
        sampled = match.group(3) == "1" if match.group(3) else None
    else:
        match = _TRACEPARENT.match(header(scope, b"traceparent").lower())
        if match:
            trace, span = match.group(1), str(int(match.group(2), 16))
            sampled = bool(int(match.group(3), 16) & 1)
    if not trace:
        return {}
    fields: dict[str, object] = {TRACE_KEY: f"projects/{project}/traces/{trace}" if project else trace}
    if span:
        fields[SPAN_KEY] = span
    if sampled is not None:
        fields[SAMPLED_KEY] = sampled
    return fields


CLIENT_GONE = 499  # the access line's status when the client went away before an answer (nginx's number)


class RequestContextMiddleware:
    """Sets the log context for the request's lifetime and writes one access line per request."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app = app
        self.project = settings.gcp_project

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        fields = trace_fields(scope, self.project)
        given = header(scope, CORRELATION_HEADER.encode()) or header(scope, b"x-request-id")
        trace = str(fields.get(TRACE_KEY, "")).rsplit("/", 1)[-1]
        correlation = valid_correlation_id(given) or trace or uuid.uuid4().hex
        token = request_context.set({**fields, CORRELATION_FIELD: correlation})
        started = time.perf_counter()
        status = 500  # what the client gets when the app fails before it answers (Starlette's error response)
        responded = gone = False

        async def receive_watched() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status, responded = message["status"], True
                headers = [*message.get("headers", []), (CORRELATION_HEADER.encode(), correlation.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive_watched, send_with_id)
        finally:
            if gone and not responded:
                status = CLIENT_GONE
            if scope["path"] not in PROBE_PATHS:  # probes: no access line
                latency = time.perf_counter() - started
                log.info(
                    "%s %s %d %.1f ms",
                    scope["method"],
                    scope["path"],
                    status,
                    latency * 1000,
                    extra={
                        "http": {
                            "requestMethod": scope["method"],
                            "requestUrl": scope["path"],  # the path only: query strings may carry secrets
                            "status": status,
                            "latency": f"{latency:.6f}s",
                        }
                    },
                )
            request_context.reset(token)
