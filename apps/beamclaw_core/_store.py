"""The session store: the conversations, token budgets and pairings, owned by one process.

Every history change is committed before the session acknowledges it, so a crash of
anything (or a SIGKILL of the daemon) loses nothing that was acknowledged. The data
lives where ``[store]`` says (`beamclaw_base.StoreConfig`): SQLite's ``sessions.db`` in
the data dir by default, or PostgreSQL shared by every node; either way a schema newer
than this BeamClaw is refused rather than misread. What can take long (see
`StoreRequest.inline`) runs in a worker thread, so a slow disk never stalls the loop.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Final, TypeVar

import trio

import supervision as sv
from beamclaw_base import Database, Schema, Step, StoreConfig, StoreError, open_store

from ._pairing import PairingError
from ._runtime import RESTART_WAIT
from ._store_requests import StoreRequest

STORE: Final = "beamclaw_core.store"
#: The SQLite file in the data dir (the default backend).
SESSIONS_FILE: Final = "sessions.db"
R = TypeVar("R")

#: Version 1. ``pairing_links`` joined it without a version bump, so on SQLite it runs at
#: every open (``IF NOT EXISTS`` throughout) and reaches the files written before it.
_V1_SQLITE: Final = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    allowlist TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS token_usage (
    agent_id TEXT NOT NULL,
    day TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (agent_id, day)
);
CREATE TABLE IF NOT EXISTS pairing_links (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    linked_user TEXT NOT NULL,
    linked_at REAL NOT NULL,
    PRIMARY KEY (channel, user_id)
);
"""

#: The same tables in PostgreSQL: 64-bit integers (token counts, positions), double
#: precision for the epoch seconds, and byte order (``COLLATE "C"``) for the session ids,
#: which are looked up by prefix and listed in order.
_V1_POSTGRES: Final = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    allowlist TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS token_usage (
    agent_id TEXT NOT NULL,
    day TEXT NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (agent_id, day)
);
CREATE TABLE IF NOT EXISTS pairing_links (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    linked_user TEXT NOT NULL,
    linked_at double precision NOT NULL,
    PRIMARY KEY (channel, user_id)
);
"""

#: Version 2: pairing codes and the paired users.
_V2: Final = """
CREATE TABLE IF NOT EXISTS pairing_requests (
    channel TEXT NOT NULL,
    code TEXT NOT NULL,
    user_id TEXT NOT NULL,
    display TEXT NOT NULL DEFAULT '',
    created_at {real} NOT NULL,
    PRIMARY KEY (channel, code)
);
CREATE TABLE IF NOT EXISTS pairing_allow (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    approved_at {real} NOT NULL,
    PRIMARY KEY (channel, user_id)
);
"""

#: Version 3, the memory flush of maintenance: the messages before flushed_seq have been
#: through it; history_epoch counts the replacements of the history (which restart the count).
_V3: Final = """
ALTER TABLE sessions ADD COLUMN flushed_seq {integer} NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN history_epoch {integer} NOT NULL DEFAULT 0;
"""

#: Version 4: the tokens each agent's model calls used per UTC day, as the providers
#: reported them (estimated when one does not), whether or not the agent has a budget:
#: ``token_usage`` holds the budget's reservations, counted only under a budget.
_V4: Final = """
CREATE TABLE IF NOT EXISTS token_days (
    agent_id TEXT NOT NULL,
    day TEXT NOT NULL,
    prompt_tokens {integer} NOT NULL DEFAULT 0,
    completion_tokens {integer} NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, day)
);
"""

SCHEMA: Final = Schema(
    "core",
    (
        Step(_V1_SQLITE, _V1_POSTGRES, repeat=True),
        Step(_V2.format(real="REAL"), _V2.format(real="double precision")),
        Step(_V3.format(integer="INTEGER"), _V3.format(integer="BIGINT")),
        Step(_V4.format(integer="INTEGER"), _V4.format(integer="BIGINT")),
    ),
)
SCHEMA_VERSION: Final = SCHEMA.version

#: Write transactions between two checkpoints of SQLite's log (the only writes that fsync,
#: run in a worker thread), and one more when the store stops.
_CHECKPOINT_EVERY: Final = 200


def open_session_store(config: StoreConfig, data_dir: Path, *, checkpoint_every: int | None = None) -> Database:
    """The session store on *config*'s backend (SQLite: ``sessions.db`` in *data_dir*),
    created or migrated; blocks, `StoreError` if it cannot be used. The daemon's store
    process holds one; the command line opens its own for `beamclaw pair` and `agent delete`."""
    return open_store(config, SCHEMA, sqlite_file=data_dir / SESSIONS_FILE, checkpoint_every=checkpoint_every)


class Store(sv.GenServer):
    """``call(STORE, request)`` for a `StoreRequest`, on the session store of *config*."""

    async def init(self, config: StoreConfig, data_dir: Path) -> Database:
        sv.register(STORE)
        opening = functools.partial(open_session_store, config, data_dir, checkpoint_every=_CHECKPOINT_EVERY)
        return await trio.to_thread.run_sync(opening)

    async def handle_call(self, request: StoreRequest[Any], caller: sv.Caller, db: Database) -> sv.Reply | sv.NoReply:
        try:
            result = await db.run(request.run, write=request.write, inline=request.inline)
        except StoreError as exc:
            # A failed write (disk full, a constraint) is the caller's error to handle;
            # restarting the store would restart every session with it.
            refused = type(exc)(f"the session database refused {type(request).__name__}: {exc}")
            sv.reply_error(caller, refused)
            return sv.NoReply(db)
        except PairingError as exc:  # too many pending codes: the channel tells the stranger
            sv.reply_error(caller, exc)
            return sv.NoReply(db)
        return sv.Reply(result, db)

    async def terminate(self, reason: Any, db: Database) -> None:
        await trio.to_thread.run_sync(db.close)


async def store_call(request: StoreRequest[R], timeout: float | None = 30.0) -> R:
    """Run one request in the store process."""
    return await sv.call(STORE, request, timeout=timeout, restart_wait=RESTART_WAIT)
