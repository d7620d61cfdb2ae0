"""`emit`: hand an event to the manager without ever blocking or raising.

Observability must never slow down or break the code it watches, so an event that
cannot be delivered (no manager running yet, its mailbox full) is dropped and counted.
An event no backend wants (`Backend.wants`: a DEBUG event when the log writes INFO and
up, say) costs a look at the backends and nothing more: it is neither sent, nor
scrubbed, nor counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import supervision as sv

from ._event import ObsEvent

MANAGER: Final = "beamclaw_obs.manager"
BACKENDS: Final = "beamclaw_obs.backends"

_dropped = 0
#: What each backend wants (its `Backend.wants`), by pid; a member of BACKENDS not here wants every event.
_interests: dict[sv.Pid, Callable[[str], bool]] = {}


def declare_interest(pid: sv.Pid, wants: Callable[[str], bool] | None) -> None:
    """Say which events the backend *pid* wants (None: forget what it said)."""
    if wants is None:
        _interests.pop(pid, None)
    else:
        _interests[pid] = wants


def wanting(event: str) -> list[sv.Pid]:
    """The backends that want events called *event*."""
    return [pid for pid in sv.pg.members(BACKENDS) if _wants(pid, event)]


def _wants(pid: sv.Pid, event: str) -> bool:
    """Whether the backend *pid* wants *event*: yes if it said nothing, or if asking it fails
    (a backend's bug must cost a look at the event, never every event nor the manager)."""
    wants = _interests.get(pid)
    if wants is None:
        return True
    try:
        return wants(event)
    except Exception:  # noqa: BLE001 - see the docstring
        return True


def emit(event: str, /, **data: Any) -> None:
    """Send *event* with its *data* to every backend that wants it; never blocks, never raises."""
    try:
        if not wanting(event) and sv.whereis(MANAGER) is not None:
            return  # delivered to every backend that wants it: none
        delivered = sv.cast(MANAGER, ObsEvent(event, data))
    except Exception:  # noqa: BLE001 - no manager, or not inside a running node: drop, as documented
        delivered = False
    if not delivered:
        count_dropped()


def count_dropped(n: int = 1) -> None:
    global _dropped
    _dropped += n


def dropped_events() -> int:
    """Events dropped since the process started (no manager, or a full mailbox)."""
    return _dropped
