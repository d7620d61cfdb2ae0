"""The store layer on SQLite: migrations, refusal of a newer file, transactions, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from beamclaw_base import Schema, Step, StoreConfig, StoreError, StoreRefused, StoreUnavailable, Tx, open_store

_V1 = Step.portable("CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);", repeat=True)
_V2 = Step.portable("ALTER TABLE notes ADD COLUMN stars INTEGER NOT NULL DEFAULT 0;")
_SCHEMA = Schema("notes", (_V1, _V2))


def test_an_older_file_is_upgraded_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    old = open_store(StoreConfig(), Schema("notes", (_V1,)), sqlite_file=file)
    old.transact(lambda tx: tx.execute("INSERT INTO notes VALUES ('a', 'kept')"))
    old.close()

    db = open_store(StoreConfig(), _SCHEMA, sqlite_file=file)
    rows = db.transact(lambda tx: tx.execute("SELECT id, body, stars FROM notes").fetchall(), write=False)
    db.close()
    assert rows == [("a", "kept", 0)]
    assert sqlite3.connect(file).execute("PRAGMA user_version").fetchone() == (2,)
    assert file.stat().st_mode & 0o777 == 0o600


def test_a_newer_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    open_store(StoreConfig(), _SCHEMA, sqlite_file=file).close()
    raw = sqlite3.connect(file)
    raw.execute("PRAGMA user_version = 7")
    raw.close()
    with pytest.raises(StoreError, match="format version 7, newer than this BeamClaw's 2"):
        open_store(StoreConfig(), _SCHEMA, sqlite_file=file)
    assert sqlite3.connect(file).execute("PRAGMA user_version").fetchone() == (7,)


def test_a_failed_migration_leaves_the_file_at_its_old_version(tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    open_store(StoreConfig(), Schema("notes", (_V1,)), sqlite_file=file).close()
    broken = Schema("notes", (_V1, Step.portable("ALTER TABLE notes ADD COLUMN x INTEGER;\nALTER TABLE nope ADD y;")))
    with pytest.raises(StoreError):
        open_store(StoreConfig(), broken, sqlite_file=file)
    raw = sqlite3.connect(file)
    assert raw.execute("PRAGMA user_version").fetchone() == (1,)
    assert [c[1] for c in raw.execute("PRAGMA table_info(notes)")] == ["id", "body"]


def test_work_that_raises_is_rolled_back_and_a_clash_is_refused(tmp_path: Path) -> None:
    db = open_store(StoreConfig(), _SCHEMA, sqlite_file=tmp_path / "notes.db")

    def half_then_fail(tx: Tx) -> None:
        tx.execute("INSERT INTO notes (id, body) VALUES ('a', 'first')")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        db.transact(half_then_fail)
    assert db.transact(lambda tx: tx.execute("SELECT count(*) FROM notes").fetchone(), write=False) == (0,)

    db.transact(lambda tx: tx.execute("INSERT INTO notes (id, body) VALUES ('a', 'first')"))
    with pytest.raises(StoreRefused, match="UNIQUE"):
        db.transact(lambda tx: tx.execute("INSERT INTO notes (id, body) VALUES ('a', 'again')"))
    assert db.transact(lambda tx: tx.execute("SELECT body FROM notes").fetchall(), write=False) == [("first",)]
    db.close()


async def test_run_tries_a_locked_file_again_until_it_is_free(tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    db = open_store(StoreConfig(), _SCHEMA, sqlite_file=file)
    db.transact(lambda tx: tx.execute("PRAGMA busy_timeout = 0"))  # locked fails at once, not after 10 s
    other = sqlite3.connect(file, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock

    def insert(tx: Tx) -> None:
        tx.execute("INSERT INTO notes (id, body) VALUES ('b', 'after the lock')")

    with pytest.raises(StoreUnavailable, match="locked"):
        db.transact(insert)

    async def finish_the_other_writer() -> None:
        await trio.sleep(0.3)
        other.execute("ROLLBACK")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(finish_the_other_writer)
        await db.run(insert)
    assert db.transact(lambda tx: tx.execute("SELECT body FROM notes").fetchall(), write=False) == [("after the lock",)]
    db.close()
