"""The cleaner: conversations idle past ``session_ttl_seconds`` are stopped and deleted.

With ``[core.maintenance] enabled``, only those whose every message has been through
the memory flush (see `_maintenance`): the others wait for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit

from ._api import running_sessions, stop_session
from ._runtime import RESTART_WAIT
from ._session_messages import Status
from ._sessions import SESSIONS, CurrentRuntime, this_node
from ._store import store_call
from ._store_requests import DeleteSession, ExpiredSessions


async def sweep_expired(now: float | None = None) -> list[str]:
    """Stop and delete every session idle for longer than the TTL at *now* (the wall
    clock's now by default); return their ids."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    cutoff = (time.time() if now is None else now) - runtime.config.session_ttl_seconds
    persistence = runtime.config.session_persistence
    flushed_only = persistence and runtime.config.maintenance.enabled
    node = await this_node()
    persisted = await store_call(ExpiredSessions(cutoff, flushed_only, node)) if persistence else []
    if flushed_only:
        every: list[str] = await store_call(ExpiredSessions(cutoff, node=node))
        if waiting := len(every) - len(persisted):
            logger.info("{} expired session(s) kept until their memory flush is done", waiting)
    expired = set(persisted)
    for sid in await running_sessions():
        try:
            status = await sv.call(runtime.session_dest(sid), Status())
        except sv.NoProc:
            continue
        if status.turns:
            expired.discard(sid)  # never pull a conversation from under a running turn
        elif status.updated_at < cutoff and not flushed_only:
            expired.add(sid)
    for sid in sorted(expired):
        await stop_session(sid)
        if runtime.config.session_persistence:
            await store_call(DeleteSession(sid))
        emit("session_end", session_id=sid, reason="expired")
    if expired:
        logger.info("removed {} expired session(s)", len(expired))
    return sorted(expired)


async def cleaner(interval: float, clock: Callable[[], float], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A sweep every *interval* seconds; *clock* is the wall clock."""
    task_status.started()
    while True:
        await trio.sleep(interval)
        await sweep_expired(clock())
