"""Blocking tool calls (LanceDB, ONNX) run on a pool sized to the cores, not anyio's 40 threads (issue 17)."""

from __future__ import annotations

import anyio
import anyio.to_thread

from thoth.config import Settings
from thoth.embed import available_cpus
from thoth.mcp.server import bound_worker_threads


def test_the_pool_is_two_threads_per_core_unless_configured() -> None:
    async def main() -> None:
        assert bound_worker_threads(Settings.from_env({})) == 2 * available_cpus()
        assert anyio.to_thread.current_default_thread_limiter().total_tokens == 2 * available_cpus()
        assert bound_worker_threads(Settings.from_env({"THOTH_SEARCH_THREADS": "3"})) == 3
        assert anyio.to_thread.current_default_thread_limiter().total_tokens == 3

    anyio.run(main)
