"""The session store: SQLite (WAL) in the data dir, owned by one process.

Every history change is committed before the session acknowledges it, so a crash
of anything (or a SIGKILL of the daemon) loses nothing that was acknowledged. The
database carries its format version in ``PRAGMA user_version`` and refuses a newer
one rather than misread it. What can take long (see `StoreRequest.inline`) reaches
SQLite through a worker thread, so a slow disk never stalls the Trio loop; one process
owns the connection, so writes are serialised without locks.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio
from loguru import logger

import supervision as sv

from ._runtime import RESTART_WAIT
from ._store_requests import StoreRequest

STORE: Final = "beamclaw_core.store"
SCHEMA_VERSION: Final = 3
R = TypeVar("R")

_SCHEMA: Final = """
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

#: What each version adds to the one before; opening an older file applies the rest.
_MIGRATIONS: Final = {
    2: """
CREATE TABLE IF NOT EXISTS pairing_requests (
    channel TEXT NOT NULL,
    code TEXT NOT NULL,
    user_id TEXT NOT NULL,
    display TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    PRIMARY KEY (channel, code)
);
CREATE TABLE IF NOT EXISTS pairing_allow (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    approved_at REAL NOT NULL,
    PRIMARY KEY (channel, user_id)
);
""",
    # The memory flush of maintenance: the messages before flushed_seq have been through it;
    # history_epoch counts the replacements of the history (which restart the count).
    3: """
ALTER TABLE sessions ADD COLUMN flushed_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN history_epoch INTEGER NOT NULL DEFAULT 0;
""",
}


@contextlib.contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction on an autocommit connection (``isolation_level=None``), taken
    at once (``BEGIN IMMEDIATE``: no upgrade from a read to fail half-way), rolled back
    when the block raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class StoreError(Exception):
    """The database cannot be used (a newer format, a corrupt file); the message says which."""


def open_database(path: Path | None) -> sqlite3.Connection:
    """Open (creating or upgrading) the session database; `StoreError` if it cannot be used.

    *path* None keeps it in memory.
    """
    if path is not None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    db = sqlite3.connect(
        ":memory:" if path is None else path, check_same_thread=False, isolation_level=None, timeout=10.0
    )
    try:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path} has format version {version}, newer than this BeamClaw's {SCHEMA_VERSION}; "
                "upgrade BeamClaw or move the file away"
            )
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a crash or kill of the process; only losing power can
        # lose the last commits. FULL would add an fsync to every message.
        db.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints (the only writes that fsync) are run by the store in a worker thread.
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(_SCHEMA)
        for step in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            db.executescript(_MIGRATIONS[step])
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreError(f"cannot open the session database {path}: {exc}") from None
    if path is not None:
        path.chmod(0o600)
    return db


_CHECKPOINT_EVERY: Final = 200


def _checkpoint_now(db: sqlite3.Connection) -> None:
    # The pragma answers a row: read it, so no statement is left in progress (a commit
    # made while one is fails with "cannot commit transaction - SQL statements in progress").
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


@attrs.define
class _Db:
    connection: sqlite3.Connection
    writes_since_checkpoint: int = 0


class Store(sv.GenServer):
    """``call(STORE, request)`` for a `StoreRequest`; *path* None keeps the data in memory only."""

    async def init(self, path: Path | None) -> _Db:
        sv.register(STORE)
        return _Db(await trio.to_thread.run_sync(open_database, path))

    async def handle_call(self, request: StoreRequest[Any], caller: sv.Caller, db: _Db) -> sv.Reply | sv.NoReply:
        try:
            if request.inline:
                result = request.run(db.connection)
                db.writes_since_checkpoint += 1
            else:
                result = await trio.to_thread.run_sync(request.run, db.connection)
        except sqlite3.Error as exc:
            # A failed write (disk full, a constraint) is the caller's error to handle;
            # restarting the store would restart every session with it.
            sv.reply_error(caller, StoreError(f"the session database refused {type(request).__name__}: {exc}"))
            return sv.NoReply(db)
        if db.writes_since_checkpoint >= _CHECKPOINT_EVERY:
            await self._checkpoint(db)
        return sv.Reply(result, db)

    @staticmethod
    async def _checkpoint(db: _Db) -> None:
        db.writes_since_checkpoint = 0
        try:
            await trio.to_thread.run_sync(_checkpoint_now, db.connection)
        except sqlite3.Error as exc:
            logger.warning("session database checkpoint failed: {}", exc)

    async def terminate(self, reason: Any, db: _Db) -> None:
        await self._checkpoint(db)
        await trio.to_thread.run_sync(db.connection.close)


async def store_call(request: StoreRequest[R], timeout: float | None = 30.0) -> R:
    """Run one request in the store process."""
    return await sv.call(STORE, request, timeout=timeout, restart_wait=RESTART_WAIT)
