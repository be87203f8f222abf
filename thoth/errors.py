"""What can go wrong, by whose it is: the one hierarchy every module raises from (docs/architecture.md,
"Errors"; thoth.mcp.failures maps it onto each surface). This module imports nothing from thoth."""

from __future__ import annotations

import time
from collections.abc import Sequence
from email.utils import parsedate_to_datetime


class ThothError(Exception):
    """Base of Thoth's own errors; str(error) is meant for people."""


class ClientError(ThothError, ValueError):
    """The request cannot be served as asked; the message names the argument and what is allowed.

    `argument` is the argument it is about, when there is one (the message names it too)."""

    def __init__(self, message: str, *, argument: str | None = None):
        super().__init__(message)
        self.argument = argument


class NotFound(ClientError):
    """An id, source, document, page or citation the index does not hold; the message names it."""


class UpstreamError(ThothError, RuntimeError):
    """A service Thoth calls could not answer (after retries); the message says why."""


def retry_wait(attempt: int, retry_after: str | None, first: float, longest: float) -> float:
    """Seconds to wait before retrying a service that answered 429 or 5xx or did not answer: what its
    Retry-After asks (seconds or an HTTP date; 0 is at once), else `first` doubled for each attempt before;
    at most `longest`."""
    try:
        asked = float(retry_after or -1)
    except ValueError:
        try:
            asked = max(parsedate_to_datetime(retry_after).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError):
            asked = -1
    return min(asked if asked >= 0 else first * 2**attempt, longest)


class ServerFault(ThothError, RuntimeError):
    """The server cannot serve anyone right now (index missing or unreadable, model unavailable)."""


def check_choice(name: str, value: object, allowed: Sequence[str], error: type[ThothError] = ClientError) -> None:
    """Raise `error` naming the argument `name` and each allowed value, unless `value` is one of them."""
    if value not in allowed:
        raise error(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
