"""A cheaper `import lancedb`, for a fast cold start.

lancedb imports `lance_namespace_urllib3_client`, a generated REST client that Thoth never calls,
whose ~400 API methods carry pydantic's `@validate_call`: pydantic builds each one's validator when
the method is defined, about a third of lancedb's import CPU time. Inside `deferred_validate_call()`
the decorator wraps lazily and builds the very same validator on a method's first call: the same
validation and errors, paid only by what is called. (pydantic's `defer_build` for the client's
models and for the MCP SDK's was measured too and saves nothing: their cost is class creation.)
Figures: docs/benchmarks.md, "Cold start".
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.RLock()  # one patcher at a time; re-entrant, so a nested use cannot deadlock


@contextmanager
def deferred_validate_call() -> Iterator[None]:
    """While the block runs (an import), `pydantic.validate_call` builds each validator on first call."""
    import pydantic

    eager = pydantic.validate_call

    def lazy_validate_call(func: Any = None, /, **options: Any) -> Any:
        def decorate(function: Any) -> Any:
            validated: list[Any] = []

            @functools.wraps(function)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if not validated:
                    validated.append(eager(function, **options))
                return validated[0](*args, **kwargs)

            return wrapper

        return decorate(func) if func is not None else decorate

    with _lock:
        pydantic.validate_call = lazy_validate_call
        try:
            yield
        finally:
            pydantic.validate_call = eager


__all__ = ["deferred_validate_call"]
