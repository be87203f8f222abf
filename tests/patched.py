"""`python -m tests.patched JSON MODULE:FUNCTION ARGS...`: a test's monkeypatch across a process boundary.

JSON maps module constants (`"thoth.mcp.server.SHUTDOWN_GRACE_SECONDS": 120`) to the values a test needs
(a short grace, a small batch); they are set, then FUNCTION runs with ARGS as its command line
(`thoth.mcp.server:main`, `thoth.writes.job:main`).
"""

from __future__ import annotations

import importlib
import json
import sys


def patch(patches: dict[str, object]) -> None:
    for dotted, value in patches.items():
        owner, _, name = dotted.rpartition(".")
        module = importlib.import_module(owner)
        if not hasattr(module, name):
            raise SystemExit(f"{owner} has no {name} to patch")
        setattr(module, name, value)


def main() -> object:
    patches, target, *args = sys.argv[1:]
    patch(json.loads(patches))
    module_name, _, function = target.partition(":")
    sys.argv = [target, *args]
    return getattr(importlib.import_module(module_name), function)()


if __name__ == "__main__":
    sys.exit(main())
