"""An agent's chunk store: ``memory/<agent>/chunks.db``, the truth the indexes derive from.

Documents (a workspace file, a remembered exchange or note: see `_remembered`) and their
chunks, each chunk with its lines and owner, and its vectors: one per window of a few
lines (see `_index`), none until the embedder has given them. The keyword index and the
in-memory vectors are rebuilt from here; this file is rebuilt from the workspace files
and the remembered store if it cannot be read.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from ._chunker import Chunk
from ._sqlite_file import connect, move_aside

if TYPE_CHECKING:
    from ._embedding import Vectors


SCHEMA_VERSION: Final = 3
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS documents (
    doc TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    signature TEXT NOT NULL,
    day TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    doc TEXT NOT NULL REFERENCES documents(doc) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc);
CREATE INDEX IF NOT EXISTS chunks_unembedded ON chunks(id) WHERE embedded = 0;
CREATE TABLE IF NOT EXISTS vectors (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_chunk ON vectors(chunk_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@attrs.frozen
class StoredChunk:
    id: int
    doc: str
    owner: str
    start_line: int
    end_line: int
    text: str
    kind: str
    day: str | None


@attrs.frozen
class Document:
    doc: str
    owner: str
    kind: str  # "file", "daily" or "conversation"
    signature: str
    day: str | None = None


_CHUNK_COLUMNS: Final = "c.id, c.doc, c.owner, c.start_line, c.end_line, c.text, d.kind, d.day"


class ChunkStore:
    """Blocking SQLite access (the agent's index process calls it from worker threads).

    A file that is not a database, or of another format, is moved aside and a new one
    made (the index then fills it again from the files and the remembered store); a file
    that is only locked or unreadable now raises `StoreUnavailable` (see `_sqlite_file`),
    and nothing is moved.
    """

    def __init__(self, path: Path) -> None:
        self._db = connect(path, _SCHEMA)
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version not in (0, SCHEMA_VERSION):  # derived data: another format is rebuilt, not converted
            self._db.close()
            move_aside(path, f"format version {version}, not {SCHEMA_VERSION}")
            self._db = connect(path, _SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def signatures(self, kinds: Sequence[str]) -> dict[str, str]:
        marks = ",".join("?" * len(kinds))
        rows = self._db.execute(f"SELECT doc, signature FROM documents WHERE kind IN ({marks})", tuple(kinds))
        return dict(rows.fetchall())

    def put(self, document: Document, chunks: Sequence[Chunk]) -> list[int]:
        """Replace the document and its chunks; the new chunks' ids (see `put_many`)."""
        (ids,) = self.put_many([(document, chunks)])
        return ids

    def put_many(self, items: Sequence[tuple[Document, Sequence[Chunk]]]) -> list[list[int]]:
        """Replace each document and its chunks, in one transaction; each one's new chunk
        ids. The keyword index is marked behind until `keywords_caught_up` (a crash between
        the two is repaired when the index opens)."""
        with self._transaction() as db:
            self._keywords_behind(db)
            return [self._put(db, document, chunks) for document, chunks in items]

    @staticmethod
    def _put(db: sqlite3.Connection, document: Document, chunks: Sequence[Chunk]) -> list[int]:
        db.execute("DELETE FROM documents WHERE doc = ?", (document.doc,))
        db.execute(
            "INSERT INTO documents (doc, owner, kind, signature, day) VALUES (?, ?, ?, ?, ?)",
            (document.doc, document.owner, document.kind, document.signature, document.day),
        )
        return [
            db.execute(
                "INSERT INTO chunks (doc, owner, start_line, end_line, text) VALUES (?, ?, ?, ?, ?) RETURNING id",
                (document.doc, document.owner, c.start_line, c.end_line, c.text),
            ).fetchone()[0]
            for c in chunks
        ]

    def remove(self, doc: str) -> None:
        with self._transaction() as db:
            self._keywords_behind(db)
            db.execute("DELETE FROM documents WHERE doc = ?", (doc,))

    @staticmethod
    def _keywords_behind(db: sqlite3.Connection) -> None:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('keywords', 'behind')")

    def keywords_caught_up(self) -> None:
        """The keyword index holds every change: written after its commit."""
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('keywords', 'current')")

    def keywords_behind(self) -> bool:
        """Whether a change may be missing from the keyword index (a crash came between them)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'keywords'").fetchone()
        return row is not None and row[0] == "behind"

    def chunks(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        found: dict[int, StoredChunk] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d USING (doc) "
                f"WHERE c.id IN ({','.join('?' * len(part))})",
                tuple(part),
            )
            found.update((row[0], StoredChunk(*row)) for row in rows)
        return found

    def document_chunks(self, doc: str) -> list[StoredChunk]:
        rows = self._db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d USING (doc) WHERE c.doc = ? ORDER BY c.id",
            (doc,),
        )
        return [StoredChunk(*row) for row in rows]

    def all_for_keywords(self) -> Iterator[tuple[int, str, str, str]]:
        """(id, doc, owner, text) of every chunk: what a rebuilt keyword index holds."""
        yield from self._db.execute("SELECT id, doc, owner, text FROM chunks")

    def unembedded(self, limit: int) -> list[tuple[int, str]]:
        return self._db.execute("SELECT id, text FROM chunks WHERE embedded = 0 LIMIT ?", (limit,)).fetchall()

    def set_vectors(self, ids: Sequence[int], vectors: Vectors) -> None:
        """Each of *vectors* belongs to the chunk at the same place in *ids* (a chunk has as
        many as it has windows); the chunks are then embedded, even one a change removed."""
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        with self._transaction() as db:
            db.executemany(
                "INSERT INTO vectors (chunk_id, vector) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?)",
                [(cid, row.astype(np.float32).tobytes(), cid) for cid, row in zip(ids, vectors, strict=True)],
            )
            db.executemany("UPDATE chunks SET embedded = 1 WHERE id = ?", [(cid,) for cid in dict.fromkeys(ids)])

    def vectors(self) -> tuple[list[int], list[str], Vectors]:
        """(chunk ids, owners, matrix): a row per window of every chunk that has vectors."""
        import numpy as np  # noqa: PLC0415 - imported by the first vector, not at start

        rows = self._db.execute(
            "SELECT v.chunk_id, c.owner, v.vector FROM vectors v JOIN chunks c ON c.id = v.chunk_id ORDER BY v.rowid"
        ).fetchall()
        size = len(rows[0][2]) if rows else 0
        rows = [row for row in rows if len(row[2]) == size]  # one length only, whatever was stored
        if not rows:
            return [], [], np.zeros((0, 0), dtype=np.float32)
        matrix = np.stack([np.frombuffer(vector, dtype=np.float32) for _, _, vector in rows])
        return [r[0] for r in rows], [r[1] for r in rows], matrix

    def vector_model(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
        return None if row is None else str(row[0])

    def reset_vectors(self, model: str) -> None:
        """Forget every vector (they came from another model) and remember whose the next are."""
        with self._transaction() as db:
            db.execute("DELETE FROM vectors")
            db.execute("UPDATE chunks SET embedded = 0 WHERE embedded = 1")
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('vector_model', ?)", (model,))

    def counts(self) -> dict[str, int]:
        (documents,) = self._db.execute("SELECT count(*) FROM documents").fetchone()
        (chunks,) = self._db.execute("SELECT count(*) FROM chunks").fetchone()
        (embedded,) = self._db.execute("SELECT count(*) FROM chunks WHERE embedded = 1").fetchone()
        return {"documents": documents, "chunks": chunks, "embedded": embedded}

    def close(self) -> None:
        self._db.close()
