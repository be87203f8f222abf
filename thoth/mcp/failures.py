"""What a client gets when a call fails: one mapping from thoth.errors onto every MCP surface (`Surface`);
a server fault is logged once and answered with a correlation id (docs/security.md, "Errors")."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Literal, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR

from thoth.errors import ClientError, NotFound, ServerFault, UpstreamError
from thoth.mcp.correlation import CORRELATION_FIELD, correlation, current_correlation_id

log = logging.getLogger("thoth.tools")

T = TypeVar("T")

# How a surface reports a failure: "tool" every failure a tool error (isError, for the assistant to read);
# "jsonrpc" the caller's mistakes tool errors, the server's faults JSON-RPC -32603 (Qurio);
# "resource" (resources/read) not found -32602, other mistakes and the server's faults -32603.
Surface = Literal["tool", "jsonrpc", "resource"]


SHOWN_CHARS = 60  # a value a refusal quotes (an id, a name; never a query or a document) is cut to this
_QUOTED = re.compile(  # a quoted literal as repr() writes it: no word character outside, no space inside the quote
    rf"(?<!\w)'(?!\s)([^'\n]{{{SHOWN_CHARS}}})[^'\n]+'(?!\w)|(?<!\w)\"(?!\s)([^\"\n]{{{SHOWN_CHARS}}})[^\"\n]+\"(?!\w)"
)
NUL_REFUSAL = "filter values may not contain NUL characters"  # thoth.store.filters: names no argument


def clipped(message: str) -> str:
    """A refusal with every quoted value longer than SHOWN_CHARS cut short (docs/security.md, "Errors")."""
    return _QUOTED.sub(lambda m: f"'{m.group(1) or m.group(2)}…'", message)


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    return isinstance(value, list) and any(_holds_nul(v) for v in value)


def in_own_words(message: str, arguments: dict) -> str:
    """A tool's refusal as its client reads it: NUL refused by the argument's name, long values cut short."""
    if NUL_REFUSAL in message:
        named = [name for name, value in arguments.items() if _holds_nul(value)]
        if named:
            message = f"{', '.join(named)}: may not contain NUL characters"
    return clipped(message)


def server_fault(tool: str, exc: BaseException, cid: str) -> str:
    """The one message shape of a server's own failure, on every surface (tool error or JSON-RPC -32603)."""
    reason = str(exc) if isinstance(exc, ServerFault) else f"an internal error ({type(exc).__name__})"
    return f"{tool} failed: {reason}; correlation id {cid} (the server log has the details)"


def log_fault(tool: str, exc: BaseException, cid: str) -> None:
    """One ERROR line with the correlation id: the message of a known fault, the traceback of a bug."""
    with correlation(None, cid):
        if isinstance(exc, ServerFault):
            log.error("tool %s failed (correlation id %s): %s", tool, cid, exc, extra={"tool": tool})
        else:
            log.error("tool %s failed (correlation id %s)", tool, cid, exc_info=exc, extra={"tool": tool})


def to_client(name: str, exc: BaseException, surface: Surface = "tool") -> Exception:
    """What the client of `surface` gets for `exc`, raised while answering `name` (a tool or resource).
    A server fault is logged here, once, with the call's correlation id."""
    if isinstance(exc, ToolError | ResourceError | MCPError):  # already in the client's words
        return exc
    if isinstance(exc, ClientError | UpstreamError):  # for the caller (their mistake, or a service Thoth calls)
        if surface != "resource":
            return ToolError(str(exc))  # ThothMCP.call_tool puts it in the tool's own words
        message = clipped(str(exc))
        return ResourceNotFoundError(message) if isinstance(exc, NotFound) else ResourceError(message)
    cid = current_correlation_id()
    log_fault(name, exc, cid)
    message = server_fault(name, exc, cid)
    if surface == "tool":
        return ToolError(message)
    return MCPError(INTERNAL_ERROR, message, {CORRELATION_FIELD: cid})


def answered(name: str, fn: Callable[[], T], surface: Surface = "tool") -> T:
    """Run `fn` (a tool's body, a resource's reader): its failure raised as `to_client` says."""
    try:
        return fn()
    except Exception as exc:
        failure = to_client(name, exc, surface)
        if failure is exc:
            raise
        raise failure from exc


def call(tool: str, fn: Callable[[], T], surface: Surface = "tool") -> T:
    """Run a tool's body: its failure as `to_client` says, and its latency logged."""
    started = time.perf_counter()
    log.debug("tool %s started", tool, extra={"tool": tool})
    try:
        return answered(tool, fn, surface)
    finally:
        latency = round((time.perf_counter() - started) * 1000, 1)
        log.info("tool %s answered in %.1f ms", tool, latency, extra={"tool": tool, "latency_ms": latency})
