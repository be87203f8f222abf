"""Errors retrieval functions raise for a client's request; tools turn them into tool errors."""

from __future__ import annotations


class RetrievalError(ValueError):
    """The request cannot be served as asked; the message names the argument and what is allowed."""


class NotFound(RetrievalError):
    """An id, collection, document or citation the index does not hold."""
