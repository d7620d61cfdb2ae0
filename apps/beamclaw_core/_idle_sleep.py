"""Conversations that sleep when idle, as Erlang processes hibernate.

A conversation's tree (supervisor, session, loop) costs tens of KiB while it runs;
everything it holds is in SQLite already. After ``core.maintenance.idle_seconds``
without a call, the sleeper asks the session whether it is idle (no turn, no queue, no
approval waiting); a session that is says so and refuses every later call as if it
were gone, and the sleeper stops its tree. A message that arrives meanwhile is retried
by its sender (`_api._session_call`) against the tree started anew, so it wakes the
conversation with its history, and nothing sent is lost.

Sessions tell the sleeper when they start and when a turn ends (a message into an
unbounded mailbox: the sleeper never slows them); it keeps one deadline per session in
a heap, so a thousand sessions cost nothing until one is due. Every `_RESYNC` seconds,
and when it restarts, it gives each running session it does not know a deadline, so
no conversation stays awake for ever whatever was missed. Once `TRIM_AFTER` trees have
stopped and none is due, and when the last awake one has, it gives the freed heap back to
the system (`_heap`).
"""

from __future__ import annotations

import contextlib
import heapq
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import attrs
import trio

import supervision as sv
from beamclaw_obs import emit

from ._heap import TRIM_AFTER, trim_heap
from ._runtime import Runtime
from ._session_messages import IdleCompact, SleepIfIdle

SLEEPER: Final = "beamclaw_core.sleeper"
#: Sessions checked in one go when many are due at once (the rest a moment later).
_BATCH: Final = 200
#: Seconds between looks for running sessions without a deadline.
_RESYNC: Final = 60.0


@attrs.frozen
class _Active:
    """The session *session_id* was active now."""

    session_id: str


@attrs.frozen
class _Moved:
    """Another node owns the conversation *session_id* now: stop its tree here."""

    session_id: str


def tell_moved(session_id: str) -> None:
    """The session lost its conversation to another node: its tree is to stop at once."""
    with contextlib.suppress(sv.NoProc, sv.MailboxFull):
        sv.send(SLEEPER, _Moved(session_id))


def tell_sleeper(session_id: str) -> None:
    """The session was active now (it started, or a turn ended): its idle time counts from here."""
    with contextlib.suppress(sv.NoProc, sv.MailboxFull):
        sv.send(SLEEPER, _Active(session_id))


async def sleeper(
    runtime: Runtime,
    running: Callable[[], list[str]],
    stop: Callable[[str], Awaitable[bool]],
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """*running* lists the conversations whose tree runs, *stop* stops one's tree."""
    sv.register(SLEEPER)
    sv.set_mailbox(capacity=math.inf)
    deadlines: dict[str, float] = {}
    heap: list[tuple[float, str]] = []
    #: Sessions offered an idle compaction since their last activity.
    compacted: set[str] = set()
    #: Trees stopped since the heap was last trimmed.
    stopped = 0

    def schedule(sid: str, after: float) -> None:
        at = trio.current_time() + after
        deadlines[sid] = at
        heapq.heappush(heap, (at, sid))

    async def resync() -> float:
        for sid in running():
            if sid not in deadlines:
                schedule(sid, runtime.config.maintenance.idle_seconds)
        return trio.current_time() + _RESYNC

    next_resync = await resync()
    task_status.started()
    while True:
        idle = runtime.config.maintenance.idle_seconds
        if idle and trio.current_time() >= next_resync:
            next_resync = await resync()
        wait = None if not idle else max(0.0, min(heap[0][0] if heap else math.inf, next_resync) - trio.current_time())
        try:
            message = await sv.receive(timeout=wait)
        except sv.ReceiveTimeout:
            message = None
        if isinstance(message, _Active):
            compacted.discard(message.session_id)
            schedule(message.session_id, idle)
            continue
        if isinstance(message, _Moved):
            deadlines.pop(message.session_id, None)
            await stop(message.session_id)
            emit("session_moved", session_id=message.session_id)
            continue
        for _ in range(_BATCH):
            if not heap or heap[0][0] > trio.current_time():
                break
            at, sid = heapq.heappop(heap)
            if deadlines.get(sid) != at:
                continue  # pushed back by a later activity
            del deadlines[sid]
            upkeep = runtime.config.maintenance
            if upkeep.idle_compaction and sid not in compacted:
                # First the loop summarises a long history; the conversation sleeps after
                # one more idle period (the compaction is not activity: it sleeps then).
                compacted.add(sid)
                with contextlib.suppress(sv.NoProc, sv.MailboxFull):
                    sv.cast(runtime.loop_dest(sid), IdleCompact(upkeep.compact_above_pct, upkeep.compact_to_pct))
                schedule(sid, idle)
                continue
            try:
                left = await sv.call(runtime.session_dest(sid), SleepIfIdle(idle), timeout=5.0)
            except (sv.NoProc, sv.ProcessExited, sv.CallTimeout):
                continue  # gone already (stopped, expired), or too busy to ask: it reports when done
            if left is None:
                continue  # a turn is in progress: the session reports when it ends
            if left > 0:
                schedule(sid, left)
                continue
            compacted.discard(sid)
            await stop(sid)
            stopped += 1
            emit("session_sleep", session_id=sid, idle_seconds=idle)
        # After a wave (TRIM_AFTER trees, none due now), and when the last awake one sleeps.
        if (stopped >= TRIM_AFTER and not (heap and heap[0][0] <= trio.current_time())) or (stopped and not heap):
            released = await trim_heap()
            emit("heap_trimmed", sessions=stopped, released_kib=released)
            stopped = 0
