"""Keeping a process's memory bounded: glibc's malloc configured at start, before any thread
(`cap_malloc_arenas`), and memory a write or a held copy's read freed handed back (`give_back_memory`);
Arrow allocates through glibc so that a trim reaches it (docs/operations.md, "Memory")."""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from pathlib import Path


def allocate_through_glibc() -> None:
    """Arrow's default pool becomes glibc's malloc for this process, which malloc_trim hands back."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def give_back_memory(collect_cycles: bool = True) -> None:
    """Python's cycles collected (unless `collect_cycles` is False: Arrow data has none), then Arrow's
    unused pool memory and glibc's free lists handed back."""
    if collect_cycles:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl, macOS): their allocators return memory themselves
        pass


MALLOC_ARENAS = 2  # glibc malloc arenas a server process keeps (MALLOC_ARENA_MAX in the environment wins)
_M_ARENA_MAX = -8  # mallopt's parameter number for it (<malloc.h>)
# Allocations from this size up get pages of their own, given back when freed (MALLOC_MMAP_THRESHOLD_ in the
# environment wins). glibc's default threshold rises to the largest block freed (up to 32 MB), so a write's
# embedding buffers then stay in the heap: a 400 KB write peaked 76 MB above idle, 40 MB with this fixed.
MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3


def cap_malloc_arenas() -> bool:
    """Let glibc's malloc keep at most MALLOC_ARENAS arenas (docs/benchmarks.md, "Memory: two malloc arenas")
    and fix its mmap threshold; only arenas made after the call are capped, so a process calls it before it
    starts threads. Whether the arena cap was set (not where MALLOC_ARENA_MAX is, or not on glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    if not os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    return not os.environ.get("MALLOC_ARENA_MAX") and bool(mallopt(_M_ARENA_MAX, MALLOC_ARENAS))


def memory_limit_bytes() -> int:
    """The memory this process may use: its cgroup v2 limit (a container's, Cloud Run's), else the machine's."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            return int(limit)
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):  # no sysconf (not POSIX): the smallest instance's
        return 1 << 30


# LanceDB's caches when Settings.lance_cache_mb is 0: a quarter of the process's memory, within these bounds.
# At 1M chunks the index pages searches touch (IVF_RQ partitions, BM25 postings) do not fit in 192 MB: the
# cache evicted and read them again on every search, for more CPU and more RSS, not less (docs/operations.md,
# "Memory"). A 1 GiB instance gets 256 MB.
LANCE_CACHE_MIN_MB = 64
LANCE_CACHE_MAX_MB = 1024
LANCE_METADATA_CACHE_MB = 16  # manifests and fragment metadata: what grows with versions under writes


def lance_cache_bytes(cache_mb: int) -> tuple[int, int]:
    """(index cache, metadata cache) in bytes for a Settings.lance_cache_mb of `cache_mb` (0: sized from
    `memory_limit_bytes`). The metadata cache takes a quarter, at most LANCE_METADATA_CACHE_MB."""
    if cache_mb <= 0:
        cache_mb = min(max(memory_limit_bytes() // 4 >> 20, LANCE_CACHE_MIN_MB), LANCE_CACHE_MAX_MB)
    total = cache_mb << 20
    metadata = min(total // 4, LANCE_METADATA_CACHE_MB << 20)
    return total - metadata, metadata
