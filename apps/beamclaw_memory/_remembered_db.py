"""The kept documents' one database on PostgreSQL, shared by every agent's index.

Each agent's index is a process of its own, started and restarted on demand; opening a
connection pool for each would multiply the memory app's connections by its agents.
So one small process opens the database when the app starts, hands it to each index
that asks (`SharedDatabase`), and closes it when the app stops. It outlives every
index: it does nothing else, so it has nothing to crash on.

On SQLite each agent keeps its own file (see `_remembered`): there is nothing to share,
and this process reports `supervision.IGNORE`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import trio

import supervision as sv
from beamclaw_base import Database, StoreConfig

from ._messages import SharedDatabase
from ._remembered import open_shared

REMEMBERED_DB: Final = "beamclaw_memory.remembered"


class RememberedDatabase(sv.GenServer):
    async def init(self, store: StoreConfig) -> Database | Any:
        db = await trio.to_thread.run_sync(open_shared, store)
        return sv.IGNORE if db is None else db

    def handle_call(self, request: SharedDatabase, caller: sv.Caller, state: Database) -> sv.Reply:
        return sv.Reply(state, state)

    def terminate(self, reason: Any, state: Database) -> None:
        with contextlib.suppress(Exception):
            state.close()


async def shared_database(store: StoreConfig) -> Database | None:
    """The memory process's database for kept documents, or None where each agent has its own."""
    if store.backend == "sqlite":
        return None
    db: Database = await sv.call(REMEMBERED_DB, SharedDatabase())
    return db
