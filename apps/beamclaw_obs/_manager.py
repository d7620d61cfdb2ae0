"""The manager: scrubs each event once and fans it out to the backends that want it.

It also subscribes to the supervision runtime, so every child start, crash (with
its traceback), restart and give-up becomes an event like any other.
"""

from __future__ import annotations

from typing import Any, ClassVar

import supervision as sv

from ._emit import MANAGER, count_dropped, wanting
from ._event import ObsEvent
from ._scrubber import scrub_data


def _supervisor_event(event: sv.SupervisorEvent) -> ObsEvent:
    data: dict[str, Any] = {
        "supervisor": str(event.supervisor_name or event.supervisor),
        "child_id": str(event.child_id),
        "pid": str(event.pid) if event.pid is not None else None,
    }
    if event.reason is not None:
        data["reason"] = repr(event.reason)
    if event.kind is sv.EventKind.CHILD_EXITED:
        data["crashed"] = not sv.is_normal(event.reason)
        if data["crashed"]:
            data["traceback"] = event.traceback
    if event.overrun is not None:
        data["overrun_seconds"] = round(event.overrun, 1)
    return ObsEvent(event.kind.value, data)


class Manager(sv.GenServer):
    mailbox_capacity: ClassVar[float] = 10_000
    mailbox_overflow: ClassVar[sv.Overflow] = sv.Overflow.DROP

    def init(self) -> None:
        sv.register(MANAGER)
        sv.subscribe(sv.self())

    def handle_cast(self, message: object, state: None) -> sv.NoReply:
        if isinstance(message, ObsEvent):
            self._fan_out(message)
        return sv.NoReply(state)

    def handle_info(self, message: object, state: None) -> sv.NoReply:
        if isinstance(message, sv.SupervisorEvent):
            self._fan_out(_supervisor_event(message))
        return sv.NoReply(state)

    @staticmethod
    def _fan_out(event: ObsEvent) -> None:
        backends = wanting(event.name)
        if not backends:
            return
        clean = ObsEvent(event.name, scrub_data(event.data), event.time)
        for pid in backends:
            if not sv.cast(pid, clean):
                count_dropped()
