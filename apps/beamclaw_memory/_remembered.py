"""The remembered store: what only the memory holds, each user's remembered exchanges
and flush notes.

Everything else the memory app keeps is derived (from the workspace files, and from
this), so it may be rebuilt; this is not: a conversation's history expires from core's
store, and the messages a flush note came from were compacted away. So it lives in a
file of its own, ``memory/<agent>/kept.db`` (the name existing data dirs have), written
before anything is indexed; the chunk store is refilled from it when it is rebuilt, and
a file that cannot be read is moved aside (never deleted) for its owner to recover.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from ._sqlite_file import connect

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS kept (
    doc TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class RememberedStore:
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
