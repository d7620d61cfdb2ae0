"""Sliding-window rate limits: per client address, and per address and user.

A client that sends a new ``X-User-Id`` (or ``user``) with every request gets a new
per-user budget each time, so every address also has one budget of its own, whatever
users it names. IPv6 clients are counted by their /64 network: one host usually holds
a whole /64 and could otherwise rotate addresses as easily as user ids.

Memory is bounded: each table tracks at most ``max_keys`` keys, and a new key beyond
that evicts the one seen least recently (a client quiet for longest). An attacker
rotating ids or addresses can only push out other quiet keys, never grow the tables.
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict, deque
from collections.abc import Hashable
from typing import Final

import attrs

#: How many keys each table tracks at most (each holds at most `limit` timestamps).
MAX_KEYS: Final = 10_000


@attrs.define
class RateLimiter:
    """At most *limit* requests per key in any *window* seconds."""

    limit: int
    window: float
    max_keys: int = MAX_KEYS
    _hits: OrderedDict[Hashable, deque[float]] = attrs.field(factory=OrderedDict)

    def wait(self, key: Hashable, now: float) -> float | None:
        """None if a request for *key* may go on now, else the seconds until it may; counts nothing."""
        hits = self._hits.get(key)
        if hits is None:
            return None
        # Seen now, even if refused: a client kept at its limit must not be evicted
        # (and so start afresh) by others' new keys.
        self._hits.move_to_end(key)
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(0.0, hits[0] + self.window - now)
        return None

    def record(self, key: Hashable, now: float) -> None:
        """Count a request for *key* (evicting the least recently seen key past `max_keys`)."""
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits[key] = deque()
            while len(self._hits) > self.max_keys:
                self._hits.popitem(last=False)
        else:
            self._hits.move_to_end(key)
        hits.append(now)

    def check(self, key: Hashable, now: float) -> float | None:
        """Count a request; None if it may go on, else the seconds until it may (for Retry-After)."""
        wait = self.wait(key, now)
        if wait is None:
            self.record(key, now)
        return wait

    def prune(self, now: float) -> int:
        """Forget keys with no request in the window; return how many were dropped."""
        stale = [key for key, hits in self._hits.items() if not hits or hits[-1] <= now - self.window]
        for key in stale:
            del self._hits[key]
        return len(stale)

    def __len__(self) -> int:
        return len(self._hits)


def address_key(remote: str | None) -> str:
    """The key a client address is counted under: IPv4 as is, IPv6 by its /64 network."""
    if not remote:
        return ""
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return remote  # not an IP address (a Unix socket): counted as given
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


@attrs.define
class ClientLimiter:
    """The per-address and the per-address-and-user limits, checked together."""

    by_address: RateLimiter
    by_user: RateLimiter

    @classmethod
    def create(cls, per_address: int, per_user: int, window: float, max_keys: int = MAX_KEYS) -> ClientLimiter:
        return cls(RateLimiter(per_address, window, max_keys), RateLimiter(per_user, window, max_keys))

    def check(self, remote: str | None, user: str, now: float) -> float | None:
        """Count a request if both limits allow it: None, else the seconds until they would.

        A refused request is counted in neither, so a client over its per-user limit
        does not also use up the budget its address shares with other users.
        """
        address = address_key(remote)
        found = (self.by_address.wait(address, now), self.by_user.wait((address, user), now))
        waits = [wait for wait in found if wait is not None]
        if waits:
            return max(waits)
        self.by_address.record(address, now)
        self.by_user.record((address, user), now)
        return None

    def prune(self, now: float) -> int:
        return self.by_address.prune(now) + self.by_user.prune(now)

    def __len__(self) -> int:
        return len(self.by_address) + len(self.by_user)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
