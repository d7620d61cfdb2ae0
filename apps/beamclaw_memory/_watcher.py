"""The file watcher: picks up edits made by hand (or by a command the agent ran).

Every ``watch_interval_seconds`` each running index compares its workspace files'
signatures (inode, size, mtime; links and special files skipped) with what it indexed,
and indexes what changed. Polling a few stat calls per agent costs nothing and follows
no link; an index that crashed since the last tick is started again here.
"""

from __future__ import annotations

import contextlib
from typing import Any

import trio

import supervision as sv

from ._agents import AGENTS, running_agents
from ._index import index_name
from ._messages import StartedIndexes, StartIndex, Sync


async def watch(interval: float, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    while True:
        await trio.sleep(interval)
        running = set(running_agents())
        with contextlib.suppress(Exception):
            for agent in set(await sv.call(AGENTS, StartedIndexes(), timeout=120.0)) - running:
                # crashed since it was started: start it again (it repairs itself)
                with contextlib.suppress(Exception):
                    await sv.call(AGENTS, StartIndex(agent), timeout=120.0)
        for agent in running:
            sv.cast(index_name(agent), Sync())
