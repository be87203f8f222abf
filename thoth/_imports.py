"""A cheaper `import lancedb`, for a fast cold start (docs/benchmarks.md, "Cold start").

lancedb imports a generated REST client Thoth never calls, whose package `__init__` costs about half of
lancedb's import time. `deferred_packages()` registers such packages with their `__path__` but without
running their `__init__`: submodules import as usual, and the first attribute asked of the package
itself runs its real `__init__` then.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType

_lock = threading.RLock()  # one package initialised at a time; re-entrant for nested packages

# Parents before children: finding a subpackage's spec needs its parent's `__path__`.
LANCEDB_REST_CLIENT = ("lance_namespace_urllib3_client", "lance_namespace_urllib3_client.api")


def _defer(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed, or not a package: nothing to defer
    module = importlib.util.module_from_spec(spec)  # sets __spec__, __path__, __file__; runs nothing

    def __getattr__(attr: str) -> object:  # noqa: N807 (the module-level hook's required name)
        with _lock:
            if module.__dict__.get("__getattr__") is __getattr__:
                del module.__getattr__
                spec.loader.exec_module(module)  # the package's real __init__, in this module
        return object.__getattribute__(module, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def deferred_packages(names: tuple[str, ...]) -> None:
    """Register `names` (packages, parents first) so that their `__init__` runs on first attribute use.
    Already imported packages are left as they are."""
    with _lock:
        for name in names:
            if name not in sys.modules:
                _defer(name)


def is_deferred(module: ModuleType) -> bool:
    """True while the package's own `__init__` has not run yet."""
    return "__getattr__" in module.__dict__ and getattr(module.__dict__["__getattr__"], "__module__", "") == __name__


__all__ = ["LANCEDB_REST_CLIENT", "deferred_packages", "is_deferred"]
