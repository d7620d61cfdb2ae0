"""What only the memory holds: each user's remembered exchanges and flush notes.

Everything else the memory app keeps is derived (from the workspace files, and from
this), so it may be rebuilt; this is not: a conversation's history expires from core's
store, and the messages a flush note came from were compacted away. So it lives in a
file of its own, ``memory/<agent>/kept.db``, written before anything is indexed; the
chunk store is refilled from it when it is rebuilt, and a file that cannot be read is
moved aside (never deleted) for its owner to recover.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from loguru import logger

from beamclaw_obs import emit

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS kept (
    doc TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class StoreUnavailable(Exception):
    """A memory file cannot be used now (locked, unreadable, a full disk): not corruption,
    so nothing is rebuilt or moved; the message says why."""


def connect(path: Path, schema: str) -> sqlite3.Connection:
    """*path* opened with *schema*; a file that is not a database is moved aside and a new
    one made (`StoreUnavailable` for the errors that are not about the file's content)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        return _open(path, schema)
    except sqlite3.OperationalError as exc:  # locked, busy, I/O, permissions: try again later
        raise StoreUnavailable(f"{path} cannot be used now: {exc}") from None
    except sqlite3.DatabaseError as exc:  # not a database, malformed
        aside = move_aside(path, str(exc))
        logger.error("memory: {} cannot be read ({}); moved to {} and started afresh", path, exc, aside)
    return _open(path, schema)


def _open(path: Path, schema: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(schema)
        db.execute("PRAGMA quick_check(1)").fetchone()
    except BaseException:
        db.close()
        raise
    return db


def move_aside(path: Path, why: str) -> Path:
    """Rename *path* (and its WAL files) to ``<name>.corrupt-<time>``: kept for recovery."""
    aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.rename(aside.with_name(aside.name + suffix))
    emit("memory_moved_aside", path=str(path), reason=why)
    return aside


class KeptStore:
    """Blocking SQLite access (the index process calls it from worker threads)."""

    def __init__(self, path: Path) -> None:
        self._db = connect(path, _SCHEMA)

    def put(self, doc: str, owner: str, body: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO kept (doc, owner, body, created) VALUES (?, ?, ?, ?)",
            (doc, owner, body, time.time()),
        )

    def body(self, doc: str) -> str:
        row = self._db.execute("SELECT body FROM kept WHERE doc = ?", (doc,)).fetchone()
        return "" if row is None else str(row[0])

    def docs(self) -> set[str]:
        return {doc for (doc,) in self._db.execute("SELECT doc FROM kept")}

    def everything(self) -> Iterator[tuple[str, str, str]]:
        """(doc, owner, body) of every kept document."""
        yield from self._db.execute("SELECT doc, owner, body FROM kept ORDER BY created")

    def close(self) -> None:
        self._db.close()
