"""Maintenance: what should last of a conversation is kept before it is lost (opt-in).

With ``[core.maintenance] enabled``, every ``scan_interval_seconds`` the maintenance
process runs the memory flush (the hidden model call compaction makes, see `_memory`)
over the messages of a conversation that have not been through it yet:

- before expiry: a conversation ``pre_expiry_minutes`` from its TTL. The cleaner
  deletes only conversations whose every message has been through the flush, so one
  whose flush fails (the model down) is kept and tried again at the next scan;
- at night: once a night, within the UTC ``quiet_hours``, the conversations with at
  least ``nightly_min_messages`` messages not flushed yet.

How far each conversation has been flushed is in the store (``flushed_seq``), so a
restart neither repeats a flush nor skips one. The first scan comes one interval after
the process starts: a crash in a scan restarts this process alone (it is the last child
of core's tree), at most once an interval, and never reaches the sessions.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit

from ._config import MaintenanceConfig
from ._http_client import owned_http_client
from ._memory import flush_memory
from ._runtime import HTTP_CLIENT, Runtime
from ._session import SessionInfo
from ._sessions import this_node
from ._store import store_call
from ._store_requests import FlushCandidates, LoadUnflushed, MarkFlushed
from ._workspace import user_workspace

MAINTENANCE: Final = "beamclaw_core.maintenance"


def in_quiet_hours(hour: int, quiet_hours: tuple[int, int]) -> bool:
    """Whether the UTC *hour* is within ``[start, end)``, which may span midnight."""
    start, end = quiet_hours
    return start <= hour < end if start < end else hour >= start or hour < end


def night_of(now: float, quiet_hours: tuple[int, int]) -> datetime.date:
    """The night *now* belongs to: the UTC date at which its quiet hours began."""
    when = datetime.datetime.fromtimestamp(now, datetime.UTC)
    return (when - datetime.timedelta(hours=quiet_hours[0])).date()


@attrs.define
class _Scanner:
    """One scan's work, and the night already flushed (in memory: after a restart the
    store's positions make a second nightly pass flush only what is new)."""

    runtime: Runtime
    clock: Callable[[], float]
    flushed_night: datetime.date | None = None

    async def flush(self, session_id: str) -> bool:
        """Run the memory flush over what *session_id* has not flushed yet; whether it is
        done (a conversation gone meanwhile is)."""
        part = await store_call(LoadUnflushed(session_id))
        if part is None:
            return True
        config = self.runtime.config
        where = config.agentic_loop.memory_flush
        if where != "off" and part.messages:
            info = SessionInfo(part.session_id, part.user_id, part.agent_id, part.channel)
            workspace = user_workspace(
                self.runtime.data_dir, info.agent_id, info.user_id, single_user=config.single_user(info.agent_id)
            )
            summariser = self.runtime.summariser(await owned_http_client(HTTP_CLIENT), info.agent_id)
            if not await flush_memory(info, workspace, summariser, part.messages, where):
                return False
        await store_call(MarkFlushed(session_id, part.epoch, part.end))
        return True

    async def scan(self) -> None:
        """The pre-expiry flushes due now, then the nightly one if its hour has come."""
        upkeep = self.runtime.config.maintenance
        if not upkeep.enabled or not self.runtime.config.session_persistence:
            return
        now = self.clock()
        await self._pre_expiry(upkeep, now)
        if in_quiet_hours(datetime.datetime.fromtimestamp(now, datetime.UTC).hour, upkeep.quiet_hours):
            night = night_of(now, upkeep.quiet_hours)
            if night != self.flushed_night:
                await self._nightly(upkeep)
                self.flushed_night = night

    async def _pre_expiry(self, upkeep: MaintenanceConfig, now: float) -> None:
        due_before = now - self.runtime.config.session_ttl_seconds + upkeep.pre_expiry_minutes * 60
        for session_id in await store_call(FlushCandidates(1, due_before, await this_node())):
            if await self.flush(session_id):
                emit("maintenance_pre_expiry_flush", session_id=session_id)

    async def _nightly(self, upkeep: MaintenanceConfig) -> None:
        due = await store_call(FlushCandidates(upkeep.nightly_min_messages, float("inf"), await this_node()))
        emit("maintenance_nightly_start", session_count=len(due))
        flushed = 0
        for session_id in due:
            if await self.flush(session_id):
                flushed += 1
        if flushed < len(due):
            logger.warning("the nightly flush failed for {} conversation(s): tried again later", len(due) - flushed)
        emit("maintenance_nightly_complete", flushed_count=flushed)


async def maintenance(
    runtime: Runtime, clock: Callable[[], float], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """The maintenance process: a scan every ``scan_interval_seconds`` (read anew each
    time, so a reload applies); *clock* is the wall clock (UTC seconds)."""
    sv.register(MAINTENANCE)
    scanner = _Scanner(runtime, clock)  # the HTTP client asked for by the first flush
    task_status.started()
    while True:
        await trio.sleep(runtime.config.maintenance.scan_interval_seconds)
        await scanner.scan()
