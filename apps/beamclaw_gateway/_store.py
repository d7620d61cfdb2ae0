"""The gateway's store process: it opens the gateway's `Database` and holds it for the
Telegram channel, the webhook route and the turns' `Pending` rows (`STORE`), or for the
chat route's idempotency keys (`KEYS`, a second one beside the HTTP server, which runs
without Telegram too).

One `Database` for all of Telegram, instead of a connection opened per webhook update and
per answer. It starts before the channel (first in the Telegram subtree, rest_for_one),
so a channel never outlives the store it writes to, and closes it when it stops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import attrs
import trio

import supervision as sv
from beamclaw_base import Database, StoreConfig, open_store

from ._telegram_ledger import SCHEMA

STORE: Final = "beamclaw_gateway.store"
#: The store process of the HTTP routes (the idempotency keys).
KEYS: Final = "beamclaw_gateway.keys"
#: Seconds a caller waits for the store process while it is being restarted.
_RESTART_WAIT: Final = 2.0


@attrs.frozen
class OwnedDatabase(sv.Request[Database]):
    """The store's `Database` (the store process alone closes it)."""


class GatewayStore(sv.GenServer):
    """Start it with the SQLite file (``gateway.db``), the configured store and its name."""

    async def init(self, path: Path, store: StoreConfig, name: str = STORE) -> Database:
        sv.register(name)
        # FULL: a claim must survive a power cut, or the answer it guards could be sent twice.
        return await trio.to_thread.run_sync(lambda: open_store(store, SCHEMA, sqlite_file=path, synchronous="FULL"))

    def handle_call(self, request: OwnedDatabase, caller: sv.Caller, db: Database) -> sv.Reply:
        match request:
            case OwnedDatabase():
                return sv.Reply(db, db)
        raise ValueError(f"unknown request {request!r}")

    async def terminate(self, reason: Any, db: Database) -> None:
        await trio.to_thread.run_sync(db.close)


async def gateway_database(name: str = STORE) -> Database:
    """The gateway's `Database`, from its store process *name*."""
    return await sv.call(name, OwnedDatabase(), restart_wait=_RESTART_WAIT)
