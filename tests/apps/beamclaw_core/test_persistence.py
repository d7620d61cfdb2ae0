"""History in the store: written before it is acknowledged, restored on start, expired by TTL."""

from __future__ import annotations

import sqlite3
import traceback
from pathlib import Path

import pytest
import trio

import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreConfig
from tests.support.model_server import Reply
from tests.support.stores import sql

from .conftest import RunCore, session_store


async def test_history_survives_a_restart_of_the_whole_tree(
    run_core: RunCore, tmp_path: Path, store_config: StoreConfig
) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("noted"), home=home, store=store_config) as r:
        session = await r.open()
        await core.send_message(session, "my name is Ada", core.CollectingChannel())
    async with run_core(Reply("You are Ada."), home=home, store=store_config) as r:
        session = await r.open()
        assert [m.content for m in await core.history(session)] == ["my name is Ada", "noted"]
        await core.send_message(session, "who am I?", core.CollectingChannel())
        sent = [m["content"] for m in r.model.requests[0]["messages"][1:]]
        assert sent == ["my name is Ada", "noted", "who am I?"]
        await r.settle()
        assert r.named("session_restored")[0].data["messages"] == 2


async def test_the_sqlite_file_is_the_owners_only_and_in_wal_mode(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("noted"), home=home) as r:
        await core.send_message(await r.open(), "my name is Ada", core.CollectingChannel())
    db = home / "sessions.db"
    assert (db.stat().st_mode & 0o777) == 0o600
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_without_persistence_nothing_is_restored(
    run_core: RunCore, tmp_path: Path, store_config: StoreConfig
) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("noted"), home=home, session_persistence=False, store=store_config) as r:
        await core.send_message(await r.open(), "remember", core.CollectingChannel())
    async with run_core(home=home, session_persistence=False, store=store_config) as r:
        assert await core.history(await r.open()) == []


async def test_a_database_from_a_newer_version_is_refused(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(home=home):
        pass
    db = sqlite3.connect(home / "sessions.db")
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(BaseException) as info:
        async with run_core(home=home):
            pass
    text = "".join(traceback.format_exception(info.value))
    assert "StartError: child 'store' failed to start" in text
    assert f"format version 99, newer than this BeamClaw's {core.SCHEMA_VERSION}; upgrade BeamClaw" in text


async def test_reset_forgets_the_conversation_for_good(
    run_core: RunCore, tmp_path: Path, store_config: StoreConfig
) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("a"), home=home, store=store_config) as r:
        session = await r.open()
        await core.send_message(session, "x", core.CollectingChannel())
        assert await core.reset_session(session) == 2
        assert await core.history(session) == []
    async with run_core(home=home, store=store_config) as r:
        assert await core.history(await r.open()) == []


async def test_expired_sessions_are_stopped_and_deleted(
    run_core: RunCore, tmp_path: Path, store_config: StoreConfig
) -> None:
    home = tmp_path / "home"
    async with run_core(repeat=Reply("hi"), home=home, session_ttl_seconds=0.0, store=store_config) as r:
        old = await r.open("u-old")
        await core.send_message(old, "hello", core.CollectingChannel())
        assert old.id in await core.running_sessions()
        assert await core.sweep_expired() == [old.id]
        assert await core.running_sessions() == []
        # Coming back later starts a fresh conversation.
        assert await core.history(old) == []
    with session_store(home, store_config) as db:
        assert sql(db, "SELECT count(*) FROM messages") == [(0,)]


async def test_a_killed_session_process_restores_from_the_store(run_core: RunCore, store_config: StoreConfig) -> None:
    async with run_core(repeat=Reply("kept"), store=store_config) as r:
        session = await r.open()
        await core.send_message(session, "before", core.CollectingChannel())
        pid = session.dest.whereis()
        sv.kill(session.dest, RuntimeError("session crash"))
        result = await core.send_message(session, "after", core.CollectingChannel())
        assert result.text == "kept" and session.dest.whereis() != pid
        assert [m.content for m in await core.history(session)] == ["before", "kept", "after", "kept"]


async def test_a_failed_write_is_an_error_for_the_caller_not_a_crash(
    run_core: RunCore, store_config: StoreConfig
) -> None:
    from beamclaw_core._store import STORE, store_call
    from beamclaw_core._store_requests import AppendMessages, LoadSession

    async with run_core(store=store_config) as r:
        info = core.SessionInfo("s", "u", "a")
        await store_call(AppendMessages(info, frozenset(), 0, [core.Message("user", "one")]))
        pid = sv.whereis(STORE)
        with pytest.raises(core.StoreRefused, match="the session database refused AppendMessages: "):
            await store_call(AppendMessages(info, frozenset(), 0, [core.Message("user", "again at the same place")]))
        assert sv.whereis(STORE) == pid
        stored = await store_call(LoadSession("s"))
        assert stored is not None and [m.content for m in stored.history] == ["one"]
        assert r.named("child_restarted") == []


async def test_writes_go_on_across_checkpoints(run_core: RunCore, store_config: StoreConfig) -> None:
    """Every 200 writes the store checkpoints SQLite's log; no write after one may fail (the
    checkpoint's answer row once left a statement in progress, and a commit then failed)."""
    async with run_core(repeat=Reply("ok"), store=store_config) as r:
        handles = [await r.open(f"user-{n}") for n in range(20)]

        async def talk(handle: core.SessionHandle) -> None:
            for n in range(12):
                result = await core.send_message(handle, f"message {n}", core.CollectingChannel())
                assert result.ok, result.text

        async with trio.open_nursery() as nursery:
            for handle in handles:
                nursery.start_soon(talk, handle)
        assert [len(await core.history(h)) for h in handles] == [24] * 20


#: What `open_database` of the release before the store layer wrote: its version 1 script
#: (with pairing_links, added later without a bump; the oldest files lack it), then 2 and 3.
_RELEASED_V1 = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, channel TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, allowlist TEXT NOT NULL DEFAULT '[]');
CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (session_id, seq));
CREATE INDEX sessions_updated ON sessions(updated_at);
CREATE TABLE token_usage (agent_id TEXT NOT NULL, day TEXT NOT NULL, tokens INTEGER NOT NULL,
    PRIMARY KEY (agent_id, day));
"""
_RELEASED_V2_V3 = """
CREATE TABLE pairing_links (channel TEXT NOT NULL, user_id TEXT NOT NULL, linked_user TEXT NOT NULL,
    linked_at REAL NOT NULL, PRIMARY KEY (channel, user_id));
CREATE TABLE pairing_requests (channel TEXT NOT NULL, code TEXT NOT NULL, user_id TEXT NOT NULL,
    display TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, PRIMARY KEY (channel, code));
CREATE TABLE pairing_allow (channel TEXT NOT NULL, user_id TEXT NOT NULL, agent_id TEXT NOT NULL,
    approved_at REAL NOT NULL, PRIMARY KEY (channel, user_id));
ALTER TABLE sessions ADD COLUMN flushed_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN history_epoch INTEGER NOT NULL DEFAULT 0;
INSERT INTO pairing_allow VALUES ('telegram', 'telegram:7', 'default', 1);
INSERT INTO pairing_links VALUES ('telegram', 'telegram:7', 'local:ada', 1);
UPDATE sessions SET flushed_seq = 1, history_epoch = 2;
"""


@pytest.mark.parametrize("version", [1, 3])
def test_a_session_database_of_the_last_release_opens_with_its_rows(tmp_path: Path, version: int) -> None:
    from beamclaw_core._store_requests import LoadSession

    old = sqlite3.connect(tmp_path / "sessions.db")
    old.executescript(_RELEASED_V1)
    old.execute("INSERT INTO sessions (id, user_id, agent_id, channel, created_at, updated_at) "
                "VALUES ('s', 'u', 'a', '', 1, 1)")  # fmt: skip
    said = [core.Message("user", "hi"), core.Message("assistant", "hello")]
    old.executemany("INSERT INTO messages VALUES ('s', ?, ?)", [(n, m.to_record()) for n, m in enumerate(said)])
    old.commit()
    if version == 3:
        old.executescript(_RELEASED_V2_V3)
    old.execute(f"PRAGMA user_version = {version}")
    old.close()
    with session_store(tmp_path, StoreConfig()) as db:
        stored = db.transact(LoadSession("s").run, write=False)
        assert stored is not None and stored.history == said
        assert sql(db, "SELECT flushed_seq, history_epoch FROM sessions") == ([(1, 2)] if version == 3 else [(0, 0)])
        speaks_as = db.transact(lambda tx: core.speaker(tx, "telegram", "telegram:7", listed=False, canonical=None))
        assert speaks_as == ("local:ada" if version == 3 else "telegram:7")
        assert len(db.transact(lambda tx: core.request_code(tx, "telegram", "telegram:1"))) == 8
    upgraded = sqlite3.connect(tmp_path / "sessions.db")
    assert upgraded.execute("PRAGMA user_version").fetchone() == (core.SCHEMA_VERSION,)
    upgraded.close()
