"""The HTTP server: `python -m thoth.mcp.server` (PORT, default 8080; THOTH_WORKERS processes). Its routes and
middleware: docs/security.md ("HTTP"); its shutdown: docs/operations.md ("Shutdown")."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator
from types import FrameType

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from thoth.app import Thoth
from thoth.config import ConfigError, Settings
from thoth.freed import cap_malloc_arenas
from thoth.logs import setup_logging
from thoth.mcp.auth import AuthMiddleware
from thoth.mcp.context import RequestContextMiddleware, header
from thoth.mcp.hosts import HostCheckMiddleware

# Cold start: importing this module is cheap (no mcp, no lancedb, no onnxruntime). `main()` starts
# the warm-up thread (tables, embedder) first and only then imports the MCP SDK and builds the app,
# so the two overlap wherever either side runs native code (see docs/benchmarks.md, "Cold start").

log = logging.getLogger("thoth.server")

SHUTDOWN_GRACE_SECONDS = 8  # Cloud Run gives 10 s after SIGTERM; the answers in flight need the rest
THREADS_PER_CPU = 2  # blocking tool calls at once per core (bound_worker_threads)


class _DefaultAccept:
    """Give POST /mcp requests without a usable Accept header the one the transport requires.

    README's curl sequence ("Try it with curl") sends `tools/list` with no Accept header (curl then sends `*/*`, or
    nothing at all from some clients); the SDK would answer 406. JSON responses are always fine.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            headers = [(k, v) for k, v in scope["headers"] if k != b"accept"]
            accept = header(scope, b"accept")
            if "application/json" not in accept and "*/*" not in accept:
                accept = ", ".join(filter(None, [accept, "application/json, text/event-stream"]))
            scope = {**scope, "headers": [*headers, (b"accept", accept.encode("latin-1"))]}
        await self.app(scope, receive, send)


STARTUP_PROBE_HEADER = "x-thoth-probe"  # terraform's startup probe sends `X-Thoth-Probe: startup`


async def _no_event_stream(request: Request) -> JSONResponse:
    """GET /mcp opens the standalone event stream; this stateless server sends nothing on it, and an endless
    stream holds a Cloud Run instance's request slot. 405 (as the transport spec allows) says so at once."""
    return JSONResponse(
        {"error": "GET /mcp (a server-sent event stream) is not offered: this server is stateless; POST JSON-RPC"},
        status_code=405,
        headers={"Allow": "POST"},
    )


def bound_worker_threads() -> int:
    """Size the pool that runs blocking calls (synchronous tools: LanceDB and ONNX; /health) to the cores.

    anyio's default is 40 threads: 16 concurrent searches on 2 cores then all run at once, each slowed
    by the others (and by the GIL), so every one of them finishes late. With a few threads per core the
    rest wait their turn in order, and p95 stays near p50 (docs/benchmarks.md, "Latency")."""
    import anyio.to_thread

    from thoth.embed import available_cpus

    threads = THREADS_PER_CPU * available_cpus()
    anyio.to_thread.current_default_thread_limiter().total_tokens = threads
    return threads


def create_app(settings: Settings | None = None, app: Thoth | None = None, warm_up: bool = True) -> Starlette:
    """The Starlette app; `warm_up` starts loading tables and model when it starts serving
    (unless `app` is already warming up: `main()` starts that before building the app)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from thoth.mcp.internal import internal_routes
    from thoth.mcp.streaming import mcp_http_app
    from thoth.mcp.tools import build_mcp
    from thoth.ui import console_app

    settings = settings or Settings.from_env()
    thoth = app or Thoth(settings)
    mcp = build_mcp(thoth)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # thoth.mcp.hosts checks every route
    streamable, run_transports = mcp_http_app(mcp, security)  # JSON, or a stream when progress is asked for
    sse = mcp.sse_app(sse_path="/sse", message_path="/messages/", transport_security=security)

    async def health(request: Request) -> JSONResponse:
        report = await run_in_threadpool(thoth.health)  # may wait for the tables: not on the event loop
        shown = report if thoth.access_rules is None else report.without_index_details()  # /health is open
        startup = request.headers.get(STARTUP_PROBE_HEADER, "").lower() == "startup"
        if not report.ok and startup and report.readable_but_empty:
            # Cloud Run's startup probe: a first deploy comes before the first ingest. An unreadable
            # index (wrong bucket, no permission) or a model mismatch still fails the deploy.
            return JSONResponse({**shown.to_json(), "status": "empty"}, status_code=200)
        return JSONResponse(shown.to_json(), status_code=report.http_status)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if warm_up and not thoth.warming_up:
            thoth.warm_up(background=True)
        bound_worker_threads()
        close_writes_on_sigterm(thoth, SHUTDOWN_GRACE_SECONDS)
        async with run_transports():
            log.info("Thoth MCP server ready: db=%s toolsets=%s", settings.db_uri, ",".join(settings.toolsets))
            yield

    oauth = None
    if settings.auth_mode == "oauth":  # Thoth is also the authorization server (thoth.mcp.oauth)
        from thoth.mcp.oauth import ThothProvider

        oauth = ThothProvider(settings, thoth.store.oauth_state)

    starlette = Starlette(
        routes=[
            Route("/", health, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            *(oauth.routes() if oauth is not None else ()),
            *internal_routes(thoth),
            Route("/ui", lambda _: RedirectResponse("/ui/"), methods=["GET"]),
            Mount("/ui", app=console_app(thoth)),  # the read-only console, behind the same auth as /mcp
            Route("/mcp", _no_event_stream, methods=["GET"]),  # before the MCP app: it would hold the stream open
            Mount("/mcp", app=sse),  # /mcp/sse and /mcp/messages/
            Mount("/", app=streamable),  # /mcp
        ],
        lifespan=lifespan,
    )
    starlette.state.thoth = thoth
    starlette.add_middleware(_DefaultAccept)
    starlette.add_middleware(AuthMiddleware, settings=settings, oauth=oauth, rules=thoth.access_rules)
    starlette.add_middleware(HostCheckMiddleware, settings=settings)  # every route, before auth
    starlette.add_middleware(RequestContextMiddleware, settings=settings)  # added last: runs first
    return starlette


def close_writes_on_sigterm(thoth: Thoth, grace: float) -> None:
    """Before uvicorn's own SIGTERM handling (stop accepting, wait for requests in flight): the write gate
    refuses new writes and gives the one in flight the grace period (thoth/writes/gate.py), so its client
    gets its result or a retryable tool error before uvicorn's grace ends, never a cut connection. Only
    in the main thread, where uvicorn installs its handler (a test's in-thread server has none)."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(sig: int, frame: FrameType | None) -> None:
        thoth.writes.close(grace)  # made here if no write asked for it yet (one may be about to)
        if callable(previous):
            previous(sig, frame)

    signal.signal(signal.SIGTERM, on_sigterm)


def app_from_env(settings: Settings | None = None) -> Starlette:
    """The app as the environment (or `settings`) configures it; also the factory each worker process
    calls when THOTH_WORKERS is above 1."""
    cap_malloc_arenas()
    settings = settings or Settings.from_env()
    setup_logging(settings)
    thoth = Thoth(settings)
    thoth.warm_up(background=True)  # tables and model load while the MCP SDK imports and uvicorn starts
    return create_app(settings, thoth)


def listening_socket(host: str, port: int) -> socket.socket:
    """The bound TCP socket worker processes share. It is made with protocol IPPROTO_TCP: asyncio
    turns Nagle's algorithm off (TCP_NODELAY) on accepted connections only when the listener says TCP,
    and the one `uvicorn --workers` binds does not, so each keep-alive response then waited ~40 ms for
    the client's delayed ACK (uvicorn issue #3149; docs/benchmarks.md, "Workers")."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _uvicorn_options(settings: Settings) -> dict:
    return {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level.lower(),
        "log_config": None,  # keep setup_logging's handler: JSON lines on Cloud Run for uvicorn's lines too
        "access_log": False,  # RequestContextMiddleware writes the access line, with the trace
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_SECONDS,
        "ws": "none",  # no WebSocket routes: uvicorn need not import a WebSocket library at start (~0.04 s CPU)
    }


def main() -> None:
    """The server, as the environment configures it."""
    try:
        settings = Settings.from_env()
    except ConfigError as exc:  # a setting the operator must change: one line, exit 2 (README)
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if settings.workers == 1:
        app = app_from_env(settings)  # before importing uvicorn: the warm-up runs during that import
        import uvicorn

        uvicorn.run(app, **_uvicorn_options(settings))
        return
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    setup_logging(settings)  # the supervisor's own lines; each worker sets up its own in app_from_env
    config = uvicorn.Config(
        "thoth.mcp.server:app_from_env", factory=True, workers=settings.workers, **_uvicorn_options(settings)
    )
    Multiprocess(config, sockets=[listening_socket(settings.host, settings.port)]).run()


if __name__ == "__main__":
    main()
