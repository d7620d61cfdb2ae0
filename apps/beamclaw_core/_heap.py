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

glibc holds each arena's lock while it trims that arena, so a trim of a large heap may
briefly stall the event loop's thread when it allocates meanwhile: one more reason to
trim once a wave, not after every conversation.
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


_STATM: Final = "/proc/self/statm"


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]  # its pad, a size_t: an int past 2**31 converts
    trim.restype = ctypes.c_int
    return trim


_TRIM: Final = _malloc_trim()


def resident_kib() -> int | None:
    """This process's resident memory (VmRSS), in KiB; None without /proc to read it."""
    try:
        with open(_STATM, "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_KIB
    except OSError:
        return None


async def trim_heap() -> int | None:
    """Give free heap pages back to the system: the KiB resident memory fell by (None
    when the C library cannot, or without /proc to measure it). The call runs in a worker
    thread (ctypes lets the GIL go)."""
    if _TRIM is None:
        return None
    before = resident_kib()
    await trio.to_thread.run_sync(_TRIM, 0)
    after = resident_kib()
    return None if before is None or after is None else max(0, before - after)
