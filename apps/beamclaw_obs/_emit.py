"""`emit`: hand an event to the manager without ever blocking or raising.

Observability must never slow down or break the code it watches, so an event that
cannot be delivered (no manager running yet, its mailbox full) is dropped and counted.
"""

from __future__ import annotations

from typing import Any, Final

import supervision as sv

from ._event import ObsEvent

MANAGER: Final = "beamclaw_obs.manager"
BACKENDS: Final = "beamclaw_obs.backends"

_dropped = 0


def emit(event: str, /, **data: Any) -> None:
    """Send *event* with its *data* to every backend; never blocks, never raises."""
    try:
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
