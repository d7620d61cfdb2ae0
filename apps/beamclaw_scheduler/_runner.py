"""The runner: timers only. It sleeps until the next due time (or a poke from the store,
when a job was added or resumed, or a retry planned), claims what is due, and tells
the executor. It never runs a job and never waits on one, so a slow or crashing job
cannot make another late; and it keeps nothing the store does not have, so its crash
loses no timer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

import supervision as sv
from beamclaw_core import agent_names

from ._config import HeartbeatConfig
from ._jobs import CLAIM_BATCH, Clock
from ._requests import Claim, NextWake, SyncHeartbeats
from ._store import RUNNER, store_call

#: The longest sleep between looks at the store, whatever the next due time: a clock
#: that jumps (a suspended laptop, a corrected time) is noticed within this.
MAX_SLEEP: Final = 30.0
#: How often the heartbeat jobs are matched to the agents there are (a new agent gets one).
_AGENTS_EVERY: Final = 60.0


def heartbeat_plan(beat: HeartbeatConfig, data_dir: Path, default_agent: str) -> dict[str, float]:
    """agent -> heartbeat interval, for every agent (none when the heartbeat is off)."""
    if not beat.enabled:
        return {}
    return dict.fromkeys(agent_names(data_dir, default_agent), beat.default_interval_seconds)


async def runner(
    clock: Clock, plan: Callable[[], dict[str, float]], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    sv.register(RUNNER)
    task_status.started()
    agents_checked = -_AGENTS_EVERY
    while True:
        if trio.current_time() - agents_checked >= _AGENTS_EVERY:
            await store_call(SyncHeartbeats(plan()))
            agents_checked = trio.current_time()
        while await store_call(Claim(clock())) >= CLAIM_BATCH:
            await trio.lowlevel.checkpoint()
        wake = await store_call(NextWake())
        delay = MAX_SLEEP if wake is None else min(MAX_SLEEP, max(0.0, wake - clock()))
        try:
            await sv.receive(timeout=min(delay, _AGENTS_EVERY))
        except sv.ReceiveTimeout:
            continue
        while True:  # every poke queued meanwhile is answered by the one look that follows
            try:
                await sv.receive(timeout=0)
            except sv.ReceiveTimeout:
                break
