"""The store layer on every backend: migrations, refusal of a newer schema, transactions,
errors; then what only SQLite has (its file, its lock)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import trio

from beamclaw_base import Schema, Step, StoreConfig, StoreError, StoreRefused, StoreUnavailable, Tx, open_store
from tests.support.stores import sql

_V1 = Step.portable("CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);", repeat=True)
_V2 = Step.portable("ALTER TABLE notes ADD COLUMN stars INTEGER NOT NULL DEFAULT 0;")
_SCHEMA = Schema("notes", (_V1, _V2))


def test_an_older_schema_is_upgraded_in_place_and_keeps_its_rows(store_config: StoreConfig, tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    old = open_store(store_config, Schema("notes", (_V1,)), sqlite_file=file)
    old.transact(lambda tx: tx.execute("INSERT INTO notes VALUES ('a', 'kept')"))
    old.close()

    db = open_store(store_config, _SCHEMA, sqlite_file=file)
    rows = db.transact(lambda tx: tx.execute("SELECT id, body, stars FROM notes").fetchall(), write=False)
    db.close()
    assert rows == [("a", "kept", 0)]


def test_a_failed_migration_leaves_the_old_version_whole(store_config: StoreConfig, tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    open_store(store_config, Schema("notes", (_V1,)), sqlite_file=file).close()
    second = Step.portable("ALTER TABLE notes ADD COLUMN x INTEGER;\nALTER TABLE nope ADD y INTEGER;")
    broken = Schema("notes", (_V1, second))
    with pytest.raises(StoreError, match="nope"):
        open_store(store_config, broken, sqlite_file=file)

    db = open_store(store_config, Schema("notes", (_V1,)), sqlite_file=file)  # still version 1: opens
    sql(db, "INSERT INTO notes VALUES (?, ?)", ("a", "two columns"))
    assert sql(db, "SELECT * FROM notes") == [("a", "two columns")]  # the step's first half was undone
    db.close()


def test_work_that_raises_is_rolled_back_and_a_clash_is_refused(store_config: StoreConfig, tmp_path: Path) -> None:
    db = open_store(store_config, _SCHEMA, sqlite_file=tmp_path / "notes.db")

    def half_then_fail(tx: Tx) -> None:
        tx.execute("INSERT INTO notes (id, body) VALUES ('a', 'first')")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        db.transact(half_then_fail)
    assert db.transact(lambda tx: tx.execute("SELECT count(*) FROM notes").fetchone(), write=False) == (0,)

    db.transact(lambda tx: tx.execute("INSERT INTO notes (id, body) VALUES (?, ?)", ("a", "first")))
    with pytest.raises(StoreRefused, match=r"(?i)unique"):
        db.transact(lambda tx: tx.execute("INSERT INTO notes (id, body) VALUES (?, ?)", ("a", "again")))
    assert db.transact(lambda tx: tx.execute("SELECT body FROM notes").fetchall(), write=False) == [("first",)]
    db.close()


async def test_run_answers_from_trio_with_plain_numbers_and_a_quoted_question_mark_stays_text(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    db = open_store(store_config, _SCHEMA, sqlite_file=tmp_path / "notes.db")
    await db.run(lambda tx: tx.executemany("INSERT INTO notes (id, body) VALUES (?, ?)", [("a", "x"), ("b", "y")]))
    rows = await db.run(
        lambda tx: tx.execute("SELECT id, 'why?' FROM notes WHERE body <> ? ORDER BY id", ("y",)).fetchall(),
        write=False,
    )
    totals = await db.run(lambda tx: tx.execute("SELECT count(*), sum(stars), avg(stars) FROM notes").fetchone())
    db.close()
    assert rows == [("a", "why?")]
    assert totals == (2, 0, 0.0) and type(totals[1]) is int  # PostgreSQL's sum() is numeric: read as an int


def test_two_writers_reading_then_writing_one_counter_lose_no_increment(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    counter = Schema("counter", (Step.portable("CREATE TABLE counter (id TEXT PRIMARY KEY, n INTEGER NOT NULL);"),))
    db = open_store(store_config, counter, sqlite_file=tmp_path / "counter.db")
    sql(db, "INSERT INTO counter VALUES ('c', 0)")

    def increment(tx: Tx) -> None:
        (n,) = tx.execute("SELECT n FROM counter WHERE id = 'c'").fetchone()
        tx.execute("UPDATE counter SET n = ? WHERE id = 'c'", (n + 1,))

    def fifty() -> None:
        for _ in range(50):
            db.transact(increment)

    writers = [threading.Thread(target=fifty) for _ in range(2)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert sql(db, "SELECT n FROM counter") == [(100,)]
    db.close()


# SQLite only: its file and its lock.


def test_an_upgraded_sqlite_file_has_the_new_version_and_stays_owner_only(tmp_path: Path) -> None:
    file = tmp_path / "notes.db"
    open_store(StoreConfig(), Schema("notes", (_V1,)), sqlite_file=file).close()
    open_store(StoreConfig(), _SCHEMA, sqlite_file=file).close()
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
