"""The session store: SQLite (WAL) in the data dir, owned by one process.

Every history change is committed before the session acknowledges it, so a crash
of anything (or a SIGKILL of the daemon) loses nothing that was acknowledged. The
database carries its format version in ``PRAGMA user_version`` and refuses a newer
one rather than misread it. SQLite is reached through a worker thread, so a slow
disk never stalls the Trio loop; one process owns the connection, so writes are
serialised without locks.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import trio
from loguru import logger

import supervision as sv

from . import _pairing as pairing
from ._messages import Message
from ._runtime import RESTART_WAIT

STORE: Final = "beamclaw_core.store"
SCHEMA_VERSION: Final = 2
T = TypeVar("T")

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


@attrs.frozen
class StoredSession:
    id: str
    user_id: str
    agent_id: str
    channel: str
    updated_at: float
    allowlist: frozenset[str]
    history: list[Message]


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


def _load(db: sqlite3.Connection, session_id: str) -> StoredSession | None:
    row = db.execute(
        "SELECT id, user_id, agent_id, channel, updated_at, allowlist FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return None
    rows = db.execute("SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)).fetchall()
    history = [Message.from_record(text) for (text,) in rows]
    sid, user_id, agent_id, channel, updated_at, allowlist = row
    return StoredSession(sid, user_id, agent_id, channel, updated_at, frozenset(json.loads(allowlist)), history)


def _upsert(db: sqlite3.Connection, info: Any, allowlist: Iterable[str]) -> None:
    now = time.time()
    db.execute(
        "INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at, allowlist) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, "
        "allowlist = excluded.allowlist",
        (info.id, info.user_id, info.agent_id, info.channel, now, now, json.dumps(sorted(allowlist))),
    )


def _append(db: sqlite3.Connection, info: Any, allowlist: Iterable[str], start: int, messages: list[Message]) -> None:
    with db:
        db.execute("BEGIN")
        _upsert(db, info, allowlist)
        db.executemany(
            "INSERT INTO messages (session_id, seq, message) VALUES (?, ?, ?)",
            [(info.id, start + i, m.to_record()) for i, m in enumerate(messages)],
        )


def _replace(db: sqlite3.Connection, info: Any, allowlist: Iterable[str], messages: list[Message]) -> None:
    with db:
        db.execute("BEGIN")
        _upsert(db, info, allowlist)
        db.execute("DELETE FROM messages WHERE session_id = ?", (info.id,))
        db.executemany(
            "INSERT INTO messages (session_id, seq, message) VALUES (?, ?, ?)",
            [(info.id, i, m.to_record()) for i, m in enumerate(messages)],
        )


@attrs.frozen
class SessionRow:
    """A stored conversation as `beamclaw sessions` lists it."""

    id: str
    user_id: str
    agent_id: str
    channel: str
    created_at: float
    updated_at: float
    messages: int


def _list(db: sqlite3.Connection, limit: int) -> tuple[list[SessionRow], int]:
    """The *limit* conversations used last, newest first, and how many there are in all."""
    rows = db.execute(
        "SELECT s.id, s.user_id, s.agent_id, s.channel, s.created_at, s.updated_at, "
        "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) "
        "FROM sessions s ORDER BY s.updated_at DESC LIMIT ?",
        (limit,),
    ).fetchall()
    (total,) = db.execute("SELECT COUNT(*) FROM sessions").fetchone()
    return [SessionRow(*row) for row in rows], int(total)


def _find(db: sqlite3.Connection, prefix: str) -> list[SessionRow]:
    """The stored conversations whose id starts with *prefix* (two at most: enough to say it is ambiguous)."""
    rows = db.execute(
        "SELECT s.id, s.user_id, s.agent_id, s.channel, s.created_at, s.updated_at, "
        "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) "
        "FROM sessions s WHERE s.id >= ? AND s.id < ? ORDER BY s.id LIMIT 2",
        (prefix, prefix + "\U0010ffff"),
    ).fetchall()
    return [SessionRow(*row) for row in rows]


def _expired(db: sqlite3.Connection, cutoff: float) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM sessions WHERE updated_at < ?", (cutoff,)).fetchall()]


def _delete(db: sqlite3.Connection, session_id: str) -> bool:
    with db:
        db.execute("BEGIN")
        db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        return db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0


def _reserve(db: sqlite3.Connection, agent_id: str, day: str, tokens: int, limit: int) -> int | None:
    """Add *tokens* to the day's use unless that passes *limit*; return the new total or None."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT tokens FROM token_usage WHERE agent_id = ? AND day = ?", (agent_id, day)).fetchone()
        used = row[0] if row else 0
        if used + tokens > limit:
            return None
        db.execute(
            "INSERT INTO token_usage (agent_id, day, tokens) VALUES (?, ?, ?) "
            "ON CONFLICT(agent_id, day) DO UPDATE SET tokens = excluded.tokens",
            (agent_id, day, used + tokens),
        )
        return int(used + tokens)


def _adjust(db: sqlite3.Connection, agent_id: str, day: str, delta: int) -> None:
    with db:
        db.execute(
            "INSERT INTO token_usage (agent_id, day, tokens) VALUES (?, ?, max(?, 0)) "
            "ON CONFLICT(agent_id, day) DO UPDATE SET tokens = max(tokens + ?, 0)",
            (agent_id, day, delta, delta),
        )


def _used(db: sqlite3.Connection, agent_id: str, day: str) -> int:
    row = db.execute("SELECT tokens FROM token_usage WHERE agent_id = ? AND day = ?", (agent_id, day)).fetchone()
    return int(row[0]) if row else 0


_OPERATIONS: Final[dict[str, Callable[..., Any]]] = {
    "load": _load,
    "append": _append,
    "replace": _replace,
    "expired": _expired,
    "list": _list,
    "find": _find,
    "touch": _upsert,
    "delete": _delete,
    "reserve": _reserve,
    "adjust": _adjust,
    "used": _used,
    "pairing_request": pairing.request_code,
    "pairing_allowed": pairing.allowed_agent,
}


#: Small commits run in the store process itself: in WAL mode with synchronous=NORMAL a
#: commit is one write() to the log, tens of microseconds, less than a hop to a worker
#: thread and back (measured 38 us against 174 us). Everything that can take long
#: (opening, loading or replacing a history, deleting, the fsyncing checkpoints) runs
#: in a worker thread, so a slow disk never stalls the loop for long.
_INLINE: Final = frozenset({"append", "adjust", "reserve", "used", "pairing_allowed"})
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
    """``call(STORE, (operation, *args))``; *path* None keeps the data in memory only."""

    async def init(self, path: Path | None) -> _Db:
        sv.register(STORE)
        return _Db(await trio.to_thread.run_sync(open_database, path))

    async def handle_call(self, request: tuple[Any, ...], caller: sv.Caller, db: _Db) -> sv.Reply | sv.NoReply:
        operation, *args = request
        try:
            function = _OPERATIONS[operation]
        except KeyError:
            raise ValueError(f"unknown store operation {operation!r}") from None
        try:
            if operation in _INLINE:
                result = function(db.connection, *args)
                db.writes_since_checkpoint += 1
            else:
                result = await trio.to_thread.run_sync(lambda: function(db.connection, *args))
        except sqlite3.Error as exc:
            # A failed write (disk full, a constraint) is the caller's error to handle;
            # restarting the store would restart every session with it.
            sv.reply_error(caller, StoreError(f"the session database refused {operation}: {exc}"))
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


async def store_call(operation: str, *args: Any, timeout: float | None = 30.0) -> Any:
    """Run one store operation in the store process."""
    return await sv.call(STORE, (operation, *args), timeout=timeout, restart_wait=RESTART_WAIT)
