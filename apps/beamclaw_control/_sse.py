"""Server-sent events: a route's stream of named JSON events as a ``text/event-stream``.

Each event is ``event: NAME`` and ``data: JSON``; a comment line (``: keepalive``) goes
out after 15 s without one, so a client that left is noticed (its connection breaks)
and its subscription dropped: the source's ``finally`` runs when the stream closes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import trio
from quart import Response

#: Seconds without an event after which a keepalive comment is sent.
KEEPALIVE_SECONDS: Final = 15.0
#: A source yields this when it has nothing to send yet (it must do so at least every second
#: or so, for the keepalive to go out on time).
IDLE: Final = None

Event = tuple[str, Any]


def _encoded(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def _framed(source: AsyncIterator[Event | None]) -> AsyncIterator[bytes]:
    async with contextlib.aclosing(source):  # type: ignore[type-var]  # an async generator
        last = trio.current_time()
        async for item in source:
            now = trio.current_time()
            if item is not None:
                last = now
                yield _encoded(*item)
            elif now - last >= KEEPALIVE_SECONDS:
                last = now
                yield b": keepalive\n\n"


def event_stream(source: AsyncIterator[Event | None]) -> Response:
    """The response streaming *source*'s events (`IDLE` when it has none for now), until the
    source ends or the client leaves (then the source is closed)."""
    response = Response(_framed(source), content_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    response.timeout = None
    return response
