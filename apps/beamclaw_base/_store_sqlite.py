"""The SQLite backend: one file in the data dir (WAL), one connection, owned by one process.

Versions live in the file's ``PRAGMA user_version`` (existing data dirs open unchanged);
a file newer than this BeamClaw is refused rather than misread. WAL with
``synchronous=NORMAL`` survives a crash or SIGKILL of the process (only a power cut can
lose the last commits); an app that must not lose even those asks for ``FULL``.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final, Literal, TypeVar

import attrs
import trio
from loguru import logger

from ._store import Dialect, Rows, Schema, StoreError, StoreRefused, StoreUnavailable, Tx
from ._store_retry import run_retried

R = TypeVar("R")

Synchronous = Literal["NORMAL", "FULL"]


@attrs.define
class _SqliteTx:
    connection: sqlite3.Connection
    dialect: Final[Dialect] = "sqlite"

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        return self.connection.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        self.connection.executemany(sql, rows)


#: The result codes of a database that is there but cannot be used this moment.
_FOR_NOW: Final = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PROTOCOL")


def _mapped(exc: sqlite3.Error, what: str) -> StoreError:
    """The store's error for a SQLite one: a constraint is the caller's, a lock or I/O is for now."""
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreRefused(f"{what}: {exc}")
    if getattr(exc, "sqlite_errorname", "").startswith(_FOR_NOW):
        return StoreUnavailable(f"{what}: {exc}")
    return StoreError(f"{what}: {exc}")


class SqliteDatabase:
    """A `Database` on one SQLite file (or in memory).

    *checkpoint_every* write transactions, the log is checkpointed in a worker thread (the
    only writes that fsync, kept off the loop); None leaves it to SQLite's own
    autocheckpoint.
    """

    dialect: Final[Dialect] = "sqlite"

    def __init__(self, connection: sqlite3.Connection, name: str, checkpoint_every: int | None) -> None:
        self._connection = connection
        self._name = name
        self._checkpoint_every = checkpoint_every
        self._writes = 0
        # One connection: transactions take turns. The Trio lock keeps `run`'s callers from
        # waiting on a thread lock in the loop; the thread lock covers `transact` callers.
        self._thread_lock = threading.Lock()
        self._trio_lock = trio.Lock()

    def transact(self, work: Callable[[Tx], R], *, write: bool = True) -> R:
        with self._thread_lock:
            db = self._connection
            try:
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    result = work(_SqliteTx(db))
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise _mapped(exc, self._name) from exc
            if write:
                self._writes += 1
            return result

    async def run(self, work: Callable[[Tx], R], *, write: bool = True, inline: bool = False) -> R:
        async with self._trio_lock:
            if inline:
                result = await run_retried(lambda: self._now(work, write))
            else:
                in_thread = functools.partial(self.transact, work, write=write)
                result = await run_retried(lambda: trio.to_thread.run_sync(in_thread))
            if self._checkpoint_every is not None and self._writes >= self._checkpoint_every:
                await trio.to_thread.run_sync(self._checkpoint)
        return result

    async def _now(self, work: Callable[[Tx], R], write: bool) -> R:
        return self.transact(work, write=write)

    def _checkpoint(self) -> None:
        with self._thread_lock:
            self._writes = 0
            try:
                # The pragma answers a row: read it, so no statement is left in progress.
                self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:
                logger.warning("{}: checkpoint failed: {}", self._name, exc)

    def close(self) -> None:
        if self._checkpoint_every is not None:
            self._checkpoint()
        with self._thread_lock:
            self._connection.close()


def open_sqlite(
    path: Path | None,
    schema: Schema,
    *,
    synchronous: Synchronous = "NORMAL",
    checkpoint_every: int | None = None,
) -> SqliteDatabase:
    """Open (creating or upgrading) *path* with *schema*; `StoreError` if it cannot be used.

    *path* None keeps the data in memory. The file is made readable by its owner only.
    """
    name = f"the {schema.component} database {path or '(in memory)'}"
    if path is not None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(
            ":memory:" if path is None else path, check_same_thread=False, isolation_level=None, timeout=10.0
        )
    except sqlite3.Error as exc:
        raise _mapped(exc, f"cannot open {name}") from None
    try:
        _prepare(db, schema, name, synchronous, checkpoint_every)
    except sqlite3.Error as exc:
        db.close()
        raise _mapped(exc, f"cannot open {name}") from None
    except BaseException:
        db.close()
        raise
    if path is not None:
        path.chmod(0o600)
    return SqliteDatabase(db, name, checkpoint_every)


def _prepare(
    db: sqlite3.Connection, schema: Schema, name: str, synchronous: Synchronous, checkpoint_every: int | None
) -> None:
    _refuse_newer(db, schema, name)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    if checkpoint_every is not None:
        db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process opening the same file at the
        # same moment (the daemon and `beamclaw pair`) may have migrated it meanwhile.
        version = _refuse_newer(db, schema, name)
        for number, step in enumerate(schema.steps, start=1):
            if number > version or step.repeat:
                for statement in _statements(step.sqlite):
                    db.execute(statement)
        db.execute(f"PRAGMA user_version={schema.version}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _refuse_newer(db: sqlite3.Connection, schema: Schema, name: str) -> int:
    """The file's version; `StoreError` when it is newer than *schema*."""
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version > schema.version:
        raise StoreError(
            f"{name} has format version {version}, newer than this BeamClaw's {schema.version}; "
            "upgrade BeamClaw or move the file away"
        )
    return int(version)


def _statements(script: str) -> list[str]:
    """*script* split into complete statements (``executescript`` would commit first)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
