"""Wake-ups through PostgreSQL: a committed notify reaches every listening process, a
rolled-back one never does, and a reconnection says "read the state again"."""

from __future__ import annotations

import pytest
import trio

import supervision as sv
from beamclaw_base import Notified, StoreConfig, Tx, listener, notify, notify_group, open_store
from beamclaw_base._store import Schema
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.postgres


async def _next(channel: str) -> Notified:
    message: Notified = await sv.receive(timeout=30, match=lambda m: isinstance(m, Notified) and m.channel == channel)
    return message


async def test_committed_notifications_arrive_and_a_restart_is_told_as_a_resync(
    postgres_store_config: StoreConfig, postgres_server: PostgresServer
) -> None:
    db = open_store(postgres_store_config, Schema("none", ()), sqlite_file=None)
    tree = sv.Supervisor([sv.ChildSpec("listener", listener, args=(postgres_store_config, ["bc_test"]))])
    try:
        with sv.as_process():
            sv.pg.join(notify_group("bc_test"))
            async with sv.open_supervisor(tree):
                assert await _next("bc_test") == Notified("bc_test", None)  # connected: read the state

                def rolled_back(tx: Tx) -> None:
                    notify(tx, "bc_test", "never")
                    raise ValueError("rolled back")

                with pytest.raises(ValueError, match="rolled back"):
                    await db.run(rolled_back)
                await db.run(lambda tx: notify(tx, "bc_test", "job-1"))
                assert await _next("bc_test") == Notified("bc_test", "job-1")

                await trio.to_thread.run_sync(postgres_server.restart, "immediate")
                assert await _next("bc_test") == Notified("bc_test", None)  # reconnected
                await db.run(lambda tx: notify(tx, "bc_test", "job-2"))
                assert await _next("bc_test") == Notified("bc_test", "job-2")
    finally:
        db.close()
