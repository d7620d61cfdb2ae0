"""A sliding-window rate limiter: at most N requests per window, per client and user."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable

import attrs


@attrs.define
class RateLimiter:
    limit: int
    window: float
    _hits: dict[Hashable, deque[float]] = attrs.field(factory=dict)

    def check(self, key: Hashable, now: float) -> float | None:
        """Count a request; None if it may go on, else the seconds until it may (for Retry-After)."""
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(0.0, hits[0] + self.window - now)
        hits.append(now)
        return None

    def prune(self, now: float) -> int:
        """Forget keys with no request in the window; return how many were dropped."""
        stale = [key for key, hits in self._hits.items() if not hits or hits[-1] <= now - self.window]
        for key in stale:
            del self._hits[key]
        return len(stale)

    def __len__(self) -> int:
        return len(self._hits)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
