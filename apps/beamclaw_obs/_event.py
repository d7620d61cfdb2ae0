"""One telemetry event: a name, a payload and when it happened."""

from __future__ import annotations

import time
from typing import Any, final

import attrs


@final
@attrs.frozen
class ObsEvent:
    """Names in use: agent_start, llm_request, llm_response, tool_call_start,
    tool_call_result, turn_complete, compaction_complete, approval_requested,
    approval_resolved, session_start, session_end, session_restored, session_reset,
    and the supervisor events (child_started, child_exited, child_restarted,
    start_failed, intensity_exceeded, auto_shutdown)."""

    name: str
    data: dict[str, Any]
    time: float = attrs.field(factory=time.time)
