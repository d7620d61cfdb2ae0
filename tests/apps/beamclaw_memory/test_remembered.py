"""The kept documents (the only copy of what the memory remembers) on each store backend:
what is put comes back, one agent never reads another's, text the store cannot hold is
refused without touching what is kept, and a kept.db made before the store layer opens
with its documents as they were."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

import beamclaw_memory as memory
import supervision as sv
from beamclaw_base import Notified, StoreConfig, StoreRefused, StoreUnavailable
from beamclaw_memory import _index as index_module
from beamclaw_memory._index import index_name
from beamclaw_memory._messages import Sync
from beamclaw_memory._remembered import CHANNEL, Kept, RememberedStore, open_remembered, open_shared

from .conftest import eventually, find, finds, memory_config, running_memory, workspace


def _everything(store: RememberedStore) -> list[tuple[str, str, str]]:
    """(doc, owner, body) of every kept document, in the order they were last written."""
    return [(doc, owner, body) for _, doc, owner, body in store.changed_since(0)]


@contextmanager
def _kept(store_config: StoreConfig, data_dir: Path) -> Iterator[Callable[[str], RememberedStore]]:
    """Opens agents' kept documents as the memory app does: one database shared by all on
    PostgreSQL, a file per agent on SQLite."""
    shared = open_shared(store_config)
    opened: list[RememberedStore] = []

    def kept(agent: str) -> RememberedStore:
        store = open_remembered(store_config, data_dir / "memory" / agent, agent, shared)
        opened.append(store)
        return store

    try:
        yield kept
    finally:
        for store in opened:
            store.close()
        if shared is not None:
            shared.close()


def test_what_is_put_comes_back_and_a_put_again_replaces_it(store_config: StoreConfig, tmp_path: Path) -> None:
    with _kept(store_config, tmp_path) as kept:
        store = kept("default")
        store.put("conversations/s/1", "local:alice", "Alice's boat is at Quay 7.")
        store.put("conversations/s/2", "local:bob", "Bob's bike is red.")
        store.put("notes/alice", "local:alice", "Alice likes tea.")
        assert store.body("conversations/s/2") == "Bob's bike is red."
        assert store.body("conversations/s/9") == ""
        assert store.docs() == {"conversations/s/1", "conversations/s/2", "notes/alice"}
        store.put("conversations/s/1", "local:alice", "Alice's boat is at Quay 9.")
        assert store.body("conversations/s/1") == "Alice's boat is at Quay 9."
        assert _everything(store) == [  # oldest first: the one put again is the newest
            ("conversations/s/2", "local:bob", "Bob's bike is red."),
            ("notes/alice", "local:alice", "Alice likes tea."),
            ("conversations/s/1", "local:alice", "Alice's boat is at Quay 9."),
        ]
    with _kept(store_config, tmp_path) as kept:  # and after a restart
        assert kept("default").body("conversations/s/1") == "Alice's boat is at Quay 9."


def test_one_agent_never_reads_another_agents_documents(store_config: StoreConfig, tmp_path: Path) -> None:
    with _kept(store_config, tmp_path) as kept:
        default, helper = kept("default"), kept("helper")
        default.put("conversations/s/1", "local:alice", "The vault code is 7-7-3.")
        helper.put("conversations/s/1", "local:alice", "The garden gate is green.")
        helper.put("conversations/s/2", "local:alice", "The shed is locked.")
        assert default.body("conversations/s/1") == "The vault code is 7-7-3."
        assert helper.body("conversations/s/1") == "The garden gate is green."
        assert default.body("conversations/s/2") == ""
        assert default.docs() == {"conversations/s/1"}
        assert [body for _, _, body in _everything(default)] == ["The vault code is 7-7-3."]
        assert "7-7-3" not in " ".join(body for _, _, body in _everything(helper))


def test_text_holding_nul_is_refused_and_what_is_kept_stays(store_config: StoreConfig, tmp_path: Path) -> None:
    with _kept(store_config, tmp_path) as kept:
        store = kept("default")
        store.put("conversations/s/1", "local:alice", "The boat is at Quay 7.")
        with pytest.raises(StoreRefused, match="NUL"):
            store.put("conversations/s/1", "local:alice", "The boat is at\x00 Quay 9.")
        with pytest.raises(StoreRefused, match="NUL"):
            store.put("conversations/s/\x002", "local:alice", "A name with a NUL.")
        assert _everything(store) == [("conversations/s/1", "local:alice", "The boat is at Quay 7.")]


async def test_an_exchange_with_nul_is_refused_to_its_caller_and_memory_goes_on(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    workspace(tmp_path)
    async with running_memory(tmp_path, memory_config(provider="none", watch=3600), store=store_config):
        await memory.remember_now("default", "local:alice", "conversations/s/1", "The kayak is in the boathouse.")
        with pytest.raises(StoreRefused, match="NUL"):
            await memory.remember_now("default", "local:alice", "conversations/s/2", "The raft\x00 is on the lake.")
        assert memory.remember("default", "local:alice", "conversations/s/3", "The canoe\x00 is in the garage.")
        await memory.remember_now("default", "local:alice", "conversations/s/4", "The dinghy is on the beach.")
        assert (await find("default", "kayak", owner="local:alice")).has("boathouse")
        assert (await find("default", "dinghy", owner="local:alice")).has("beach")
        assert not (await find("default", "raft canoe", owner="local:alice")).result.hits


async def test_kept_documents_are_each_agents_and_each_users_through_the_memory_app(
    store_config: StoreConfig, tmp_path: Path
) -> None:
    for agent in ("default", "helper"):
        workspace(tmp_path, agent)
    config = memory_config(provider="none", watch=3600)
    async with running_memory(tmp_path, config, store=store_config):
        await memory.remember_now("default", "local:alice", "conversations/s/1", "user: the vault code is 7-7-3")
        await memory.remember_now("helper", "local:alice", "conversations/s/1", "user: the gate is green")
    async with running_memory(tmp_path, config, store=store_config):  # from the store, after a restart
        read = memory.read_lines
        assert await read("default", "conversations/s/1", owner="local:alice", start=1, count=5) == (
            "user: the vault code is 7-7-3"
        )
        assert await read("helper", "conversations/s/1", owner="local:alice", start=1, count=5) == (
            "user: the gate is green"
        )
        with pytest.raises(LookupError):
            await read("default", "conversations/s/1", owner="local:bob", start=1, count=5)
        assert not (await find("helper", "vault code", owner="local:alice")).result.hits
        assert not (await find("default", "vault code", owner="local:bob")).result.hits


def _kept_db_before_the_store_layer(path: Path) -> None:
    """A kept.db as BeamClaw wrote it before the store layer: the table, user_version 0."""
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(
        "CREATE TABLE kept (doc TEXT PRIMARY KEY, owner TEXT NOT NULL, body TEXT NOT NULL, created REAL NOT NULL);"
    )
    db.executemany(
        "INSERT INTO kept VALUES (?, ?, ?, ?)",
        [
            ("conversations/s/1", "local:alice", "Alice's sister lives in Porto.", 1.0),
            ("notes/bob", "local:bob", "Bob's dog is called Biscuit.", 2.0),
        ],
    )
    db.close()


def test_a_kept_db_from_before_the_store_layer_opens_with_its_documents(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "default" / "kept.db"
    _kept_db_before_the_store_layer(path)
    store = open_remembered(StoreConfig(), path.parent, "default", None)
    try:
        assert _everything(store) == [
            ("conversations/s/1", "local:alice", "Alice's sister lives in Porto."),
            ("notes/bob", "local:bob", "Bob's dog is called Biscuit."),
        ]
        store.put("conversations/s/1", "local:alice", "Alice's sister moved to Braga.")  # an old row replaced
        assert store.body("conversations/s/1") == "Alice's sister moved to Braga."
        assert len(store.docs()) == 2
    finally:
        store.close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)  # a SQLite fact: the version's place
    finally:
        db.close()


async def test_an_old_data_dir_finds_its_kept_conversations(tmp_path: Path) -> None:
    workspace(tmp_path)
    _kept_db_before_the_store_layer(tmp_path / "memory" / "default" / "kept.db")
    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        await eventually(finds("default", "sister Porto", "Porto", owner="local:alice"), "the old kept document")
        assert not (await find("default", "sister Porto", owner="local:bob")).result.hits


async def test_a_kept_db_that_cannot_be_read_stops_the_agents_memory_and_is_left_as_it_is(tmp_path: Path) -> None:
    workspace(tmp_path)
    path = tmp_path / "memory" / "default" / "kept.db"
    path.parent.mkdir(parents=True)
    junk = b"not a database, the owner's only copy perhaps " * 200
    path.write_bytes(junk)
    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        with pytest.raises(memory.MemoryUnavailable, match=r"kept\.db"):
            await memory.search("default", "anything", owner="local:alice", limit=3)
    assert path.read_bytes() == junk
    assert not list(path.parent.glob("kept.db.corrupt-*"))


async def test_exchanges_told_and_not_yet_kept_are_kept_when_the_memory_stops(tmp_path: Path) -> None:
    workspace(tmp_path)
    # The watcher never ticks and no search comes: only the stop keeps what was told.
    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        await memory.sync("default")  # the index runs
        for n in range(3):
            assert memory.remember("default", "local:alice", f"conversations/s/{n}", f"user: locker {n} is green")
        await trio.testing.wait_all_tasks_blocked()
    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        found = await find("default", "locker green", owner="local:alice")
        assert all(found.has(f"locker {n}") for n in range(3))


async def _tell_lockers(agent: str = "default") -> None:
    """Three exchanges told (cast) to the running memory, and not kept yet (no tick comes)."""
    await memory.sync(agent)  # the index runs
    for n in range(3):
        assert memory.remember(agent, "local:alice", f"conversations/s/{n}", f"user: locker {n} is green")
    await trio.testing.wait_all_tasks_blocked()


async def _all_lockers_found(data_dir: Path) -> None:
    async with running_memory(data_dir, memory_config(provider="none", watch=3600)):
        found = await find("default", "locker green", owner="local:alice")
        assert all(found.has(f"locker {n}") for n in range(3))


async def test_exchanges_told_are_kept_when_the_index_is_killed_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace(tmp_path)
    release = threading.Event()
    reading = threading.Event()
    changed_since = RememberedStore.changed_since

    def slow(store: RememberedStore, after: int) -> list[Kept]:
        reading.set()
        release.wait(30)  # busy past its stop's grace: the kill comes meanwhile
        return changed_since(store, after)

    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        await _tell_lockers()
        pid = sv.whereis(index_name("default"))
        assert pid is not None
        monkeypatch.setattr(RememberedStore, "changed_since", slow)
        sv.send(pid, Notified(CHANNEL, "default"))  # another node kept one: the index reads them
        await trio.to_thread.run_sync(reading.wait)
        sv.kill(pid)  # terminate does not run
        release.set()

        async def gone() -> bool:
            return sv.whereis(index_name("default")) is None

        await eventually(gone, "the index gone")
        monkeypatch.setattr(RememberedStore, "changed_since", changed_since)
    await _all_lockers_found(tmp_path)


async def test_exchanges_whose_keeping_failed_are_kept_at_the_crash_it_causes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace(tmp_path)
    put_many = RememberedStore.put_many
    failures = []

    def failing_once(store: RememberedStore, documents: list[tuple[str, str, str]]) -> None:
        if not failures:
            failures.append(len(documents))
            raise StoreUnavailable("the database is restarting")
        put_many(store, documents)

    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        await _tell_lockers()
        pid = sv.whereis(index_name("default"))
        monkeypatch.setattr(RememberedStore, "put_many", failing_once)
        sv.cast(index_name("default"), Sync())  # the watcher's tick: the keep fails, the index crashes

        async def gone() -> bool:
            return sv.whereis(index_name("default")) != pid

        await eventually(gone, "the index crashed")
        monkeypatch.setattr(RememberedStore, "put_many", put_many)
    assert failures == [3]
    await _all_lockers_found(tmp_path)


async def test_a_store_that_hangs_at_the_stop_neither_freezes_the_loop_nor_holds_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace(tmp_path)
    monkeypatch.setattr(index_module, "EXIT_KEEP_SECONDS", 0.2)
    release = threading.Event()
    unfreeze = threading.Timer(30, release.set)  # if the loop's own thread waits for the store
    unfreeze.daemon = True
    unfreeze.start()
    put_many = RememberedStore.put_many

    def hanging(store: RememberedStore, documents: list[tuple[str, str, str]]) -> None:
        release.wait()
        put_many(store, documents)

    async with running_memory(tmp_path, memory_config(provider="none", watch=3600)):
        await _tell_lockers()
        monkeypatch.setattr(RememberedStore, "put_many", hanging)
    assert not release.is_set()  # stopped while the store still hung
    unfreeze.cancel()
    release.set()
