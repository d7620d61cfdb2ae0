"""Calling a store again while it is away for now, within the caller's deadline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import trio

from ._retry import RetryPolicy, retry
from ._store import StoreUnavailable

R = TypeVar("R")

#: How long a store call is tried again when nothing sets a deadline: long enough to ride
#: through a PostgreSQL restart or failover, short enough that a caller hears of it.
RETRY_WINDOW: Final = 20.0

_POLICY: Final = RetryPolicy(attempts=None, wait_initial=0.05, wait_max=1.0, jitter=0.25)


async def run_retried(call: Callable[[], Awaitable[R]]) -> R:
    """``await call()``, again after `StoreUnavailable` until the enclosing deadline (or
    `RETRY_WINDOW` from now) would pass; then the last failure propagates."""
    deadline = min(trio.current_effective_deadline(), trio.current_time() + RETRY_WINDOW)

    def worth_another(exc: Exception) -> bool:
        return isinstance(exc, StoreUnavailable) and trio.current_time() + _POLICY.wait_max < deadline

    return await retry(call, _POLICY, worth_another)
