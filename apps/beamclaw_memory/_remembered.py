"""The remembered store: what only the memory holds, each user's remembered exchanges
and flush notes.

Everything else the memory app keeps is derived (from the workspace files, and from
this), so it may be rebuilt; this is not: a conversation's history expires from core's
store, and the messages a flush note came from were compacted away. So it lives on the
store layer (`beamclaw_base.Database`), written before anything is indexed; the chunk
store is refilled from it when it is rebuilt.

On SQLite each agent keeps a file of its own, ``memory/<agent>/kept.db`` (the name
existing data dirs have; one that cannot be read stops the agent's memory with a
`StoreError` saying so, and is never moved or replaced). On PostgreSQL every agent's
documents share one table, keyed by agent, so every node finds them; the memory
process holds one `Database` for all its agents (see `_remembered_db`).

Each put gives the document a new change sequence number (``changed``) and, on
PostgreSQL, notifies `CHANNEL` with the agent's name when it commits: every node's
index of that agent reads the documents changed since the last one it indexed
(`RememberedStore.changed_since`), so a fact kept through one node is found through
every other.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

from beamclaw_base import Database, Schema, Step, StoreConfig, StoreRefused, Tx, notify, open_store

#: The default store: SQLite files in the data dir (`StoreConfig()`, named once here).
SQLITE_FILES: Final = StoreConfig()

#: The notification channel of kept documents; the payload is the agent's name.
CHANNEL: Final = "bc_memory"

#: The next change sequence number: PostgreSQL's sequence (shared by every node and
#: agent; taken when a write starts, so not in commit order), or one more than the
#: file's highest on SQLite (one agent's file, written under its write lock).
_NEXT_CHANGE: Final = {
    "postgres": "nextval('kept_changes')",
    "sqlite": "(SELECT coalesce(max(changed), 0) + 1 FROM kept)",
}

#: (change sequence number, doc, owner, body) of one kept document.
Kept = tuple[int, str, str, str]

#: Version 1 on SQLite: the table that files from before the store layer hold already
#: (at ``user_version`` 0, their documents left as they are), given the agent column the
#: queries name (one file is one agent's, so its rows say ""; see `RememberedStore`).
SCHEMA: Final = Schema(
    "memory",
    (
        Step(
            sqlite="""
CREATE TABLE IF NOT EXISTS kept (
    doc TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    created REAL NOT NULL
);
ALTER TABLE kept ADD COLUMN agent TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX kept_agent_doc ON kept (agent, doc);
""",
            postgres="""
CREATE TABLE kept (
    agent TEXT COLLATE "C" NOT NULL,
    doc TEXT COLLATE "C" NOT NULL,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    created double precision NOT NULL,
    PRIMARY KEY (agent, doc)
);
""",
        ),
        # Version 2: the change sequence number each put sets (existing rows numbered in
        # the order they were written), read by every node's index to catch up.
        Step(
            sqlite="""
ALTER TABLE kept ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
UPDATE kept SET changed = rowid;
CREATE INDEX kept_changed ON kept (agent, changed);
""",
            postgres="""
CREATE SEQUENCE kept_changes;
ALTER TABLE kept ADD COLUMN changed BIGINT NOT NULL DEFAULT nextval('kept_changes');
CREATE INDEX kept_changed ON kept (agent, changed);
""",
        ),
    ),
)


def check_keepable(doc: str, owner: str, body: str) -> None:
    """`StoreRefused` if the document holds NUL, which PostgreSQL cannot store (refused on
    both backends, so the two agree)."""
    if any("\x00" in text for text in (doc, owner, body)):
        raise StoreRefused(f"the memory cannot keep {doc!r}: it holds a NUL character")


class RememberedStore:
    """One agent's kept documents; blocking (the index process calls it from worker threads).

    Every query names the agent. On PostgreSQL that is what keeps one agent's documents
    from another's in the shared table; on SQLite the file is the agent's own, so its
    rows carry "" (as the rows written before the column existed do), and a renamed
    agent folder keeps its documents.
    """

    def __init__(self, db: Database, agent: str, *, owns_db: bool) -> None:
        self._db = db
        self._agent = agent if db.dialect == "postgres" else ""
        self._owns_db = owns_db

    def put(self, doc: str, owner: str, body: str) -> None:
        """Keep *body* as *doc* of *owner* (replacing what *doc* held); `StoreRefused` for
        text holding NUL, which PostgreSQL cannot store (refused on both, so the two agree)."""
        self.put_many([(doc, owner, body)])

    def put_many(self, documents: list[tuple[str, str, str]]) -> None:
        """Keep each (doc, owner, body) as `put` does, all in one transaction (one sync to
        disk for them all); `StoreRefused`, and none kept, if one holds NUL."""
        for doc, owner, body in documents:
            check_keepable(doc, owner, body)
        now = time.time()
        rows = [(self._agent, doc, owner, body, now) for doc, owner, body in documents]

        def work(tx: Tx) -> None:
            for row in rows:
                tx.execute(
                    "INSERT INTO kept (agent, doc, owner, body, created, changed) "
                    f"VALUES (?, ?, ?, ?, ?, {_NEXT_CHANGE[tx.dialect]}) "
                    "ON CONFLICT (agent, doc) DO UPDATE SET owner = excluded.owner, body = excluded.body, "
                    "created = excluded.created, changed = excluded.changed",
                    row,
                )
            notify(tx, CHANNEL, self._agent)

        if rows:
            self._db.transact(work)

    def body(self, doc: str) -> str:
        def work(tx: Tx) -> str:
            row = tx.execute("SELECT body FROM kept WHERE agent = ? AND doc = ?", (self._agent, doc)).fetchone()
            return "" if row is None else str(row[0])

        return self._db.transact(work, write=False)

    def docs(self) -> set[str]:
        def work(tx: Tx) -> set[str]:
            return {doc for (doc,) in tx.execute("SELECT doc FROM kept WHERE agent = ?", (self._agent,)).fetchall()}

        return self._db.transact(work, write=False)

    def changed_since(self, after: int) -> list[Kept]:
        """Every kept document whose change sequence number is above *after* (0: all of
        them), in the order of those numbers."""

        def work(tx: Tx) -> list[Kept]:
            rows = tx.execute(
                "SELECT changed, doc, owner, body FROM kept WHERE agent = ? AND changed > ? ORDER BY changed",
                (self._agent, after),
            ).fetchall()
            return [(int(changed), str(doc), str(owner), str(body)) for changed, doc, owner, body in rows]

        return self._db.transact(work, write=False)

    def close(self) -> None:
        """Close the agent's own database (a shared one stays open for the other agents)."""
        if self._owns_db:
            self._db.close()


def open_shared(config: StoreConfig) -> Database | None:
    """The one database every agent's kept documents share on PostgreSQL (blocks), or None
    on SQLite, where each agent has a file of its own."""
    if config.backend == "sqlite":
        return None
    return open_store(config, SCHEMA, sqlite_file=None)


def open_remembered(config: StoreConfig, folder: Path, agent: str, shared: Database | None) -> RememberedStore:
    """*agent*'s kept documents: in *shared* when the memory process holds one (PostgreSQL),
    else in the agent's own file in *folder* (blocks; `StoreError` if it cannot be used)."""
    if shared is not None:
        return RememberedStore(shared, agent, owns_db=False)
    # FULL, as before the store layer: a power cut loses no document the memory was told to keep.
    db = open_store(config, SCHEMA, sqlite_file=folder / "kept.db", synchronous="FULL")
    return RememberedStore(db, agent, owns_db=True)
