"""Channels that reach a user who sent nothing to answer: where a scheduled job's reply goes.

A channel app registers, for the users of its namespace (``telegram:``, ``local:``), a
function that gives a `Channel` to one user, or None when it cannot reach them now (a
terminal that is not connected). Registration lasts while the registering process
runs (`outbound`), so a restarted channel app registers again and a stopped one is
never called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ._channel import Channel

#: A user id -> a channel that reaches that user now, or None.
Reach = Callable[[str], Channel | None]

_reaches: dict[str, list[Reach]] = {}


@contextlib.contextmanager
def outbound(namespace: str, reach: Reach) -> Iterator[None]:
    """Offer *reach* for the users whose id starts with ``namespace:`` while the block runs."""
    _reaches.setdefault(namespace, []).append(reach)
    try:
        yield
    finally:
        _reaches[namespace].remove(reach)


def outbound_channel(user_id: str) -> Channel | None:
    """A channel that reaches *user_id* now (the newest registration that can), or None."""
    namespace, _, _ = user_id.partition(":")
    for reach in reversed(_reaches.get(namespace, [])):
        channel = reach(user_id)
        if channel is not None:
            return channel
    return None
