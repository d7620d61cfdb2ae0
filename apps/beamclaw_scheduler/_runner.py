"""The runner: timers only. It sleeps until the next due time (or a poke from the store,
when a job was added or resumed, or a retry planned), claims what is due, and tells
the executor. It never runs a job and never waits on one, so a slow or crashing job
cannot make another late; and it keeps nothing the store does not have, so its crash
loses no timer.

In a cluster a job added through another node wakes this runner too: the store's
transaction notifies `WAKE_CHANNEL`, and the listener sends every runner a `Notified`
(None: the listener connected again and what was sent meanwhile is unknown; the runner
reads the store again either way). It also asks the store to recover the runs of nodes
that died, every third of the lease, since a node can die while the others run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

import supervision as sv
from beamclaw_base import notify_group
from beamclaw_core import agent_names

from ._config import HeartbeatConfig
from ._jobs import CLAIM_BATCH, WAKE_CHANNEL, Clock
from ._requests import Claim, NextWake, RecoverRuns, SyncHeartbeats
from ._store import RUNNER, store_call

#: The longest sleep between looks at the store, whatever the next due time: a clock
#: that jumps (a suspended laptop, a corrected time) is noticed within this.
MAX_SLEEP: Final = 30.0
#: How often the heartbeat jobs are matched to the agents there are (a new agent gets one).
_AGENTS_EVERY: Final = 60.0
#: The wait when something is still due right after a claim: another node is claiming it
#: at this moment, or this node may not claim now (the cluster took it for dead and it is
#: joining again). It looks again after this, never at once in a loop.
_STILL_DUE: Final = 1.0


def heartbeat_plan(beat: HeartbeatConfig, data_dir: Path, default_agent: str) -> dict[str, float]:
    """agent -> heartbeat interval, for every agent (none when the heartbeat is off)."""
    if not beat.enabled:
        return {}
    return dict.fromkeys(agent_names(data_dir, default_agent), beat.default_interval_seconds)


async def runner(
    clock: Clock, plan: Callable[[], dict[str, float]], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    sv.register(RUNNER)
    sv.pg.join(notify_group(WAKE_CHANNEL))
    task_status.started()
    # At start the heartbeats are set from this node's plan; later only what changes in it.
    synced: dict[str, float] | None = None
    agents_checked = -_AGENTS_EVERY
    recover_every = await store_call(RecoverRuns())
    recovered = trio.current_time()
    while True:
        now = trio.current_time()
        if recover_every is not None and now - recovered >= recover_every:
            await store_call(RecoverRuns())
            recovered = now
        if now - agents_checked >= _AGENTS_EVERY:
            wanted = plan()
            if wanted != synced:
                dropped = None if synced is None else frozenset(synced.keys() - wanted.keys())
                await store_call(SyncHeartbeats(wanted, dropped))
                synced = wanted
            agents_checked = now
        while await store_call(Claim(clock())) >= CLAIM_BATCH:
            await trio.lowlevel.checkpoint()
        wake = await store_call(NextWake())
        left = MAX_SLEEP if wake is None else wake - clock()
        delay = min(MAX_SLEEP, left) if left > 0 else _STILL_DUE
        if recover_every is not None:
            delay = min(delay, max(0.0, recovered + recover_every - trio.current_time()))
        try:
            await sv.receive(timeout=min(delay, _AGENTS_EVERY))
        except sv.ReceiveTimeout:
            continue
        while True:  # every poke queued meanwhile is answered by the one look that follows
            try:
                await sv.receive(timeout=0)
            except sv.ReceiveTimeout:
                break
