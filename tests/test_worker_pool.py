"""Blocking tool calls (LanceDB, ONNX) run on a pool sized to the cores, not anyio's 40 threads (issue 17)."""

from __future__ import annotations

import anyio
import anyio.to_thread

from thoth.embed import available_cpus
from thoth.mcp.server import bound_worker_threads


def test_the_pool_is_two_threads_per_core() -> None:
    async def main() -> None:
        assert anyio.to_thread.current_default_thread_limiter().total_tokens == 40  # anyio's own
        assert bound_worker_threads() == 2 * available_cpus()
        assert anyio.to_thread.current_default_thread_limiter().total_tokens == 2 * available_cpus()

    anyio.run(main)
