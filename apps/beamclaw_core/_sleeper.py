"""Conversations that sleep when idle, as Erlang processes hibernate.

A conversation's tree (supervisor, session, loop) costs tens of KiB while it runs;
everything it holds is in SQLite already. After ``core.maintenance.idle_seconds``
without a call, the sleeper asks the session whether it is idle (no run, no queue, no
approval waiting); a session that is says so and refuses every later call as if it
were gone, and the sleeper stops its tree. A message that arrives meanwhile is retried
by its sender (`_api._session_call`) against the tree started anew, so it wakes the
conversation with its history, and nothing sent is lost.

Sessions tell the sleeper when they start and when a run ends (a cast: the sleeper
never slows them); it keeps one deadline per session in a heap, so a thousand sleeping
sessions cost nothing until one is due. A restarted sleeper gives every running
session a fresh deadline.
"""

from __future__ import annotations

import contextlib
import heapq
from typing import Any, Final

import trio

import supervision as sv
from beamclaw_obs import emit

from ._runtime import Runtime

SLEEPER: Final = "beamclaw_core.sleeper"
#: Sessions checked in one go when many are due at once (the rest a moment later).
_BATCH: Final = 200


def tell_sleeper(session_id: str) -> None:
    """The session was active now (it started, or a run ended): its idle time counts from here."""
    with contextlib.suppress(sv.NoProc, sv.MailboxFull):
        sv.send(SLEEPER, ("active", session_id))


async def sleeper(runtime: Runtime, sessions: str, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """*sessions* is the name of the sessions process, which lists and stops the trees."""
    sv.register(SLEEPER)
    deadlines: dict[str, float] = {}
    heap: list[tuple[float, str]] = []

    def schedule(sid: str, after: float) -> None:
        at = trio.current_time() + after
        deadlines[sid] = at
        heapq.heappush(heap, (at, sid))

    idle = runtime.config.maintenance.idle_seconds
    for sid in await sv.call(sessions, "running"):
        schedule(sid, idle)
    task_status.started()
    while True:
        idle = runtime.config.maintenance.idle_seconds
        wait = None if not heap or not idle else max(0.0, heap[0][0] - trio.current_time())
        try:
            message = await sv.receive(timeout=wait)
        except sv.ReceiveTimeout:
            message = None
        if message is not None:
            _, sid = message
            schedule(sid, idle)
            continue
        for _ in range(_BATCH):
            if not heap or heap[0][0] > trio.current_time():
                break
            at, sid = heapq.heappop(heap)
            if deadlines.get(sid) != at:
                continue  # pushed back by a later activity
            del deadlines[sid]
            try:
                left = await sv.call(runtime.session_dest(sid), ("sleep_if_idle", idle), timeout=5.0)
            except (sv.NoProc, sv.ProcessExited, sv.CallTimeout):
                continue  # gone already (stopped, expired), or too busy to ask: it reports when done
            if left is None:
                continue  # a run is in progress: the session reports when it ends
            if left > 0:
                schedule(sid, left)
                continue
            await sv.call(sessions, ("stop", sid))
            emit("session_sleep", session_id=sid, idle_seconds=idle)
