"""History in SQLite: written before it is acknowledged, restored on start, expired by TTL."""

from __future__ import annotations

import sqlite3
import traceback
from pathlib import Path

import pytest
import trio

import beamclaw_core as core
import supervision as sv
from tests.support.model_server import Reply

from .conftest import RunCore


async def test_history_survives_a_restart_of_the_whole_tree(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("noted"), home=home) as r:
        session = await r.open()
        await core.send_message(session, "my name is Ada", core.CollectingChannel())
    db = home / "sessions.db"
    assert (db.stat().st_mode & 0o777) == 0o600
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    async with run_core(Reply("You are Ada."), home=home) as r:
        session = await r.open()
        assert [m.content for m in await core.history(session)] == ["my name is Ada", "noted"]
        await core.send_message(session, "who am I?", core.CollectingChannel())
        sent = [m["content"] for m in r.model.requests[0]["messages"][1:]]
        assert sent == ["my name is Ada", "noted", "who am I?"]
        await r.settle()
        assert r.named("session_restored")[0].data["messages"] == 2


async def test_without_persistence_nothing_is_restored(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("noted"), home=home, session_persistence=False) as r:
        await core.send_message(await r.open(), "remember", core.CollectingChannel())
    async with run_core(home=home, session_persistence=False) as r:
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


async def test_reset_forgets_the_conversation_for_good(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(Reply("a"), home=home) as r:
        session = await r.open()
        await core.send_message(session, "x", core.CollectingChannel())
        assert await core.reset_session(session) == 2
        assert await core.history(session) == []
    async with run_core(home=home) as r:
        assert await core.history(await r.open()) == []


async def test_expired_sessions_are_stopped_and_deleted(run_core: RunCore, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with run_core(repeat=Reply("hi"), home=home, session_ttl_seconds=0.0) as r:
        old = await r.open("u-old")
        await core.send_message(old, "hello", core.CollectingChannel())
        assert old.id in await core.running_sessions()
        assert await core.sweep_expired() == [old.id]
        assert await core.running_sessions() == []
        # Coming back later starts a fresh conversation.
        assert await core.history(old) == []
    rows = sqlite3.connect(home / "sessions.db").execute("SELECT count(*) FROM messages").fetchone()
    assert rows == (0,)


async def test_a_killed_session_process_restores_from_the_store(run_core: RunCore) -> None:
    async with run_core(repeat=Reply("kept")) as r:
        session = await r.open()
        await core.send_message(session, "before", core.CollectingChannel())
        pid = session.dest.whereis()
        sv.kill(session.dest, RuntimeError("session crash"))
        result = await core.send_message(session, "after", core.CollectingChannel())
        assert result.text == "kept" and session.dest.whereis() != pid
        assert [m.content for m in await core.history(session)] == ["before", "kept", "after", "kept"]


async def test_a_failed_write_is_an_error_for_the_caller_not_a_crash(run_core: RunCore) -> None:
    from beamclaw_core._store import STORE, store_call
    from beamclaw_core._store_requests import AppendMessages, LoadSession

    async with run_core() as r:
        info = core.SessionInfo("s", "u", "a")
        await store_call(AppendMessages(info, frozenset(), 0, [core.Message("user", "one")]))
        pid = sv.whereis(STORE)
        with pytest.raises(core.StoreError, match="the session database refused AppendMessages: UNIQUE constraint"):
            await store_call(AppendMessages(info, frozenset(), 0, [core.Message("user", "again at the same place")]))
        assert sv.whereis(STORE) == pid
        stored = await store_call(LoadSession("s"))
        assert stored is not None and [m.content for m in stored.history] == ["one"]
        assert r.named("child_restarted") == []


async def test_writes_go_on_across_checkpoints(run_core: RunCore) -> None:
    """Every 200 writes the store checkpoints the log; no write after one may fail (the
    checkpoint's answer row once left a statement in progress, and a commit then failed)."""
    async with run_core(repeat=Reply("ok")) as r:
        handles = [await r.open(f"user-{n}") for n in range(20)]

        async def talk(handle: core.SessionHandle) -> None:
            for n in range(12):
                result = await core.send_message(handle, f"message {n}", core.CollectingChannel())
                assert result.ok, result.text

        async with trio.open_nursery() as nursery:
            for handle in handles:
                nursery.start_soon(talk, handle)
        assert [len(await core.history(h)) for h in handles] == [24] * 20
