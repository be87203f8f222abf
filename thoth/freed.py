"""Handing memory that was freed back to the system.

A write, or the read of a new held copy (thoth/store/held.py), allocates hundreds of MB for a moment:
Arrow batches, embedding buffers, Python objects. Freed, that memory stays with the allocators that
held it (Arrow's mimalloc pool, glibc's free lists), so the process's RSS stays at the peak: at 1M
chunks the ranking copy's read left 215 MB behind beside the 78 MB copy (docs/operations.md, "Memory").

Arrow allocates through glibc's malloc, not its bundled mimalloc (`allocate_through_glibc`): mimalloc
keeps the pages a finished thread freed until some other thread collects them, so the ranking copy's
read (in a thread of its own) left 77 MB held that no trim could reach.
"""

from __future__ import annotations

import ctypes
import gc


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
