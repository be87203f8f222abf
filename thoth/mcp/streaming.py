"""`/mcp` answers plain JSON, or an event stream when the request asks for notifications (a `progressToken` or
a log level in `_meta`, and `text/event-stream` accepted): two stateless transports over the same server."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoth.mcp.context import header

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

log = logging.getLogger("thoth.http")

LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
MAX_PEEK = 4 * 1024 * 1024  # the SDK's own body limit: a longer body goes on unread, and is refused there


def wants_stream(body: bytes) -> bool:
    """Does this JSON-RPC request ask for notifications (progress, or log messages) on its response?"""
    if b"progressToken" not in body and LOG_LEVEL_META.encode() not in body:  # the common case, without parsing
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ("progressToken" in meta or LOG_LEVEL_META in meta)


class _StreamRouter:
    """Reads a POST's body first: it decides between the two transports, and a client that goes away
    before sending all of it is logged here at INFO (the SDK would log a traceback and answer 500)."""

    def __init__(self, plain: ASGIApp, streaming: ASGIApp):
        self.plain = plain
        self.streaming = streaming

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.plain(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:  # read the body, keeping the messages to hand them on unchanged
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > MAX_PEEK:
                break
        if messages[-1]["type"] == "http.disconnect":
            log.info("client went away before sending its whole request body (%d bytes read)", size)
            return
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        replay = iter(messages)
        complete = not messages[-1].get("more_body")

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        streams = complete and "text/event-stream" in header(scope, b"accept") and wants_stream(body)
        target = self.streaming if streams else self.plain
        await target(scope, replayed, send)


def mcp_http_app(
    mcp: MCPServer, security: TransportSecuritySettings
) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
    """The ASGI app for `/mcp` (mount it at `/`) and the context manager that runs both transports."""
    plain = mcp.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, transport_security=security
    )
    plain_manager = mcp.session_manager
    streaming = mcp.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=False, transport_security=security
    )
    streaming_manager = mcp.session_manager

    @contextlib.asynccontextmanager
    async def run() -> AsyncIterator[None]:
        async with plain_manager.run(), streaming_manager.run():
            yield

    return _StreamRouter(plain, streaming), run
