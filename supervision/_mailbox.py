"""A process's mailbox: a bounded queue with selective receive.

A Trio memory channel cannot take a message out of the middle of its buffer, which
Erlang's selective receive (and the wait for a `Down` of one monitor among many)
needs, so the mailbox is a deque with two parking lots: one for the receiver waiting
for a message, one for senders waiting for room. The senders' lot is made when a
sender first waits: most mailboxes never fill, and every process has one.
"""

from __future__ import annotations

import enum
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any, Final, final

import trio

from ._errors import MailboxFull

DEFAULT_CAPACITY: Final = 1024


@final
class Overflow(enum.Enum):
    """What a send to a full mailbox does; the receiving process chooses.

    WAIT applies backpressure: senders that can wait (`call`, `send_wait`) wait for
    room, and the non-blocking `send` and `cast` raise `MailboxFull`. DROP discards
    the newest message and counts it, so a slow observer never slows the observed
    (what telemetry wants). RAISE raises `MailboxFull` in every sender.
    """

    WAIT = "wait"
    DROP = "drop"
    RAISE = "raise"


EMPTY: Final = object()


@final
class Mailbox:
    """The queue of messages sent to one process, read only by that process."""

    __slots__ = ("_queue", "_receivers", "_senders", "capacity", "closed", "dropped", "overflow", "owner")

    def __init__(self, owner: object, capacity: float = DEFAULT_CAPACITY, overflow: Overflow = Overflow.WAIT) -> None:
        self.owner = owner
        self.capacity = capacity
        self.overflow = overflow
        self.dropped = 0
        self.closed = False
        self._queue: deque[Any] = deque()
        self._receivers = trio.lowlevel.ParkingLot()
        self._senders: trio.lowlevel.ParkingLot | None = None

    def __len__(self) -> int:
        return len(self._queue)

    def peek(self, limit: int) -> list[Any]:
        """The first *limit* queued messages, left in the queue (for inspection, never for reading)."""
        return list(itertools.islice(self._queue, limit))

    def configure(self, capacity: float | None = None, overflow: Overflow | None = None) -> None:
        """Change the bound or the overflow policy; messages already queued stay."""
        if capacity is not None:
            if capacity < 1:
                raise ValueError(f"mailbox capacity must be at least 1, got {capacity!r}")
            self.capacity = capacity
        if overflow is not None:
            if not isinstance(overflow, Overflow):
                raise TypeError(f"overflow must be an sv.Overflow, got {overflow!r}")
            self.overflow = overflow
        if self._senders:
            self._senders.unpark_all()

    def put_nowait(self, message: Any, *, force: bool = False) -> bool:
        """Queue *message* without waiting; return whether it was queued.

        A message to a closed mailbox (its process has exited) is dropped silently,
        as in Erlang. *force* bypasses the bound, for the runtime's own messages
        (`Down`, child exits, stop requests) which must never be lost.
        """
        if self.closed:
            return False
        if not force and len(self._queue) >= self.capacity:
            if self.overflow is Overflow.DROP:
                self.dropped += 1
                return False
            raise MailboxFull(self.owner, self.capacity)
        self._queue.append(message)
        if self._receivers:
            self._receivers.unpark()
        return True

    async def put(self, message: Any) -> bool:
        """Queue *message*, waiting for room if the policy is WAIT."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while not self.closed and len(self._queue) >= self.capacity and self.overflow is Overflow.WAIT:
            if self._senders is None:
                self._senders = trio.lowlevel.ParkingLot()
            await self._senders.park()
        queued = self.put_nowait(message)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return queued

    def get_nowait(self, match: Callable[[Any], bool] | None = None) -> Any:
        """Take the message `get` would take, or return `EMPTY` at once."""
        return self._take(match)

    async def get(self, match: Callable[[Any], bool] | None = None) -> Any:
        """Take the oldest message, or the oldest one *match* accepts, waiting for it."""
        await trio.lowlevel.checkpoint_if_cancelled()
        message = self._take(match)
        if message is not EMPTY:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return message
        while True:
            await self._receivers.park()
            message = self._take(match)
            if message is not EMPTY:
                return message

    def _take(self, match: Callable[[Any], bool] | None) -> Any:
        queue = self._queue
        if not queue:
            return EMPTY
        if match is None:
            message = queue.popleft()
        else:
            for index, candidate in enumerate(queue):
                if match(candidate):
                    del queue[index]
                    message = candidate
                    break
            else:
                return EMPTY
        if self._senders:
            self._senders.unpark()
        return message

    def remove(self, match: Callable[[Any], bool]) -> None:
        """Drop every queued message that *match* accepts (a demonitor's flush)."""
        self._queue = deque(m for m in self._queue if not match(m))

    def close(self) -> None:
        """Refuse further messages, drop the queued ones and wake waiting senders."""
        self.closed = True
        self._queue.clear()
        if self._senders:
            self._senders.unpark_all()
        self._receivers.unpark_all()
