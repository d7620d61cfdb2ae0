"""What keeps the daemon answering everyone while some clients hold many connections.

- `ConnectionCap`: open WebSockets are capped per client (its token, or with no token
  its address) and in all; the excess is refused at the upgrade (503 with Retry-After,
  the connection closed), so a thousand idle sockets from one client leave file
  descriptors for ``/health`` and every other client. HTTP requests in progress are
  capped the same way (the gateway's `_InFlight`); an idle keep-alive connection needs
  no cap: hypercorn closes it after ``keep_alive_timeout`` seconds.
- `raise_open_file_limit`: the soft limit on open files goes up to the hard one
  (1,024 by default on many systems, where each socket is one).
- `websocket_compression_off`: permessage-deflate is never negotiated. wsproto
  inflates a compressed frame whole before hypercorn's size limit sees the message,
  so a 189 KB frame became 200 MB in memory before it was refused; uncompressed,
  the limit applies to the bytes as they arrive. Chat messages gain little from it.
"""

from __future__ import annotations

import resource
from collections import Counter
from typing import Any, Final

import attrs
from hypercorn.protocol import ws_stream
from loguru import logger
from wsproto.extensions import PerMessageDeflate

#: Seconds a refused client is told to wait before opening another WebSocket.
RETRY_AFTER: Final = 5


@attrs.define
class ConnectionCap:
    """Open WebSockets, or HTTP requests in progress, per client and in all (see the
    module's docstring)."""

    total: int
    per_client: int
    #: What is counted, for the refusals: "WebSockets", "requests".
    what: str = "connections"
    _open: Counter[str] = attrs.field(factory=Counter)

    @property
    def count(self) -> int:
        return sum(self._open.values())

    def take(self, client: str) -> str | None:
        """Count one more connection of *client*; or, over a cap, say why not (nothing counted)."""
        if self._open[client] >= self.per_client:
            return f"this client has {self.per_client} {self.what} open, the most one client may; retry later"
        if self.count >= self.total:
            return f"the gateway has {self.total} {self.what} open, its most; retry later"
        self._open[client] += 1
        return None

    def give_back(self, client: str) -> None:
        self._open[client] -= 1
        if self._open[client] <= 0:
            del self._open[client]


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # a container may forbid it: say so, go on with what there is
        logger.warning("could not raise the open-file limit from {} to {}: {}", soft, hard, exc)
        return soft
    logger.debug("open-file limit raised from {} to {}", soft, hard)
    return hard


class _NoDeflate(PerMessageDeflate):
    """permessage-deflate that declines every offer (see `websocket_compression_off`)."""

    def accept(self, offer: str) -> None:
        return None


def websocket_compression_off() -> None:
    """Make hypercorn decline permessage-deflate (see the module's docstring).

    Hypercorn offers no setting for it: its handshake builds the server's extensions
    from the ``PerMessageDeflate`` name in its own module, which this replaces with a
    class that accepts nothing. A client that then sends a compressed frame anyway
    breaks the protocol, and wsproto closes the connection without inflating it.
    """
    module: Any = ws_stream
    module.PerMessageDeflate = _NoDeflate
