"""A memory SQLite file opened safely: one that cannot be read is moved aside, never deleted.

The chunk store opens this way (it is derived, and node-local whatever the store layer's
backend), so a corrupt file costs a rebuild, and a file that is only locked or
unreadable now fails with the store layer's `StoreUnavailable` without anything being
moved. The kept documents are not derived: they are on the store layer (`_remembered`).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from loguru import logger

from beamclaw_base import StoreUnavailable
from beamclaw_obs import emit


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
