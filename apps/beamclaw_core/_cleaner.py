"""The cleaner: conversations idle past ``session_ttl_seconds`` are stopped and deleted."""

from __future__ import annotations

import time
from typing import Any

import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit

from ._api import running_sessions, stop_session
from ._runtime import RESTART_WAIT
from ._session_messages import Status
from ._sessions import SESSIONS, CurrentRuntime
from ._store import store_call
from ._store_requests import DeleteSession, ExpiredSessions


async def sweep_expired() -> list[str]:
    """Stop and delete every session idle for longer than the TTL; return their ids."""
    runtime = await sv.call(SESSIONS, CurrentRuntime(), restart_wait=RESTART_WAIT)
    cutoff = time.time() - runtime.config.session_ttl_seconds
    persisted = await store_call(ExpiredSessions(cutoff)) if runtime.config.session_persistence else []
    expired = set(persisted)
    for sid in await running_sessions():
        try:
            status = await sv.call(runtime.session_dest(sid), Status())
        except sv.NoProc:
            continue
        if status.turns:
            expired.discard(sid)  # never pull a conversation from under a running turn
        elif status.updated_at < cutoff:
            expired.add(sid)
    for sid in sorted(expired):
        await stop_session(sid)
        if runtime.config.session_persistence:
            await store_call(DeleteSession(sid))
        emit("session_end", session_id=sid, reason="expired")
    if expired:
        logger.info("removed {} expired session(s)", len(expired))
    return sorted(expired)


async def cleaner(interval: float, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    while True:
        await trio.sleep(interval)
        await sweep_expired()
