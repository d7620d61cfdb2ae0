"""Giving back to the system the heap that sleeping conversations freed.

A conversation's processes are freed when it sleeps, but freed memory stays the
process's: CPython's small-object allocator (pymalloc) returns an arena (1 MiB) only
once every object in it is gone, which a few survivors of a wave (a log line, a cache
entry, a grown dict) prevent; glibc's malloc returns only the top of its heap, unless
`malloc_trim` asks it to give back every free page. So after a wave of conversations
has fallen asleep the sleeper asks (see `TRIM_AFTER`): what the objects above 512 bytes
held (buffers, large dicts, the worker threads' allocations), which in the daemon is
half of what a wave of conversations used (docs/benchmarks.md, "What a conversation
costs in memory"). Elsewhere than on glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Final

import trio

#: Trees stopped since the last trim before the sleeper trims again: a trim walks the
#: whole heap (milliseconds, in a worker thread), worth it once a wave has gone.
TRIM_AFTER: Final = 200
_PAGE_KIB: Final = os.sysconf("SC_PAGE_SIZE") // 1024


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM: Final = _malloc_trim()


def resident_kib() -> int:
    """This process's resident memory (VmRSS), in KiB."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE_KIB


async def trim_heap() -> int | None:
    """Give free heap pages back to the system: the KiB resident memory fell by (None
    when the C library cannot). The call runs in a worker thread (ctypes lets the GIL go)."""
    if _TRIM is None:
        return None
    before = resident_kib()
    await trio.to_thread.run_sync(_TRIM, 0)
    return max(0, before - resident_kib())
