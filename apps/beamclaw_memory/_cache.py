"""The embedding cache: vectors by (model, text hash) in SQLite, for ``ttl`` seconds.

A reindex, a restart or the same sentence in two files costs no second call to the
embedder (a remote one is paid per token). Rows older than the TTL are not used, and
are deleted when the cache opens. A cache file that cannot be read is replaced: it
only holds what can be asked for again.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

if TYPE_CHECKING:
    from ._embedding import Vectors


_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """Blocking SQLite access: the embedder process calls it from a worker thread."""

    def __init__(self, path: Path | None, ttl: float, clock: Callable[[], float] = time.time) -> None:
        self.ttl, self._clock = ttl, clock
        self._db = self._open(path)
        self._db.execute("DELETE FROM vectors WHERE created < ?", (clock() - ttl,))

    @staticmethod
    def _open(path: Path | None) -> sqlite3.Connection:
        if path is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(":memory:" if path is None else path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            assert path is not None
            logger.warning("the embedding cache {} cannot be read ({}); starting a new one", path, exc)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.executescript(_SCHEMA)
        return db

    def get(self, model: str, texts: Sequence[str]) -> dict[int, Vectors]:
        """{position in *texts*: its vector} for the texts cached and fresh."""
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        found: dict[int, Vectors] = {}
        oldest = self._clock() - self.ttl
        for position, text in enumerate(texts):
            row = self._db.execute(
                "SELECT vector FROM vectors WHERE model = ? AND hash = ? AND created >= ?",
                (model, text_hash(text), oldest),
            ).fetchone()
            if row is not None:
                found[position] = np.frombuffer(row[0], dtype=np.float32)
        return found

    def put(self, model: str, texts: Sequence[str], vectors: Vectors) -> None:
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        now = self._clock()
        rows = [(model, text_hash(t), v.astype(np.float32).tobytes(), now) for t, v in zip(texts, vectors, strict=True)]
        self._db.execute("BEGIN")
        try:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT count(*) FROM vectors").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()
