"""The base of an event backend: a process in the backends group with a dropping mailbox."""

from __future__ import annotations

from typing import Any, ClassVar

import supervision as sv

from ._emit import BACKENDS, declare_interest
from ._event import ObsEvent


class Backend(sv.GenServer):
    """Subclass and override `handle_event`; start it under any supervisor.

    The mailbox drops the newest event when full (the manager counts it), because a
    slow backend must never make an emitter wait.
    """

    mailbox_capacity: ClassVar[float] = 10_000
    mailbox_overflow: ClassVar[sv.Overflow] = sv.Overflow.DROP

    def init(self, *args: Any) -> Any:
        state = self.setup(*args)
        declare_interest(sv.self(), self.wants)
        sv.pg.join(BACKENDS)
        return state

    def wants(self, event: str) -> bool:
        """Whether events called *event* are worth sending here (asked at every emit, from the
        emitter's task: it must be cheap and must not block); by default every event is."""
        return True

    def terminate(self, reason: Any, state: Any) -> Any:
        declare_interest(sv.self(), None)
        return None

    def setup(self, *args: Any) -> Any:
        """Build the backend's state; by default none."""
        return None

    def handle_event(self, event: ObsEvent, state: Any) -> Any:
        raise NotImplementedError

    def handle_cast(self, message: object, state: Any) -> sv.NoReply:
        if isinstance(message, ObsEvent):
            new_state = self.handle_event(message, state)
            return sv.NoReply(state if new_state is None else new_state)
        return sv.NoReply(state)
