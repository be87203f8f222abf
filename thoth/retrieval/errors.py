"""The names retrieval code raises for a client's request (thoth.errors): tools turn them into tool errors."""

from __future__ import annotations

from thoth.errors import ClientError, NotFound

RetrievalError = ClientError  # the request cannot be served as asked; the message names the argument

__all__ = ["NotFound", "RetrievalError"]
